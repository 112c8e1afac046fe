package web

import (
	"fmt"
	"net/url"
	"strings"
)

// CanonicalOrigin checks that s is a web origin, "scheme://host[:port]"
// with scheme http or https (as --allowed-origin takes them), and returns
// it in the form Options.AllowedOrigins compares.
func CanonicalOrigin(s string) (string, error) {
	u, err := ParseOrigin(strings.TrimSpace(s))
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

// ParseOrigin parses a web origin, "scheme://host[:port]" with scheme http
// or https, and returns it lower-cased with the scheme's default port
// dropped, so equal origins compare equal as strings.
func ParseOrigin(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return nil, fmt.Errorf("%q is not an origin; use scheme://host[:port], e.g. https://kwdata.example.com", s)
	}
	if p := u.Port(); (u.Scheme == "http" && p == "80") || (u.Scheme == "https" && p == "443") {
		u.Host = strings.TrimSuffix(u.Host, ":"+p)
	}
	u.Path = ""
	return u, nil
}
