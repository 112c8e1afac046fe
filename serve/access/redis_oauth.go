package access

import (
	"context"
	"net/netip"

	"github.com/kwdata/kwdata/serve/oauth"
)

// ForOAuth returns the store as the authorization server keeps its
// clients, codes and tokens in it (oauth.Store): in Redis, so that a code
// issued by one server is redeemed on another and a revocation holds on
// all. Each rule is one optimistic transaction, so two servers redeeming
// one code at once issue one chain.
func (s *RedisStore) ForOAuth() oauth.Store { return oauthStore{s} }

func (s *RedisStore) open() error {
	if s.closed.Load() {
		return ErrClosed
	}
	return nil
}

func (s *RedisStore) reserveClient(ctx context.Context, from netip.Addr) (*Reservation, error) {
	return s.reserveCounter(ctx, ckey{kind: kindClient, addr: GroupAddr(from)}, s.opt.Now(), 1,
		s.opt.OAuthClientsPerAddressPerDay, policyRegistrations, "count the client registration", oauth.ErrTooManyClients)
}
