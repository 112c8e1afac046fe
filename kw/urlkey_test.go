package kw

import (
	"strings"
	"testing"
)

func TestURLKey(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://www.Example.com/Shoes/", "example.com/Shoes"},
		{"http://example.com/Shoes", "example.com/Shoes"},
		{"https://example.com", "example.com/"},
		{"https://example.com/", "example.com/"},
		{"https://example.com:443/a", "example.com/a"},
		{"http://example.com:80/a", "example.com/a"},
		{"http://example.com:8080/a", "example.com:8080/a"},
		{"https://example.com/a#reviews", "example.com/a"},
		{"https://example.com/a?utm_source=x&UTM_Medium=y&gclid=1&fbclid=2&msclkid=3", "example.com/a"},
		{"https://example.com/a?b=2&a=1&a=0", "example.com/a?a=0&a=1&b=2"},
		{"https://example.com/a/?size=10&utm_campaign=z#top", "example.com/a?size=10"},
		{"https://WWW.EXAMPLE.COM//a//", "example.com//a"},
		{"example.com/a", "example.com/a"},
		{"https://en.wikipedia.org/wiki/Running_shoe", "en.wikipedia.org/wiki/Running_shoe"},
		{"https://example.com/search?q=running+shoes", "example.com/search?q=running+shoes"},
		{"https://example.com/search?q=running%20shoes", "example.com/search?q=running+shoes"},
		{"https://[2001:db8::1]:443/x", "[2001:db8::1]/x"},
		{"https://www.www.example.com/a", "www.example.com/a"},
		{"https://WWW.Www.www.example.com", "www.www.example.com/"},
		{"https://wwwexample.com/", "wwwexample.com/"},
		{"https://shop.www.example.com/", "shop.www.example.com/"},
		{"www.example.com", "example.com/"},
	} {
		got, err := URLKey(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("URLKey(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "   ", "https://", "http://%zz/", "https:///path"} {
		if got, err := URLKey(bad); err == nil {
			t.Errorf("URLKey(%q) = %q, want an error", bad, got)
		}
	}
}

func FuzzURLKey(f *testing.F) {
	for _, s := range []string{"https://www.example.com/a/?b=1&utm_x=2#f", "http://x.org:80", "a.b/c?d", "https://[::1]:8080/x?y=%20",
		"https://www.www.example.com/", "www.www."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		key, err := URLKey(s)
		if err != nil {
			return
		}
		again, err := URLKey(key)
		if strings.HasPrefix(key, "www.") {
			// Only one leading "www." is dropped, so a key that still has
			// one (the URL had two) loses it when keyed again, and nothing
			// else changes.
			if err == nil && again != key[len("www."):] {
				t.Fatalf("%q -> %q -> %q; want the key without its www.", s, key, again)
			}
			return
		}
		if err != nil || again != key {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", s, key, again, err)
		}
	})
}

// TestURLKeyReadmeExamples keeps the url_key examples of docs/ANALYSTS.md true.
func TestURLKeyReadmeExamples(t *testing.T) {
	for in, want := range map[string]string{
		"https://www.Example.com:443/a/b/?utm_source=x&b=2&a=1#top": "example.com/a/b?a=1&b=2",
		"http://example.com/a//":                                    "example.com/a",
		"http://example.com/?x":                                     "example.com/?x=",
		"example.com/p?q=a+b&r=%2Fc":                                "example.com/p?q=a+b&r=%2Fc",
	} {
		if got, err := URLKey(in); err != nil || got != want {
			t.Errorf("URLKey(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
