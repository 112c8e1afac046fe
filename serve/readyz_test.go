package serve

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// readierAccess is a fakeAccess whose storage can fail.
type readierAccess struct {
	*fakeAccess
	err error
}

func (a readierAccess) Ready() error { return a.err }

// TestReadyzFollowsAccess: an Access whose storage failed under the
// server (its folder deleted) makes /readyz 503 not_ready, without an
// error line per probe; lookups are still answered.
func TestReadyzFollowsAccess(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		status int
	}{
		{"ready", nil, 200},
		{"folder gone", errors.New("access folder /var/lib/kwdata/access is not the one opened"), 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := newDemoServer(t)
			log := &syncBuffer{}
			srv := New(Options{Index: ds.index, Access: readierAccess{ds.access, tc.err},
				Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelInfo}))})
			for range 3 {
				w := do(t, srv, http.MethodGet, "/readyz", nil)
				if w.Code != tc.status {
					t.Fatalf("/readyz %d, want %d: %s", w.Code, tc.status, w.Body)
				}
				if tc.status == 503 {
					checkProblem(t, w, CodeNotReady)
					if strings.Contains(w.Body.String(), "/var/lib") {
						t.Errorf("the cause reached the client: %s", w.Body)
					}
				}
			}
			if strings.Contains(log.String(), "level=ERROR") {
				t.Errorf("readiness probes logged errors:\n%s", log)
			}
			if w := do(t, srv, http.MethodGet, "/v1/keyword?q=running+shoes", nil); w.Code != 200 {
				t.Errorf("lookup while not ready: %d", w.Code)
			}
		})
	}
}
