package oauth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/singleflight"
)

// Bounds of client ID metadata document fetches.
const (
	// maxClientDocument is the largest document read; real ones are a
	// few hundred bytes.
	maxClientDocument = 5 << 10
	// fetchTimeout bounds a whole fetch, redirects included.
	fetchTimeout = 5 * time.Second
	// maxFetchRedirects bounds the redirects a fetch follows.
	maxFetchRedirects = 3
	// Documents are cached for their Cache-Control max-age, kept within
	// these bounds; defaultDocTTL applies when the server sends none.
	minDocTTL, defaultDocTTL, maxDocTTL = time.Minute, 10 * time.Minute, 24 * time.Hour
	// maxCachedDocs bounds the cache; a full cache drops expired
	// entries first, then the one that expires soonest.
	maxCachedDocs = 512
	// maxFetches bounds the fetches under way: anyone can start one by
	// opening the authorization endpoint.
	maxFetches = 8
)

// FetchOptions configures NewFetchClient. Production leaves every field
// at its zero value.
type FetchOptions struct {
	// AllowAddr, if set, lets the client connect to an address the guard
	// refuses, when it returns true. Only tests set it, to reach a
	// document served on loopback.
	AllowAddr func(netip.AddrPort) bool
	// RootCAs replaces the system roots (tests: an httptest TLS server's).
	RootCAs *x509.CertPool
	// Timeout bounds a whole fetch. Zero means 5 s.
	Timeout time.Duration
}

// NewFetchClient returns the HTTP client that fetches client ID metadata
// documents: https only, no proxy, at most three redirects, a time limit,
// and a dialer that refuses, at connect time, loopback, private,
// link-local, CGNAT, multicast, unspecified and otherwise non-public
// addresses. Checking the address being connected to, rather than the
// name in the URL, covers redirects and DNS rebinding alike.
func NewFetchClient(opts FetchOptions) *http.Client {
	if opts.Timeout <= 0 {
		opts.Timeout = fetchTimeout
	}
	dialer := &net.Dialer{Timeout: opts.Timeout, Control: dialGuard(opts.AllowAddr)}
	tr := &http.Transport{
		Proxy:                  nil, // a proxy would connect on our behalf, past the guard
		DialContext:            dialer.DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: opts.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    opts.Timeout,
		ResponseHeaderTimeout:  opts.Timeout,
		MaxResponseHeaderBytes: 16 << 10,
		DisableCompression:     true, // the size limit counts bytes on the wire
		MaxIdleConns:           16,
		IdleConnTimeout:        30 * time.Second,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   opts.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxFetchRedirects {
				return fmt.Errorf("more than %d redirects", maxFetchRedirects)
			}
			if req.URL.Scheme != "https" {
				return fmt.Errorf("redirect to %s: documents are fetched over https only", req.URL.Redacted())
			}
			return nil
		},
	}
}

// dialGuard returns a net.Dialer Control function that refuses
// non-public addresses unless allow says otherwise.
func dialGuard(allow func(netip.AddrPort) bool) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("cannot check address %q: %w", address, err)
		}
		if allow != nil && allow(ap) {
			return nil
		}
		if !publicAddr(ap.Addr()) {
			return fmt.Errorf("refusing to connect to %s: a private, loopback or otherwise non-public address", ap.Addr())
		}
		return nil
	}
}

// nonPublic lists the ranges a document is never fetched from, beyond
// what netip's predicates cover.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // CGNAT (RFC 6598)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64: reaches IPv4 addresses, private ones too
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("100::/64"),        // discard
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments (Teredo, ORCHID...)
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2002::/16"),       // 6to4: reaches IPv4 addresses
}

// publicAddr reports whether a is a global unicast address outside every
// private, shared or special-purpose range. IPv4-mapped IPv6 addresses
// are judged as the IPv4 address they carry.
func publicAddr(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.Zone() != "" || !a.IsGlobalUnicast() || a.IsPrivate() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// checkClientIDURL applies the client ID metadata document rules to a
// client_id URL: https, a host, a path other than "/", no dot segments,
// no userinfo, no fragment.
func checkClientIDURL(id string) (*url.URL, error) {
	if len(id) > maxURI {
		return nil, fmt.Errorf("client_id is longer than %d bytes", maxURI)
	}
	u, err := url.Parse(id)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("client_id %.100q is not an https URL", id)
	}
	if u.User != nil || strings.ContainsRune(id, '#') {
		return nil, fmt.Errorf("client_id %.100q has userinfo or a fragment; a client ID metadata document URL has neither", id)
	}
	if u.Path == "" || u.Path == "/" {
		return nil, fmt.Errorf("client_id %.100q has no path; a client ID metadata document URL names a document", id)
	}
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		if seg == "." || seg == ".." || strings.EqualFold(seg, "%2e") || strings.EqualFold(seg, "%2e%2e") {
			return nil, fmt.Errorf("client_id %.100q has a dot segment", id)
		}
	}
	return u, nil
}

