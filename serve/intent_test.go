package serve

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// intentDoc is the GET /v1/intent document as encoding/json sees it.
type intentDoc struct {
	Keyword     string `json:"keyword"`
	Leader      string `json:"leader"`
	Country     string `json:"country"`
	Updated     string `json:"updated"`
	Size        int64  `json:"size"`
	TotalVolume int64  `json:"total_volume"`
	Members     []struct {
		Keyword string   `json:"keyword"`
		Volume  *int64   `json:"volume"`
		CPC     *float64 `json:"cpc"`
		Overlap string   `json:"overlap"`
	} `json:"members"`
}

func TestIntentHandler(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		target     string
		wantStatus int
		wantCode   string
		check      func(t *testing.T, d intentDoc)
		admits     string // the Admit calls, as fmt prints them
		committed  string
	}{
		{name: "member", target: "/v1/intent?q=Running+Shoe&country=us", wantStatus: 200, admits: "[1]", committed: "[1]",
			check: func(t *testing.T, d intentDoc) {
				if d.Keyword != "running shoe" || d.Leader != "running shoes" || d.Country != "US" || d.Updated != "2026-11-21" || d.Size != 4 || d.TotalVolume != 761500 {
					t.Errorf("group %+v", d)
				}
				var names []string
				for _, m := range d.Members {
					names = append(names, m.Keyword+" "+m.Overlap)
				}
				if got := strings.Join(names, ","); got != "running shoes 20/20,running shoe 16/20,running sneakers 12/20,trail shoes 8/20" {
					t.Errorf("members %s", got)
				}
			}},
		{name: "leader", target: "/v1/intent?q=running+shoes", wantStatus: 200, admits: "[1]", committed: "[1]",
			check: func(t *testing.T, d intentDoc) {
				if d.Keyword != "running shoes" || d.Leader != "running shoes" || d.Size != 4 {
					t.Errorf("group %+v", d)
				}
			}},
		{name: "a group of one", target: "/v1/intent?q=best+running+shoes", wantStatus: 200, admits: "[1]", committed: "[1]",
			check: func(t *testing.T, d intentDoc) {
				if d.Leader != "best running shoes" || d.Size != 1 || len(d.Members) != 1 || d.Members[0].Overlap != "20/20" {
					t.Errorf("group %+v", d)
				}
			}},
		{name: "HEAD counts like GET", method: "HEAD", target: "/v1/intent?q=running+shoe", wantStatus: 200, admits: "[1]", committed: "[1]"},
		{name: "unknown keyword counts", target: "/v1/intent?q=running+sandals", wantStatus: 404, wantCode: CodeKeywordNotFound, admits: "[1]", committed: "[1]"},
		{name: "missing q is not counted", target: "/v1/intent", wantStatus: 400, wantCode: CodeMissingQ, admits: "[]", committed: "[]"},
		{name: "bad country is not counted", target: "/v1/intent?q=x&country=zz", wantStatus: 400, wantCode: CodeUnsupportedCountry, admits: "[]", committed: "[]"},
		{name: "country without data is not counted", target: "/v1/intent?q=x&country=fr", wantStatus: 404, wantCode: CodeCountryNotIndexed, admits: "[]", committed: "[]"},
		{name: "POST", method: "POST", target: "/v1/intent?q=x", wantStatus: 405, wantCode: CodeMethodNotAllowed, admits: "[]", committed: "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := newDemoServer(t)
			method := tt.method
			if method == "" {
				method = "GET"
			}
			w := do(t, ds, method, tt.target, nil)
			if w.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.wantStatus, w.Body)
			}
			if tt.wantCode != "" {
				var p struct{ Code string }
				if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || p.Code != tt.wantCode {
					t.Errorf("problem %s, want code %s", w.Body, tt.wantCode)
				}
			}
			if tt.check != nil {
				if ct := w.Header().Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q", ct)
				}
				var d intentDoc
				dec := json.NewDecoder(w.Body)
				dec.DisallowUnknownFields()
				if err := dec.Decode(&d); err != nil {
					t.Fatalf("answer is not the document: %v", err)
				}
				tt.check(t, d)
			}
			if method == "HEAD" && w.Body.Len() != 0 {
				t.Errorf("HEAD answered a body")
			}
			if got := sprint(ds.access.admits); got != tt.admits {
				t.Errorf("admits %s, want %s", got, tt.admits)
			}
			if got := sprint(ds.access.committed); got != tt.committed {
				t.Errorf("committed %s, want %s", got, tt.committed)
			}
		})
	}
}

func TestIntentPage(t *testing.T) {
	ds := newDemoServer(t)
	w := do(t, ds, "GET", "/intent?q=running+sneakers&country=us", nil)
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	body := w.Body.String()
	for _, want := range []string{
		`Intent group of “running sneakers”`, `id="size">4<`, `id="total">761,500<`,
		`<a class="pill" href="/keyword?q=running&#43;shoes&amp;country=us">running shoes</a>`,
		`<a href="/keyword?q=running&#43;shoe&amp;country=us">running shoe</a>`, "16/20", "$1.19", "246,000",
		`href="/v1/intent?q=running&#43;sneakers&amp;country=us"`, "All 4 members are shown",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("intent page lacks %q", want)
		}
	}
	if sprint(ds.access.committed) != "[1]" {
		t.Errorf("committed %v, want one lookup", ds.access.committed)
	}
	w = do(t, ds, "GET", "/intent?q=running+sandals&country=us", nil)
	if w.Code != 404 || !strings.Contains(w.Body.String(), "No data for “running sandals”") {
		t.Errorf("unknown keyword: %d %s", w.Code, w.Body)
	}
}

func TestMCPIntentGroup(t *testing.T) {
	ds := newDemoServer(t)
	w := mcpPost(t, ds, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"intent_group","arguments":{"keyword":"running shoe","country":"us"}}}`, nil)
	var resp struct {
		Result struct {
			IsError           bool      `json:"isError"`
			StructuredContent intentDoc `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil || resp.Result.IsError {
		t.Fatalf("tools/call: %v %s", err, w.Body)
	}
	if g := resp.Result.StructuredContent; g.Leader != "running shoes" || g.Size != 4 {
		t.Errorf("structured content %+v", g)
	}
	w = mcpPost(t, ds, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"intent_group","arguments":{"keyword":"running sandals"}}}`, nil)
	if !strings.Contains(w.Body.String(), `"isError":true`) || !strings.Contains(w.Body.String(), `no data for \"running sandals\" in US`) {
		t.Errorf("unknown keyword: %s", w.Body)
	}
	if sprint(ds.access.committed) != "[1 1]" {
		t.Errorf("committed %v, want two lookups", ds.access.committed)
	}
}

// sprint prints a slice of counts, "[]" for none.
func sprint(v []int) string { return fmt.Sprint(v) }
