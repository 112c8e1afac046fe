package ingest

import (
	"bytes"
	"slices"

	"github.com/kwdata/kwdata/kw"
)

// appendURLKey appends the key of the URL u to dst, kw.URLKey's answer;
// ok is false when the URL has none. Most result URLs have a plain shape
// that appendFastURLKey keys without net/url; kw.URLKey decides the rest.
// at is where in u the key most likely starts (its host), or -1.
func appendURLKey(dst, u []byte) (key []byte, at int, ok bool) {
	if key, at, ok := appendFastURLKey(dst, u); ok {
		return key, at, true
	}
	k, err := kw.URLKey(string(u))
	if err != nil {
		return dst, -1, false
	}
	return append(dst, k...), -1, true
}

// urlParam is one query parameter of a URL being keyed.
type urlParam struct{ name, value []byte }

// appendFastURLKey keys the common shape of a result URL the way
// kw.URLKey does, without parsing it into a url.URL and escaping it back
// (which was a third of ingest's parse time): "http://" or "https://"; a
// host of ASCII letters, digits, dots and hyphens, with no port or port 80
// or 443; a path of unreserved characters and "/"; a query whose names
// and values are unreserved characters; a fragment of printable ASCII
// without "%". It returns ok false for anything else, leaving dst as it
// was, and kw.URLKey decides. FuzzFastURLKey checks that the two agree.
func appendFastURLKey(dst, u []byte) (key []byte, at int, ok bool) {
	var i int
	switch {
	case len(u) > 8 && string(u[:8]) == "https://":
		i = 8
	case len(u) > 7 && string(u[:7]) == "http://":
		i = 7
	default:
		return dst, -1, false
	}
	host := i
	for ; i < len(u) && urlChars[u[i]]&hostChar != 0; i++ {
	}
	if i < len(u) && !isURLDelim(u[i]) && u[i] != ':' {
		return dst, -1, false
	}
	hostEnd := i
	if i < len(u) && u[i] == ':' {
		j := i + 1
		for j < len(u) && !isURLDelim(u[j]) {
			j++
		}
		if p := string(u[i+1 : j]); p != "443" && p != "80" {
			return dst, -1, false
		}
		i = j
	}
	if hostEnd-host >= 4 && asciiEqualFold(u[host:host+4], "www.") {
		host += 4
	}
	if host == hostEnd {
		return dst, -1, false // no host: kw.URLKey refuses it
	}
	path := i
	for ; i < len(u) && urlChars[u[i]]&pathChar != 0; i++ {
	}
	if i < len(u) && u[i] != '?' && u[i] != '#' {
		return dst, -1, false
	}
	pathEnd := i
	var params []urlParam
	if i < len(u) && u[i] == '?' {
		q := i + 1
		for i++; i < len(u) && urlChars[u[i]]&queryChar != 0; i++ {
		}
		if i < len(u) && u[i] != '#' {
			return dst, -1, false
		}
		var ok bool
		if params, ok = queryParams(u[q:i]); !ok {
			return dst, -1, false
		}
	}
	if i < len(u) { // the fragment, dropped; net/url refuses a bad escape in it
		for _, c := range u[i+1:] {
			if c <= ' ' || c >= 0x7f || c == '%' {
				return dst, -1, false
			}
		}
	}

	start := len(dst)
	dst = append(dst, u[host:hostEnd]...)
	for j := start; j < len(dst); j++ {
		if c := dst[j]; 'A' <= c && c <= 'Z' {
			dst[j] = c + 'a' - 'A'
		}
	}
	for pathEnd > path && u[pathEnd-1] == '/' {
		pathEnd--
	}
	if pathEnd == path {
		dst = append(dst, '/')
	} else {
		dst = append(dst, u[path:pathEnd]...)
	}
	for j, p := range params {
		if j == 0 {
			dst = append(dst, '?')
		} else {
			dst = append(dst, '&')
		}
		dst = append(append(append(dst, p.name...), '='), p.value...)
	}
	return dst, host, true
}

// queryParams splits a query of unreserved characters, "&" and "=" into
// its parameters without the tracking ones, sorted by name then value;
// ok is false for a value holding "=", which kw.URLKey escapes.
func queryParams(q []byte) (ps []urlParam, ok bool) {
	for len(q) > 0 {
		var part []byte
		if k := bytes.IndexByte(q, '&'); k >= 0 {
			part, q = q[:k], q[k+1:]
		} else {
			part, q = q, nil
		}
		if len(part) == 0 {
			continue
		}
		name, value, _ := bytes.Cut(part, []byte{'='})
		if bytes.IndexByte(value, '=') >= 0 {
			return nil, false
		}
		if isTrackingParam(name) {
			continue
		}
		ps = append(ps, urlParam{name, value})
	}
	slices.SortFunc(ps, func(a, b urlParam) int {
		if c := bytes.Compare(a.name, b.name); c != 0 {
			return c
		}
		return bytes.Compare(a.value, b.value)
	})
	return ps, true
}

// isTrackingParam reports whether kw.URLKey drops a parameter of this name.
func isTrackingParam(name []byte) bool {
	if len(name) >= 4 && asciiEqualFold(name[:4], "utm_") {
		return true
	}
	switch len(name) {
	case 5:
		return asciiEqualFold(name, "gclid")
	case 6:
		return asciiEqualFold(name, "fbclid")
	case 7:
		return asciiEqualFold(name, "msclkid")
	}
	return false
}

// Classes of URL bytes, for appendFastURLKey's scans: a table lookup a
// byte instead of a chain of comparisons.
const (
	hostChar  = 1 << iota // letters, digits, ".", "-"
	pathChar              // unreserved characters and "/"
	queryChar             // unreserved characters, "&" and "="
)

var urlChars = func() (t [256]uint8) {
	for c := range 256 {
		b := byte(c)
		if 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '.' || b == '-' {
			t[c] |= hostChar
		}
		if isUnreserved(b) || b == '/' {
			t[c] |= pathChar
		}
		if isUnreserved(b) || b == '&' || b == '=' {
			t[c] |= queryChar
		}
	}
	return t
}()

// isURLDelim reports whether c ends a URL's host.
func isURLDelim(c byte) bool { return c == '/' || c == '?' || c == '#' }

// isUnreserved reports whether c is an RFC 3986 unreserved character,
// which net/url neither escapes nor unescapes.
func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// asciiEqualFold reports whether b is s (lower-case ASCII) in any case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(s) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
