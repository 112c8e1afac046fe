package api

import (
	"net/http/httptest"
	"testing"

	"github.com/kwdata/kwdata/serve/web"
)

func TestWantsCSV(t *testing.T) {
	for _, tt := range []struct {
		target string
		accept []string
		want   bool
	}{
		{"/v1/intent?q=a", nil, false},
		{"/v1/intent?q=a", []string{"text/csv"}, true},
		{"/v1/intent?q=a", []string{"application/json"}, false},
		{"/v1/intent?q=a", []string{"*/*"}, false},
		{"/v1/intent?q=a", []string{"text/csv, application/json;q=0.5"}, true},
		{"/v1/intent?q=a", []string{"application/json, text/csv;q=0.5"}, false},
		{"/v1/intent?q=a", []string{"text/csv;q=0"}, false},
		{"/v1/intent?q=a", []string{"text/html", "text/csv; charset=utf-8"}, true},
		{"/v1/intent?q=a&format=csv", nil, true},
		{"/v1/intent?q=a&format=json", []string{"text/csv"}, true},
		{"/v1/intent?q=format%3Dcsv", nil, false},
	} {
		r := httptest.NewRequest("GET", tt.target, nil)
		r.Header["Accept"] = tt.accept
		if got := wantsCSV(r); got != tt.want {
			t.Errorf("wantsCSV(%s, Accept %q) = %v, want %v", tt.target, tt.accept, got, tt.want)
		}
	}
}

// FuzzWantsCSV: any Accept field and query string decide without panic,
// and format=csv always wins.
func FuzzWantsCSV(f *testing.F) {
	f.Add("text/csv;q=0.9, application/json;q=0.8", "q=a")
	f.Add(";;;q=,text/csv;q=abc", "format=csv")
	f.Fuzz(func(t *testing.T, accept, query string) {
		r := httptest.NewRequest("GET", "/v1/intent", nil)
		r.URL.RawQuery = query
		r.Header.Set("Accept", accept)
		got := wantsCSV(r)
		if f, _, err := web.QueryValue(query, "format"); err == nil && f == "csv" && !got {
			t.Fatalf("format=csv in %q not honoured", query)
		}
	})
}

// TestCSVText: the rule of a text cell, alone.
func TestCSVText(t *testing.T) {
	for in, want := range map[string]string{
		"":              "",
		"running shoes": "running shoes",
		"=1+1":          "'=1+1",
		"+1":            "'+1",
		"-1 squared":    "'-1 squared",
		"@sum(a1)":      "'@sum(a1)",
		"\t=1":          "'\t=1",
		"\r=1":          "'\r=1",
		"a=1":           "a=1",
		"'quoted":       "'quoted",
		"1K – 10K":      "1K – 10K",
		" =not first":   " =not first",
	} {
		if got := csvText(in); got != want {
			t.Errorf("csvText(%q) = %q, want %q", in, got, want)
		}
	}
}
