package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/serve/internal/servetest"
)

// damagedIndex is the fixture with some keywords unreadable, the way the
// index answers when a table under the served build is damaged.
type damagedIndex struct {
	*servetest.Index
	mu  sync.Mutex
	bad map[string]bool // keywords whose lookup meets the damage
	why string          // Info's Damaged while bad is not empty
}

func (d *damagedIndex) Lookup(ctx context.Context, country, keyword string) (kw.Entry, error) {
	d.mu.Lock()
	bad := d.bad[keyword]
	d.mu.Unlock()
	if bad {
		return kw.Entry{}, fmt.Errorf("cannot read %s %q from index build b1: %w: pebble: checksum mismatch", country, keyword, kw.ErrIndexDamaged)
	}
	return d.Index.Lookup(ctx, country, keyword)
}

func (d *damagedIndex) Info() (kw.IndexInfo, bool) {
	info, ok := d.Index.Info()
	d.mu.Lock()
	if len(d.bad) > 0 {
		info.Damaged = d.why
	}
	d.mu.Unlock()
	return info, ok
}

func (d *damagedIndex) repair() {
	d.mu.Lock()
	d.bad = nil
	d.mu.Unlock()
}

// TestDamagedIndex: a lookup that meets a damaged index answers 503
// index_unavailable on every route (never a 500), is not counted against
// the allowance, is counted in kwdata_index_damaged_lookups_total, and is
// not logged per request; /readyz and kwdata_index_ready say not ready
// while the served build is damaged, and ready again once it is not.
// Keywords outside the damage still answer.
func TestDamagedIndex(t *testing.T) {
	log := &syncBuffer{}
	access := &fakeAccess{}
	idx := &damagedIndex{Index: servetest.NewIndex(t), bad: map[string]bool{"running shoes": true, "laufschuhe": true},
		why: "table 20261122T030000Z/db/000004.sst is damaged: checksum mismatch"}
	s := New(Options{
		Index:  idx,
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Access: access,
	})

	for _, target := range []string{"/v1/keyword?q=running+shoes", "/v1/keyword?q=laufschuhe&country=de", "/keyword?q=running+shoes"} {
		w := do(t, s, "GET", target, nil)
		if w.Code != 503 {
			t.Fatalf("GET %s: status %d, want 503: %s", target, w.Code, w.Body)
		}
		if w.Header().Get("Retry-After") == "" {
			t.Errorf("GET %s: 503 without Retry-After", target)
		}
		if strings.HasPrefix(target, "/v1/") {
			checkProblem(t, w, CodeIndexUnavailable)
			if strings.Contains(w.Body.String(), "checksum") {
				t.Errorf("GET %s: the cause reached the client: %s", target, w.Body)
			}
		}
	}
	if w := do(t, s, "GET", "/v1/keyword?q=trail+shoes", nil); w.Code != 200 {
		t.Errorf("a keyword outside the damage: status %d, want 200", w.Code)
	}

	r := httptest.NewRequest("POST", "/v1/keywords", strings.NewReader(`{"country":"us","keywords":["running shoes","trail shoes"]}`))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	var bulk struct {
		Results []struct {
			Status int `json:"status"`
			Error  struct {
				Code string `json:"code"`
			} `json:"error"`
		} `json:"results"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &bulk); err != nil || w.Code != 200 || len(bulk.Results) != 2 {
		t.Fatalf("bulk: status %d, %v: %s", w.Code, err, w.Body)
	}
	if r := bulk.Results[0]; r.Status != 503 || r.Error.Code != CodeIndexUnavailable {
		t.Errorf("bulk item in the damage: %+v, want 503 %s", r, CodeIndexUnavailable)
	}
	if bulk.Results[1].Status != 200 {
		t.Errorf("bulk item outside the damage: status %d, want 200", bulk.Results[1].Status)
	}
	// One lookup counted: trail shoes alone, then its bulk twin.
	if want := []int{1, 1}; fmt.Sprint(access.committed) != fmt.Sprint(want) {
		t.Errorf("counted %v, want %v (refused lookups are never counted)", access.committed, want)
	}

	w = do(t, s, "GET", "/readyz", nil)
	if w.Code != 503 {
		t.Fatalf("/readyz while damaged: status %d, want 503", w.Code)
	}
	checkProblem(t, w, CodeIndexUnavailable)
	if !strings.Contains(w.Body.String(), "000004.sst") {
		t.Errorf("/readyz does not say what is damaged: %s", w.Body)
	}
	metrics := do(t, s, "GET", "/metrics", nil).Body.String()
	if got := metricValue(t, metrics, "kwdata_index_damaged_lookups_total"); got != 4 {
		t.Errorf("kwdata_index_damaged_lookups_total = %v, want 4 (two API lookups, a page, a bulk item)", got)
	}
	if got := metricValue(t, metrics, "kwdata_index_ready"); got != 0 {
		t.Errorf("kwdata_index_ready = %v while damaged, want 0", got)
	}
	if strings.Contains(log.String(), "level=ERROR") || strings.Contains(log.String(), "level=WARN") {
		t.Errorf("damaged lookups were logged per request (the index logs the damage once):\n%s", log)
	}

	idx.repair()
	if w := do(t, s, "GET", "/readyz", nil); w.Code != 200 {
		t.Errorf("/readyz after the repair: status %d, want 200", w.Code)
	}
	if w := do(t, s, "GET", "/v1/keyword?q=running+shoes", nil); w.Code != 200 {
		t.Errorf("lookup after the repair: status %d, want 200", w.Code)
	}
	metrics = do(t, s, "GET", "/metrics", nil).Body.String()
	if got := metricValue(t, metrics, "kwdata_index_ready"); got != 1 {
		t.Errorf("kwdata_index_ready = %v after the repair, want 1", got)
	}
	if got := metricValue(t, metrics, "kwdata_index_damaged_lookups_total"); got != 4 {
		t.Errorf("kwdata_index_damaged_lookups_total = %v after the repair, want still 4", got)
	}
}
