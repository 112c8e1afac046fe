package access

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestMetricsByTier(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	clk := newClock(t, "2026-11-22T12:00:00Z")
	s := openStore(t, t.TempDir(), clk, func(o *Options) {
		o.Metrics = m
		o.AnonymousPerDay, o.RegisteredPerMonth = 3, 2
	})
	anon := Caller{Tier: Anonymous, Addr: GroupAddr(mustAddr(t, "192.0.2.1"))}
	regKey, _ := mustCreate(t, s, Registered, time.Time{})
	paidKey, _ := mustCreate(t, s, Paid, clk.Now().Add(48*time.Hour))
	registered := mustIdentify(t, s, regKey, mustAddr(t, "192.0.2.2"))
	paid := mustIdentify(t, s, paidKey, mustAddr(t, "192.0.2.3"))

	if got := use(t, s, anon, 5); got != 3 { // stops at the first refusal
		t.Fatalf("anonymous admitted %d, want 3", got)
	}
	if got := use(t, s, registered, 3); got != 2 {
		t.Fatalf("registered admitted %d, want 2", got)
	}
	use(t, s, paid, 4)
	// Cancelled and partly committed reservations count what was answered.
	r, err := s.Reserve(context.Background(), paid, 10)
	if err != nil {
		t.Fatal(err)
	}
	r.Commit(6, nil)
	r.Commit(6, nil) // no-op
	r, err = s.Reserve(context.Background(), paid, 10)
	if err != nil {
		t.Fatal(err)
	}
	r.Cancel()

	for _, tt := range []struct {
		tier              Tier
		lookups, refusals float64
	}{
		{Anonymous, 3, 1},
		{Registered, 2, 1},
		{Paid, 10, 0},
	} {
		if got := gathered(t, reg, "kwdata_lookups_total", tt.tier); got != tt.lookups {
			t.Errorf("kwdata_lookups_total{tier=%q} = %v, want %v", tt.tier, got, tt.lookups)
		}
		if got := gathered(t, reg, "kwdata_quota_refusals_total", tt.tier); got != tt.refusals {
			t.Errorf("kwdata_quota_refusals_total{tier=%q} = %v, want %v", tt.tier, got, tt.refusals)
		}
	}
}

// gathered returns the value of counter name{tier} in reg, failing when the
// series is missing.
func gathered(tb testing.TB, reg *prometheus.Registry, name string, tier Tier) float64 {
	tb.Helper()
	families, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "tier" && l.GetValue() == string(tier) {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	tb.Fatalf("no series %s{tier=%q}", name, tier)
	return 0
}
