package kw

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
	"golang.org/x/text/unicode/norm"
)

// MaxKeywordChars is the longest keyword, in characters after
// normalization. There is no word limit: real planner exports hold keyword
// ideas of more than 10 words.
const MaxKeywordChars = 80

// Errors of NormalizeKeyword. They are distinct so that callers can tell an
// empty request from an oversized one.
var (
	ErrKeywordEmpty   = errors.New("keyword is empty")
	ErrKeywordTooLong = errors.New("keyword is too long")
	ErrKeywordInvalid = errors.New("keyword is not valid UTF-8")
)

// NormalizeKeyword is the one normalization of a keyword, the same at
// ingest and at lookup: Unicode NFKC, Unicode lower case, white
// space trimmed and every run collapsed to one ASCII space. A result longer
// than MaxKeywordChars characters is rejected with an error wrapping
// ErrKeywordTooLong, never truncated.
func NormalizeKeyword(s string) (string, error) {
	if len(s) <= MaxKeywordChars && plainASCII(s) {
		return s, nil
	}
	return normalizeKeyword(s)
}

// plainASCII reports whether s is already normalized ASCII, as most
// queries are: printable ASCII without upper-case letters, single spaces
// between words. NFKC leaves ASCII unchanged, so such a string is its own
// normalization and normalizeKeyword would return it as is.
func plainASCII(s string) bool {
	if s == "" || s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ':
			if s[i-1] == ' ' {
				return false
			}
		case c < 0x21 || c > 0x7e || ('A' <= c && c <= 'Z'):
			return false
		}
	}
	return true
}

// normalizeKeyword is NormalizeKeyword for any string.
func normalizeKeyword(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", ErrKeywordInvalid
	}
	// Full Unicode lower case (SpecialCasing with the final-sigma rule), not
	// strings.ToLower's one-rune mapping: "ΟΔΟΣ" is "οδος" and "İ" is "i̇",
	// as in Python's str.lower and ICU. A Caser keeps state, so one per call.
	s = cases.Lower(language.Und).String(norm.NFKC.String(s))
	var b strings.Builder
	b.Grow(len(s))
	words, space := 0, false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space || words == 0 {
			if words > 0 {
				b.WriteByte(' ')
			}
			words++
			space = false
		}
		b.WriteRune(r)
	}
	out := b.String()
	switch n := utf8.RuneCountInString(out); {
	case words == 0:
		return "", ErrKeywordEmpty
	case n > MaxKeywordChars:
		return "", fmt.Errorf("%w: %d characters, at most %d", ErrKeywordTooLong, n, MaxKeywordChars)
	}
	return out, nil
}

// trackingParams are query parameters that never change the page.
var trackingParams = map[string]bool{"gclid": true, "fbclid": true, "msclkid": true}

// URLKey returns the key under which two result URLs count as the same page
// (docs/ANALYSTS.md, "url_key", has examples): no scheme, lower-case host without a leading "www." (one,
// not repeated) and without port 80
// or 443, no fragment, no trailing "/" (an empty path is "/"), no tracking
// parameters, remaining parameters sorted by name then value.
func URLKey(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", errors.New("url is empty")
	}
	if !hasScheme(raw) {
		if strings.HasPrefix(raw, "//") {
			raw = "http:" + raw
		} else {
			raw = "http://" + raw
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("cannot parse url: %w", err)
	}
	host := strings.ToLower(u.Hostname())
	// One leading "www." only: www.www.example.com is
	// another host than example.com, and its key keeps one "www.".
	host = strings.TrimPrefix(host, "www.")
	if host == "" {
		return "", fmt.Errorf("url %q has no host", raw)
	}
	if strings.Contains(host, ":") { // only an IPv6 literal may hold a colon
		if _, err := netip.ParseAddr(host); err != nil {
			return "", fmt.Errorf("url %q has an invalid host: %w", raw, err)
		}
		host = "[" + host + "]"
	}
	if port := u.Port(); port != "" && port != "80" && port != "443" {
		host += ":" + port
	}
	path := strings.TrimRight(u.EscapedPath(), "/")
	if path == "" {
		path = "/"
	}
	key := host + path
	if q := canonicalQuery(u.RawQuery); q != "" {
		key += "?" + q
	}
	return key, nil
}

func canonicalQuery(raw string) string {
	if raw == "" {
		return ""
	}
	type param struct{ name, value string }
	var ps []param
	for _, part := range strings.Split(raw, "&") {
		if part == "" {
			continue
		}
		name, value, _ := strings.Cut(part, "=")
		name, value = unescapeQuery(name), unescapeQuery(value)
		lname := strings.ToLower(name)
		if strings.HasPrefix(lname, "utm_") || trackingParams[lname] {
			continue
		}
		ps = append(ps, param{name, value})
	}
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].name != ps[j].name {
			return ps[i].name < ps[j].name
		}
		return ps[i].value < ps[j].value
	})
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(p.name))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(p.value))
	}
	return b.String()
}

func unescapeQuery(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// hasScheme reports whether s starts with "scheme://" (RFC 3986 scheme
// characters), so that a bare "example.com/a" can be read as a host.
func hasScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return strings.HasPrefix(s[i:], "://")
		default:
			return false
		}
	}
	return false
}
