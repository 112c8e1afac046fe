package oauth

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// maxURI bounds every URI a client gives us (redirect URIs, client ids).
const maxURI = 2000

// isLoopbackHost reports whether host is one of the loopback names a
// native client listens on (RFC 8252 §7.3 and §8.3).
func isLoopbackHost(host string) bool {
	return host == "127.0.0.1" || host == "::1" || host == "localhost"
}

// checkRedirectURI applies the redirect URI rule of registration and of
// client ID metadata documents: an absolute https URI, or a loopback http
// one, without userinfo or fragment.
func checkRedirectURI(s string) error {
	if s == "" {
		return errors.New("redirect_uri is empty; pass the absolute URI the code is sent back to")
	}
	if len(s) > maxURI {
		return fmt.Errorf("redirect_uri is longer than %d bytes", maxURI)
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("redirect_uri %.100q is not a URI", s)
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("redirect_uri %.100q is not an absolute URI with a host", s)
	}
	if u.User != nil {
		return fmt.Errorf("redirect_uri %.100q has userinfo; leave it out", s)
	}
	if u.Fragment != "" || u.RawFragment != "" || strings.ContainsRune(s, '#') {
		return fmt.Errorf("redirect_uri %.100q has a fragment; leave it out", s)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("redirect_uri %.100q has a bad port", s)
		}
	}
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopbackHost(u.Hostname()):
		return nil
	}
	return fmt.Errorf("redirect_uri %.100q must be https, or http on 127.0.0.1, [::1] or localhost", s)
}

// redirectMatches reports whether presented, from an authorization
// request, matches registered: the exact string, or for a loopback http
// URI the same URI on any port, since a native client listens on
// whatever port is free (RFC 8252 §7.3).
func redirectMatches(registered, presented string) bool {
	if checkRedirectURI(registered) != nil || checkRedirectURI(presented) != nil {
		return false
	}
	if registered == presented {
		return true
	}
	r, _ := url.Parse(registered)
	p, _ := url.Parse(presented)
	return r.Scheme == "http" && p.Scheme == "http" &&
		isLoopbackHost(r.Hostname()) && r.Hostname() == p.Hostname() &&
		r.EscapedPath() == p.EscapedPath() &&
		r.RawQuery == p.RawQuery && r.ForceQuery == p.ForceQuery
}
