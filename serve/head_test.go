package serve

import (
	"strings"
	"testing"

	"github.com/kwdata/kwdata/kw"
)

// TestHeadCountsLikeGet pins what docs/API.md promises API clients: a HEAD
// is answered and counted like the GET it stands for, and a JSON number
// drops trailing zeros (competition 0.50 is sent as 0.5, a CPC of 2.00 as 2).
func TestHeadCountsLikeGet(t *testing.T) {
	ts := newTestServer(t)
	w := do(t, ts, "HEAD", "/v1/keyword?q=trail+shoes", nil)
	if w.Code != 200 || w.Body.Len() != 0 {
		t.Fatalf("HEAD: status %d, %d body bytes", w.Code, w.Body.Len())
	}
	if got := mustJSON(ts.access.committed); got != "[1]" {
		t.Errorf("HEAD committed %s, want [1]", got)
	}
	w = do(t, ts, "GET", "/v1/keyword?q=trail+shoes", nil)
	if body := w.Body.String(); !strings.Contains(body, `"competition":0.5,`) {
		t.Errorf("competition 0.50 not sent as 0.5: %s", body)
	}
	ts.index.Add(kwEntryWithCents(ts.index.Entries[[2]string{"US", "trail shoes"}], 2_000_000))
	if body := do(t, ts, "GET", "/v1/keyword?q=trail+shoes", nil).Body.String(); !strings.Contains(body, `"cpc":2,`) {
		t.Errorf("cpc 2.00 not sent as 2: %s", body)
	}
	if got := mustJSON(ts.access.committed); got != "[1,1,1]" {
		t.Errorf("committed %s, want [1,1]", got)
	}
}

func kwEntryWithCents(e kw.Entry, micros int64) kw.Entry {
	e.CPCMicros = &micros
	return e
}
