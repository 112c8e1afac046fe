package access

import (
	"testing"
	"time"

	"github.com/kwdata/kwdata/internal/testservers"
	"github.com/kwdata/kwdata/serve/oauth"
)

// BenchmarkSignedIn is the cost a signed-in page view or an agent's call
// adds before its lookups: reading the session or the access token, and
// admitting one lookup on the account by id.
func BenchmarkSignedIn(b *testing.B) {
	run := func(b *testing.B, s sessionStore, o oauth.Store) {
		_, rec := mustCreate(b, s, Paid, time.Time{})
		raw := mustSession(b, s, rec.ID)
		g := oauth.Grant{Account: rec.ID, ClientID: "c", Resource: "r"}
		code, err := o.NewCode(ctx, oauth.CodeGrant{Grant: g})
		if err != nil {
			b.Fatal(err)
		}
		tok, err := o.NewTokens(ctx, g, code)
		if err != nil {
			b.Fatal(err)
		}
		client := mustAddr(b, "192.0.2.1")
		b.Run("Session", func(b *testing.B) {
			for b.Loop() {
				if _, err := s.Session(ctx, raw); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("Token", func(b *testing.B) {
			for b.Loop() {
				if _, err := o.Token(ctx, tok.Access); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("AdmitAccount", func(b *testing.B) {
			for b.Loop() {
				r, err := s.AdmitAccount(ctx, rec.ID, client, 1)
				if err != nil {
					b.Fatal(err)
				}
				r.Commit(1, nil)
			}
		})
	}
	b.Run("embedded", func(b *testing.B) {
		s := openStore(b, b.TempDir(), newClock(b, "2026-11-22T12:00:00Z"))
		run(b, s, s.ForOAuth())
	})
	b.Run("redis", func(b *testing.B) {
		rd := testservers.StartRedis(b)
		s := openRedisStores(b, rd, 1, Options{FlushInterval: time.Hour})[0]
		run(b, s, s.ForOAuth())
	})
}
