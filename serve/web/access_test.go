package web

import (
	"net/netip"
	"testing"
)

func TestClientAddr(t *testing.T) {
	trusted := []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("fd00::/8"),
		netip.MustParsePrefix("127.0.0.1/32"),
	}
	tests := []struct {
		name    string
		remote  string
		xff     []string
		trusted []netip.Prefix
		want    string // "" is the zero Addr
	}{
		{"direct IPv4", "203.0.113.7:5000", nil, trusted, "203.0.113.7"},
		{"direct IPv6", "[2001:db8::1]:5000", nil, trusted, "2001:db8::1"},
		{"IPv4-mapped unmapped", "[::ffff:203.0.113.7]:5000", nil, trusted, "203.0.113.7"},
		{"zone dropped", "[fe80::1%eth0]:5000", nil, trusted, "fe80::1"},
		{"no port", "203.0.113.7", nil, trusted, "203.0.113.7"},
		{"bare IPv6", "2001:db8::1", nil, trusted, "2001:db8::1"},
		{"bracketed IPv6 without port", "[2001:db8::1]", nil, trusted, "2001:db8::1"},
		{"port out of range", "203.0.113.7:99999", nil, trusted, "203.0.113.7"},
		{"unix socket", "@", nil, trusted, ""},
		{"empty", "", nil, trusted, ""},
		{"XFF ignored from untrusted peer", "203.0.113.7:5000", []string{"198.51.100.1"}, trusted, "203.0.113.7"},
		{"XFF ignored without trusted proxies", "10.0.0.1:5000", []string{"198.51.100.1"}, nil, "10.0.0.1"},
		{"trusted peer without XFF", "10.0.0.1:5000", nil, trusted, "10.0.0.1"},
		{"trusted peer, one hop", "10.0.0.1:5000", []string{"198.51.100.1"}, trusted, "198.51.100.1"},
		{"right-most untrusted wins", "10.0.0.1:5000", []string{"6.6.6.6, 198.51.100.1, 10.0.0.2"}, trusted, "198.51.100.1"},
		{"spoofed left entries ignored", "10.0.0.1:5000", []string{"1.1.1.1", "198.51.100.1"}, trusted, "198.51.100.1"},
		{"several fields, last field last", "10.0.0.1:5000", []string{"198.51.100.1", "10.0.0.3,10.0.0.2"}, trusted, "198.51.100.1"},
		{"all trusted: left-most", "10.0.0.1:5000", []string{"10.0.0.9, 10.0.0.2"}, trusted, "10.0.0.9"},
		{"garbage stops at last trusted hop", "10.0.0.1:5000", []string{"198.51.100.1, bogus, 10.0.0.2"}, trusted, "10.0.0.2"},
		{"garbage right after peer", "10.0.0.1:5000", []string{"198.51.100.1, bogus"}, trusted, "10.0.0.1"},
		{"empty entries skipped", "10.0.0.1:5000", []string{" , 198.51.100.1 ,, "}, trusted, "198.51.100.1"},
		{"entry with port", "10.0.0.1:5000", []string{"198.51.100.1:4711"}, trusted, "198.51.100.1"},
		{"bracketed IPv6 entry", "10.0.0.1:5000", []string{"[2001:db8::7]"}, trusted, "2001:db8::7"},
		{"bracketed IPv6 entry with port", "10.0.0.1:5000", []string{"[2001:db8::7]:80"}, trusted, "2001:db8::7"},
		{"IPv6 proxy", "[fd00::1]:443", []string{"2001:db8::7"}, trusted, "2001:db8::7"},
		{"mapped entry unmapped", "127.0.0.1:80", []string{"::ffff:198.51.100.1"}, trusted, "198.51.100.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ClientAddr(tt.remote, tt.xff, tt.trusted)
			var want netip.Addr
			if tt.want != "" {
				want = netip.MustParseAddr(tt.want)
			}
			if got != want {
				t.Errorf("ClientAddr(%q, %q) = %v, want %v", tt.remote, tt.xff, got, want)
			}
		})
	}
}

// TestClientAddrAllocs guards the hot path: every request parses its
// connection's peer, and a plain "host:port" must not allocate.
func TestClientAddrAllocs(t *testing.T) {
	for _, remote := range []string{"203.0.113.7:5000", "[2001:db8::1]:5000", "[::ffff:203.0.113.7]:5000"} {
		t.Run(remote, func(t *testing.T) {
			if n := testing.AllocsPerRun(100, func() { ClientAddr(remote, nil, nil) }); n != 0 {
				t.Errorf("ClientAddr(%q) allocates %v times a call, want 0", remote, n)
			}
		})
	}
}
