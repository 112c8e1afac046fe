package serve

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kwdata/kwdata/serve/internal/servetest"
)

func TestIndexInfoMetric(t *testing.T) {
	idx := servetest.NewIndex(t)
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
	idx.Mu.Lock()
	idx.IndexInfo.Version, idx.IndexInfo.DataDate = "20261123T030000Z", "2026-11-22"
	idx.Mu.Unlock()
	body = scrape()
	if !strings.Contains(body, `kwdata_index_info{build="20261123T030000Z",data_date="2026-11-22",format_version="3"} 1`) ||
		strings.Count(body, "kwdata_index_info{") != 1 {
		t.Errorf("after a swap, metrics have:\n%s", grepLines(body, "kwdata_index_info"))
	}

	idx.Mu.Lock()
	idx.OK = false
	idx.Mu.Unlock()
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

// TestLatencyByStatusClass: the latency histogram is labelled by route and
// status class, so refusals and answers of one route are told apart while
// the number of series stays small.
func TestLatencyByStatusClass(t *testing.T) {
	ts := newTestServer(t)
	do(t, ts, "GET", "/v1/keyword?q=running+shoes", nil)
	do(t, ts, "GET", "/v1/keyword?q=running+shoes", nil)
	do(t, ts, "GET", "/v1/keyword?q=", nil)
	do(t, ts, "GET", "/v1/keyword?q=no+such+keyword", nil)
	body := do(t, ts, "GET", "/metrics", nil).Body.String()
	for _, want := range []string{
		`kwdata_http_request_duration_seconds_count{route="/v1/keyword",status="2xx"} 2`,
		`kwdata_http_request_duration_seconds_count{route="/v1/keyword",status="4xx"} 2`,
		`kwdata_http_requests_total{code="400",route="/v1/keyword"} 1`,
		`kwdata_http_requests_total{code="404",route="/v1/keyword"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q; have:\n%s", want, grepLines(body, "/v1/keyword"))
		}
	}
}

func TestStatusClass(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   string
	}{
		{200, "2xx"}, {204, "2xx"}, {304, "3xx"}, {404, "4xx"}, {429, "4xx"}, {503, "5xx"}, {0, "other"}, {999, "other"},
	} {
		if got := statusClass(tc.status); got != tc.want {
			t.Errorf("statusClass(%d) = %q, want %q", tc.status, got, tc.want)
		}
	}
}

// TestPipelineLastSuccess: the gauge shows the newest successful run, and
// the history is read at most once every 30 seconds of scrapes.
func TestPipelineLastSuccess(t *testing.T) {
	ended := time.Date(2026, 11, 21, 3, 41, 12, 500e6, time.UTC)
	clock := ended.Add(time.Hour)
	var reads int
	var result time.Time
	var readErr error
	reg := NewRegistry()
	reg.MustRegister(PipelineLastSuccess(func() (time.Time, error) { reads++; return result, readErr },
		func() time.Time { return clock }, nil))
	h := New(Options{Index: servetest.NewIndex(t), Registry: reg})
	value := func() float64 {
		t.Helper()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		return metricValue(t, w.Body.String(), "kwdata_pipeline_last_success_timestamp_seconds")
	}

	for _, step := range []struct {
		name    string
		advance time.Duration
		result  time.Time
		err     error
		want    float64
		reads   int
	}{
		{"no run succeeded yet", 0, time.Time{}, nil, 0, 1},
		{"a run succeeds: the cached value stays for 30 s", 29 * time.Second, ended, nil, 0, 1},
		{"after 30 s the history is read again", time.Second, ended, nil, 1795232472.5, 2},
		{"a failed read keeps the value", 30 * time.Second, time.Time{}, errors.New("disk on fire"), 1795232472.5, 3},
	} {
		clock = clock.Add(step.advance)
		result, readErr = step.result, step.err
		if got := value(); got != step.want || reads != step.reads {
			t.Errorf("%s: value %v after %d reads, want %v after %d", step.name, got, reads, step.want, step.reads)
		}
	}
}
