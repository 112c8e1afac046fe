package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/kwdata/kwdata/internal/testservers"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/serve/agent"
	"github.com/kwdata/kwdata/serve/internal/servetest"
)

// maxKeyword returns the i-th keyword of the largest kind an index can
// hold: 80 characters, each written as a 6-byte \u003c escape in JSON.
func maxKeyword(i int) string {
	return strings.Repeat("<", kw.MaxKeywordChars-4) + fmt.Sprintf("%04d", i)
}

// newMaxIndex is an index of 100 US keywords whose records are as large as
// the API's limits let a record be: every text 80 characters of the costliest
// escaping, 12 months, 10 related keywords, volumes of 19 digits.
func newMaxIndex(tb testing.TB) *servetest.Index {
	tb.Helper()
	f := servetest.NewIndex(tb)
	f.PanicOn = ""
	for i := range MaxBulkKeywords {
		rel := make([]kw.RelatedKeyword, 10)
		for j := range rel {
			rel[j] = kw.RelatedKeyword{Keyword: maxKeyword(1000 + j), Volume: servetest.I64(1e18), CPCMicros: servetest.I64(1e15), Overlap: 20, SameIntent: true}
		}
		trend := servetest.Months(tb, "2026-10", 12, 1e18)
		f.Add(kw.Entry{
			Keyword: maxKeyword(i), Country: "US", Volume: servetest.I64(1e18), VolumeRange: strings.Repeat("<", 32),
			CPCMicros: servetest.I64(1e15), Competition: servetest.F64(0.99), Intent: maxKeyword(2000 + i), Trend: trend, Related: rel,
		})
	}
	return f
}

// costlyBodies are the POST /mcp bodies that cause the largest answers:
// the bulk tool over the largest records, the bulk tool echoing keywords
// it refuses, and errors that quote the request, each within agent.MaxMCPBody
// and made of the character whose escaping grows most (< becomes \u003c in
// JSON, \\u003c once more in the text content).
func costlyBodies(tb testing.TB) map[string]string {
	tb.Helper()
	call := func(tool string, args any) string {
		a, err := json.Marshal(args)
		if err != nil {
			tb.Fatal(err)
		}
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + string(a) + `}}`
	}
	// fill pads s with < up to n bytes of JSON; json.Marshal would write
	// each < as six bytes, so the padding goes in afterwards.
	fill := func(n int) string { return strings.Repeat("<", n) }
	found := make([]string, MaxBulkKeywords)
	for i := range found {
		found[i] = maxKeyword(i)
	}
	long := make([]string, MaxBulkKeywords)
	for i := range long {
		long[i] = "@" // replaced by padding below
	}
	room := agent.MaxMCPBody - len(call("keyword_lookup_bulk", map[string]any{"keywords": long})) - 64
	longBody := strings.ReplaceAll(call("keyword_lookup_bulk", map[string]any{"keywords": long}), `"@"`, `"`+fill(room/MaxBulkKeywords)+`"`)
	oneBody := strings.Replace(call("keyword_lookup_bulk", map[string]any{"keywords": []string{"@"}}), `"@"`, `"`+fill(agent.MaxMCPBody-200)+`"`, 1)
	return map[string]string{
		"tools/list":                     `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		"initialize":                     `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
		"bulk of the largest records":    strings.ReplaceAll(call("keyword_lookup_bulk", map[string]any{"keywords": found}), `\u003c`, "<"),
		"bulk echoing 100 long keywords": longBody,
		"bulk echoing one long keyword":  oneBody,
		"params the SDK cannot decode":   `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["` + fill(agent.MaxMCPBody-100) + `"]}`,
		"unknown tool of 64 KiB":         `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + fill(agent.MaxMCPBody-100) + `"}}`,
		"unknown argument of 64 KiB":     `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"keyword_lookup","arguments":{"` + fill(agent.MaxMCPBody-120) + `":1}}}`,
		"unknown method of 64 KiB":       `{"jsonrpc":"2.0","id":1,"method":"` + fill(agent.MaxMCPBody-100) + `"}`,
		"keyword of 64 KiB":              `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"keyword_lookup","arguments":{"keyword":"` + fill(agent.MaxMCPBody-120) + `"}}}`,
		"string id of 64 KiB":            `{"jsonrpc":"2.0","id":"` + fill(agent.MaxMCPBody-100) + `","method":"ping"}`,
	}
}

