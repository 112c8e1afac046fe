package serve

import (
	"context"
	"net/http"
	"net/netip"
)

// noAccess admits everything and counts nothing: the server before access
// tiers exist.
type noAccess struct{}

func (noAccess) Admit(context.Context, *http.Request, netip.Addr, int) (Ticket, error) {
	return noTicket{}, nil
}

type noTicket struct{}

func (noTicket) Commit(int, http.Header) {}

func (noTicket) Cancel() {}
