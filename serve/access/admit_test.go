package access

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestAdmitNothing: Admit of 0 lookups authenticates without consulting or
// touching an allowance, so a spent allowance is no refusal.
func TestAdmitNothing(t *testing.T) {
	reg := prometheus.NewRegistry()
	clk := newClock(t, "2026-11-22T12:00:00Z")
	s := openStore(t, t.TempDir(), clk, func(o *Options) {
		o.Metrics = NewMetrics(reg)
		o.RegisteredPerMonth = 1
	})
	key, _ := mustCreate(t, s, Registered, time.Time{})
	revoked, rec := mustCreate(t, s, Registered, time.Time{})
	if err := s.RevokeKey(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	c := mustIdentify(t, s, key, mustAddr(t, "192.0.2.1"))
	if got := use(t, s, c, 1); got != 1 {
		t.Fatalf("admitted %d, want 1", got)
	}
	admit := func(key string) error {
		r, _ := http.NewRequest("POST", "/v1/keywords", nil)
		if key != "" {
			r.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := s.Admit(ctx, r, mustAddr(t, "192.0.2.1"), 0)
		if err == nil {
			h := http.Header{}
			res.Commit(1, h)
			res.Cancel()
			if len(h) != 0 {
				t.Errorf("an empty reservation set %v", h)
			}
		}
		return err
	}
	for _, k := range []string{revoked, "kwd_nope"} {
		if err := admit(k); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Admit(0) with a bad key: %v, want ErrInvalidKey", err)
		}
	}
	for _, k := range []string{key, ""} {
		if err := admit(k); err != nil {
			t.Errorf("Admit(0) with a spent allowance: %v", err)
		}
	}
	if got := remaining(t, s, c); got != 0 {
		t.Errorf("remaining %d, want 0", got)
	}
	if got := gathered(t, reg, "kwdata_lookups_total", Registered); got != 1 {
		t.Errorf("lookups %v, want 1", got)
	}
	if got := gathered(t, reg, "kwdata_quota_refusals_total", Registered); got != 1 {
		t.Errorf("refusals %v, want 1 (remaining's probe, not Admit(0))", got)
	}
}