// TestMCPAnswerBound: no request the endpoint accepts causes an answer
// larger than MaxMCPAnswer. The largest comes from keyword_lookup_bulk
// over records of the largest size, about 1.6 MB, 25 times the body limit
// and a hundredth of what one batch answered before batches were refused.
func TestMCPAnswerBound(t *testing.T) {
	ds := newDemoServer(t)
	ds.index = newMaxIndex(t)
	ds.Server = New(Options{Index: ds.index, Access: ds.access, Logger: slog.New(slog.DiscardHandler)})
	largest, largestName := 0, ""
	for name, body := range costlyBodies(t) {
		if len(body) > agent.MaxMCPBody {
			t.Fatalf("%s: body of %d bytes is over the limit; the case is wrong", name, len(body))
		}
		w := mcpPost(t, ds, body, nil)
		if w.Code >= 500 {
			t.Errorf("%s: status %d: %.300s", name, w.Code, w.Body)
		}
		n := w.Body.Len()
		t.Logf("%-32s body %6d bytes → %d %8d bytes (×%.1f)", name, len(body), w.Code, n, float64(n)/float64(len(body)))
		if n > MaxMCPAnswer {
			t.Errorf("%s: answer of %d bytes exceeds MaxMCPAnswer (%d)", name, n, MaxMCPAnswer)
		}
		if n > largest {
			largest, largestName = n, name
		}
	}
	// The bulk case must really have answered 100 of the largest records,
	// or the bound above proves nothing.
	w := mcpPost(t, ds, costlyBodies(t)["bulk of the largest records"], nil)
	var resp struct {
		Result toolResult `json:"result"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	var doc bulkDoc
	if err := json.Unmarshal(resp.Result.StructuredContent, &doc); err != nil || len(doc.Results) != MaxBulkKeywords {
		t.Fatalf("bulk of the largest records: %v, %d results", err, len(doc.Results))
	}
	for _, r := range doc.Results {
		if r.Status != 200 || len(r.Record.Related) != 10 || len(r.Record.Trend) != 12 {
			t.Fatalf("result %+v is not a largest record", r)
		}
	}
	if largestName != "bulk of the largest records" || largest < 1<<20 {
		t.Errorf("the largest answer is %q of %d bytes; the bulk of the largest records should lead", largestName, largest)
	}
	t.Logf("largest answer: %s, %d bytes; bound %d", largestName, largest, MaxMCPAnswer)
}

// blockingIndex holds every lookup until release is closed, and counts
// how many wait at once.
type blockingIndex struct {
	*servetest.Index
	release           chan struct{}
	inFlight, maxSeen atomic.Int64
}

func (b *blockingIndex) Lookup(ctx context.Context, country, keyword string) (kw.Entry, error) {
	n := b.inFlight.Add(1)
	defer b.inFlight.Add(-1)
	for {
		m := b.maxSeen.Load()
		if n <= m || b.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	<-b.release
	return b.Index.Lookup(ctx, country, keyword)
}

// TestMCPConcurrencyBound: however many POSTs arrive at once, at most
// cap(slots) are inside the SDK; the rest wait their turn and are then
// answered.
func TestMCPConcurrencyBound(t *testing.T) {
	idx := &blockingIndex{Index: servetest.NewDemoIndex(t), release: make(chan struct{})}
	s := New(Options{Index: idx, Logger: slog.New(slog.DiscardHandler)})
	slots := s.agent.Slots()
	const call = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"keyword_lookup","arguments":{"keyword":"running shoes"}}}`
	var wg sync.WaitGroup
	codes := make([]int, 3*slots)
	for i := range codes {
		wg.Go(func() { codes[i] = mcpPost(t, s, call, nil).Code })
	}
	// Once every slot is taken and every other request waits for one, no
	// request can slip past the bound any more.
	testservers.Poll(10*time.Second, func() bool {
		return idx.inFlight.Load() >= int64(slots) && s.agent.Waiting() >= int64(len(codes)-slots)
	})
	if got := idx.maxSeen.Load(); got != int64(slots) {
		t.Errorf("%d tool calls ran at once, want the %d slots", got, slots)
	}
	close(idx.release)
	wg.Wait()
	for i, c := range codes {
		if c != 200 {
			t.Errorf("request %d: status %d", i, c)
		}
	}
}
