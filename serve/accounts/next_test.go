package accounts

import (
	"net/url"
	"strings"
	"testing"
)

// TestLocalNext: only a path of this site is kept.
func TestLocalNext(t *testing.T) {
	for next, want := range map[string]string{
		"/account":                         "/account",
		"/mcp/oauth/authorize?client_id=a": "/mcp/oauth/authorize?client_id=a",
		"":                                 "",
		"https://evil.example/":            "",
		"//evil.example":                   "",
		`/\evil.example`:                   "",
		"/\t/evil.example":                 "",
		"/\n/evil.example":                 "",
		"/ /evil.example":                  "",
		"javascript:alert(1)":              "",
		"evil.example":                     "",
		"/" + strings.Repeat("a", maxNext): "",
	} {
		if got := LocalNext(next); got != want {
			t.Errorf("LocalNext(%q) = %q, want %q", next, got, want)
		}
	}
}

// FuzzLocalNext: whatever LocalNext keeps is a path of this site to a
// browser too.
func FuzzLocalNext(f *testing.F) {
	for _, s := range []string{"/account", "//x", `/\x`, "/\t/x", "https://x", "/a?b=//c#d", "/%2F%2Fx"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, next string) {
		got := LocalNext(next)
		if got == "" {
			return
		}
		if got != next {
			t.Fatalf("LocalNext(%q) = %q; it keeps or drops, never rewrites", next, got)
		}
		u, err := url.Parse(strings.ReplaceAll(got, `\`, "/"))
		if err != nil || u.Host != "" || u.Scheme != "" || !strings.HasPrefix(got, "/") || strings.HasPrefix(got, "//") {
			t.Fatalf("LocalNext kept %q, which leaves the site", next)
		}
		for _, c := range got {
			if c < ' ' || c == 0x7f || c == '\\' {
				t.Fatalf("LocalNext kept %q with a character browsers drop or reread", next)
			}
		}
	})
}
