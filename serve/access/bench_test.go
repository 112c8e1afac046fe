package access

import (
	"net/http"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkReserveCommit measures the counted path of one lookup: Identify,
// Reserve, Commit, in parallel. Allowances are set high enough never to
// refuse, so every iteration counts.
func BenchmarkReserveCommit(b *testing.B) {
	clk := newClock(b, "2026-11-22T12:00:00Z")
	s := openStore(b, b.TempDir(), clk, func(o *Options) {
		o.AnonymousPerDay = 1 << 60
		o.RegisteredPerMonth = 1 << 60
		o.FlushInterval = time.Second // the flusher runs as in production
	})
	regKey, _ := mustCreate(b, s, Registered, time.Time{})
	paidKey, _ := mustCreate(b, s, Paid, time.Time{})

	// Clients spread over many addresses, as a server sees them.
	addrs := make([]netip.Addr, 1024)
	for i := range addrs {
		addrs[i] = netip.AddrFrom4([4]byte{198, 51, byte(i >> 8), byte(i)})
	}
	for _, bc := range []struct {
		name    string
		key     string
		headers bool // set the RateLimit fields, as the server does
	}{
		{"anonymous", "", false},
		{"registered", regKey, false},
		{"paid", paidKey, false},
		{"anonymous+headers", "", true},
		{"registered+headers", regKey, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var next atomic.Uint32
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := next.Add(7919)
				var h http.Header
				if bc.headers {
					h = make(http.Header, 2)
				}
				for pb.Next() {
					i++
					c, err := s.Identify(ctx, bc.key, addrs[i%uint32(len(addrs))])
					if err != nil {
						b.Fatal(err)
					}
					r, err := s.Reserve(ctx, c, 1)
					if err != nil {
						b.Fatal(err)
					}
					r.Commit(1, h)
				}
			})
		})
	}
}
