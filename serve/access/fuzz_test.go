package access

import (
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func FuzzIdentify(f *testing.F) {
	clk := newClock(f, "2026-11-22T12:00:00Z")
	s := openStore(f, f.TempDir(), clk)
	valid := map[string]string{} // key -> id
	for _, tier := range []Tier{Registered, Paid} {
		key, rec := mustCreate(f, s, tier, time.Time{})
		valid[key] = rec.ID
	}
	revoked, rrec := mustCreate(f, s, Registered, time.Time{})
	if err := s.RevokeKey(ctx, rrec.ID); err != nil {
		f.Fatal(err)
	}
	for key := range valid {
		f.Add(key, []byte{192, 0, 2, 1})
		f.Add(strings.ToUpper(key), []byte{})
		f.Add(key[:len(key)-1]+"8", []byte{})
		f.Add("Bearer "+key, []byte{})
	}
	f.Add(revoked, []byte{})
	f.Add("", []byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Add("kwd_", []byte{})
	f.Add("kwd_\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", []byte{})
	f.Add("kwd_ééééééééééééééééé", []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, key string, addr []byte) {
		client, _ := netip.AddrFromSlice(addr)
		c, err := s.Identify(ctx, key, client)
		switch id, ok := valid[key]; {
		case key == "":
			if err != nil || c.Tier != Anonymous || c.KeyID != "" {
				t.Fatalf("empty key: %+v, %v", c, err)
			}
		case ok:
			if err != nil || c.KeyID != id {
				t.Fatalf("valid key %q: %+v, %v", key, c, err)
			}
		default:
			if !errors.Is(err, ErrInvalidKey) || c != (Caller{}) {
				t.Fatalf("garbage %q treated as %+v, %v", key, c, err)
			}
		}
		if err == nil && c.Addr != GroupAddr(client) {
			t.Fatalf("address %s grouped as %s", client, c.Addr)
		}

		// The same string as a header never yields a caller that the
		// bare key would not.
		r := &http.Request{Header: http.Header{"Authorization": {key}}}
		if res, err := s.Admit(ctx, r, client, 1); err == nil {
			res.Cancel()
			hkey, _ := RequestKey(r)
			if _, ok := valid[hkey]; !ok {
				t.Fatalf("header %q admitted", key)
			}
		}
	})
}

func FuzzNormalizeEmail(f *testing.F) {
	for _, s := range []string{"ann@example.com", "Ann <ann@example.com>", "ann@bücher.de", "\"a b\"@example.com", "a@b", "@", "a@b.c@d.e", "ann@exa\u00a0mple.com"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := NormalizeEmail(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidEmail) || got != "" {
				t.Fatalf("NormalizeEmail(%q) = %q, %v", s, got, err)
			}
			return
		}
		if strings.Count(got, "@") != 1 || strings.ContainsAny(got, " \t\r\n<>\"") || got != strings.ToLower(got) {
			t.Fatalf("NormalizeEmail(%q) accepted %q", s, got)
		}
		if again, err := NormalizeEmail(got); err != nil || again != got {
			t.Fatalf("NormalizeEmail is not idempotent on %q: %q, %v", got, again, err)
		}
	})
}