// clientDocument is the part of a client ID metadata document we read.
type clientDocument struct {
	ClientID                string   `json:"client_id"`
	ClientName              string   `json:"client_name"`
	ClientURI               string   `json:"client_uri"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
}

type cachedDoc struct {
	client  Client
	expires time.Time
}

// clientDocs fetches and caches client ID metadata documents.
type clientDocs struct {
	http  *http.Client
	now   func() time.Time
	group singleflight.Group
	slots chan struct{} // a token per fetch under way

	mu    sync.Mutex
	cache map[string]cachedDoc
}

// fetch returns the client a document describes, from the cache while it
// is fresh.
func (d *clientDocs) fetch(ctx context.Context, id string) (Client, error) {
	if _, err := checkClientIDURL(id); err != nil {
		return Client{}, err
	}
	d.mu.Lock()
	c, ok := d.cache[id]
	d.mu.Unlock()
	if ok && d.now().Before(c.expires) {
		return c.client, nil
	}
	v, err, _ := d.group.Do(id, func() (any, error) {
		client, ttl, err := d.get(ctx, id)
		if err != nil {
			return Client{}, err
		}
		d.put(id, cachedDoc{client: client, expires: d.now().Add(ttl)})
		return client, nil
	})
	return v.(Client), err
}

func (d *clientDocs) put(id string, c cachedDoc) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.cache) >= maxCachedDocs {
		now := d.now()
		var soonest string
		for k, v := range d.cache {
			if !now.Before(v.expires) {
				delete(d.cache, k)
			} else if soonest == "" || v.expires.Before(d.cache[soonest].expires) {
				soonest = k
			}
		}
		if len(d.cache) >= maxCachedDocs {
			delete(d.cache, soonest)
		}
	}
	d.cache[id] = c
}

// get fetches and checks one document, returning how long it may be
// cached.
func (d *clientDocs) get(ctx context.Context, id string) (Client, time.Duration, error) {
	select {
	case d.slots <- struct{}{}:
		defer func() { <-d.slots }()
	default:
		return Client{}, 0, fmt.Errorf("cannot fetch client document %s: the server is busy fetching others; try again in a few seconds", id)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return Client{}, 0, fmt.Errorf("cannot fetch client document %s: %w", id, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := d.http.Do(req)
	if err != nil {
		return Client{}, 0, fmt.Errorf("cannot fetch client document %s: %w", id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Client{}, 0, fmt.Errorf("cannot fetch client document %s: HTTP %d", id, resp.StatusCode)
	}
	if resp.ContentLength > maxClientDocument {
		return Client{}, 0, fmt.Errorf("client document %s is larger than %d bytes", id, maxClientDocument)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxClientDocument+1))
	if err != nil {
		return Client{}, 0, fmt.Errorf("cannot read client document %s: %w", id, err)
	}
	if len(body) > maxClientDocument {
		return Client{}, 0, fmt.Errorf("client document %s is larger than %d bytes", id, maxClientDocument)
	}
	client, err := parseClientDocument(id, body)
	if err != nil {
		return Client{}, 0, err
	}
	return client, cacheTTL(resp.Header.Get("Cache-Control")), nil
}

// parseClientDocument checks a fetched client ID metadata document: a
// JSON object whose client_id is its own URL, with the metadata rules of
// registration.
func parseClientDocument(id string, body []byte) (Client, error) {
	var doc clientDocument
	if err := json.Unmarshal(body, &doc); err != nil {
		return Client{}, fmt.Errorf("client document %s is not a JSON object: %w", id, err)
	}
	if doc.ClientID != id {
		return Client{}, fmt.Errorf("client document %s names client_id %.100q; it must equal its own URL", id, doc.ClientID)
	}
	client, err := checkMetadata(Client{ID: id, Name: doc.ClientName, URI: doc.ClientURI, RedirectURIs: doc.RedirectURIs},
		doc.TokenEndpointAuthMethod, doc.GrantTypes, doc.ResponseTypes)
	if err != nil {
		return Client{}, fmt.Errorf("client document %s: %w", id, err)
	}
	return client, nil
}

// cacheTTL reads max-age from a Cache-Control header, within bounds.
func cacheTTL(cc string) time.Duration {
	ttl := defaultDocTTL
	for _, dir := range strings.Split(cc, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(dir), "=")
		switch strings.ToLower(k) {
		case "no-store", "no-cache":
			return minDocTTL
		case "max-age":
			if n, err := strconv.ParseInt(strings.Trim(v, `"`), 10, 64); err == nil {
				ttl = time.Duration(min(n, int64(maxDocTTL/time.Second))) * time.Second
			}
		}
	}
	return min(max(ttl, minDocTTL), maxDocTTL)
}
