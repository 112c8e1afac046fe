package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// BaseURL is the scheme, host and path prefix of absolute links: the
// configured public URL, or "" for relative links. Never the request's
// Host, which a client chooses and a shared cache may not key on.
func (s *Core) BaseURL(*http.Request) string { return s.PublicURL }

// ParsePublicURL checks a public URL for Options.PublicURL and returns it
// without a trailing "/": an absolute http or https URL with a host and
// no user, query or fragment. The empty string is valid (relative links).
func ParsePublicURL(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%q is not a URL: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("%q is not an http or https URL such as https://kwdata.example.com (a path prefix is allowed; user, query and fragment are not)", raw)
	}
	if strings.ContainsAny(u.Host, "()[]<>\"\\ ") && !strings.HasPrefix(u.Host, "[") {
		return "", fmt.Errorf("%q has a host that is not a name or an address", raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}
