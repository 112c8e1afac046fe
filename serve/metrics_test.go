package serve

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func TestIndexInfoMetric(t *testing.T) {
	idx := newFakeIndex(t)
	reg := NewRegistry()
	reg.MustRegister(IndexInfoCollector(idx, 3))
	h := New(Options{Index: idx, Registry: reg})
	scrape := func() string {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		if w.Code != 200 {
			t.Fatalf("GET /metrics: status %d", w.Code)
		}
		return w.Body.String()
	}
	body := scrape()
	for _, want := range []string{
		`kwdata_index_info{build="20261122T030000Z",data_date="2026-11-21",format_version="3"} 1`,
		"kwdata_index_ready 1",
		"go_goroutines ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}

	// A swapped index shows at the next scrape, as one series.
	idx.mu.Lock()
	idx.info.Version, idx.info.DataDate = "20261123T030000Z", "2026-11-22"
	idx.mu.Unlock()
	body = scrape()
	if !strings.Contains(body, `kwdata_index_info{build="20261123T030000Z",data_date="2026-11-22",format_version="3"} 1`) ||
		strings.Count(body, "kwdata_index_info{") != 1 {
		t.Errorf("after a swap, metrics have:\n%s", grepLines(body, "kwdata_index_info"))
	}

	idx.mu.Lock()
	idx.ok = false
	idx.mu.Unlock()
	if body = scrape(); strings.Contains(body, "kwdata_index_info{") {
		t.Errorf("without an index, metrics have:\n%s", grepLines(body, "kwdata_index_info"))
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
