package serve

import (
	"encoding/json"
	"testing"
)

// TestBulkPerEntryDataDate: during a swap the lookups of one request may
// come from two builds; each record carries its own build's date, never the
// date read before the lookups.
func TestBulkPerEntryDataDate(t *testing.T) {
	ts := newTestServer(t)
	// Info still describes the old build (2026-11-21); two entries come
	// from the new one.
	for _, k := range []string{"running shoes", "trail shoes"} {
		e := ts.index.Entries[[2]string{"US", k}]
		e.DataDate = "2026-11-22"
		ts.index.Add(e)
	}
	want := map[string]string{"running shoes": "2026-11-22", "trail shoes": "2026-11-22", "free shoes": "2026-11-21"}
	body := `{"country":"us","keywords":["running shoes","trail shoes","free shoes","nope nope"]}`

	check := func(t *testing.T, doc bulkDoc) {
		t.Helper()
		if doc.Updated != "2026-11-22" {
			t.Errorf("top-level updated %q, want the newest record's 2026-11-22", doc.Updated)
		}
		for _, r := range doc.Results {
			if r.Record == nil {
				continue
			}
			if r.Record.Updated != want[r.Query] {
				t.Errorf("%q: updated %q, want %q", r.Query, r.Record.Updated, want[r.Query])
			}
		}
		if len(doc.Results) != 4 || doc.Results[3].Status != 404 {
			t.Errorf("results %+v", doc.Results)
		}
	}

	t.Run("POST /v1/keywords", func(t *testing.T) {
		w := post(t, ts, "/v1/keywords", body, nil)
		if w.Code != 200 {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		var doc bulkDoc
		if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		check(t, doc)
	})
	t.Run("keyword_lookup_bulk", func(t *testing.T) {
		w := mcpPost(t, ts, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"keyword_lookup_bulk","arguments":`+body+`}}`, nil)
		var resp struct {
			Result struct {
				StructuredContent bulkDoc `json:"structuredContent"`
				IsError           bool    `json:"isError"`
			} `json:"result"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil || resp.Result.IsError {
			t.Fatalf("answer %s (%v)", w.Body, err)
		}
		check(t, resp.Result.StructuredContent)
	})
	t.Run("no record", func(t *testing.T) {
		w := post(t, ts, "/v1/keywords", `{"keywords":["nope nope"]}`, nil)
		var doc bulkDoc
		if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Updated != "2026-11-21" {
			t.Errorf("updated %q without records, want the index's 2026-11-21", doc.Updated)
		}
	})
}
