package access

import (
	"errors"
	"testing"
	"time"

	"github.com/kwdata/kwdata/serve/oauth"
)

// FuzzSecrets: any string presented as a session id, an authorization
// code, an access token or a refresh token is the one that was issued or
// refused with the answer for unknown values, never another's, never an
// error of the store.
func FuzzSecrets(f *testing.F) {
	clk := newClock(f, "2026-11-22T12:00:00Z")
	s := openStore(f, f.TempDir(), clk)
	o := s.ForOAuth()
	_, rec := mustCreate(f, s, Registered, time.Time{})
	raw := mustSession(f, s, rec.ID)
	g := oauth.Grant{Account: rec.ID, ClientID: "c", Resource: "r"}
	code, err := o.NewCode(ctx, oauth.CodeGrant{Grant: g})
	if err != nil {
		f.Fatal(err)
	}
	tok, err := o.NewTokens(ctx, g, code)
	if err != nil {
		f.Fatal(err)
	}
	for _, v := range []string{raw, code, tok.Access, tok.Refresh, raw[:len(raw)-1] + "8", "kws_", "kwa_" + raw[4:], "", "\x00"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if got, err := s.Session(ctx, v); v == raw {
			if err != nil || got.ID != rec.ID {
				t.Errorf("the session: %+v, %v", got, err)
			}
		} else if !errors.Is(err, ErrNoSession) {
			t.Errorf("Session(%q) = %v, want ErrNoSession", v, err)
		}
		if got, err := o.Token(ctx, v); v == tok.Access {
			if err != nil || got != g {
				t.Errorf("the access token: %+v, %v", got, err)
			}
		} else if !errors.Is(err, oauth.ErrNotFound) {
			t.Errorf("Token(%q) = %v, want ErrNotFound", v, err)
		}
		// Only unknown values: the issued ones are spent by using them.
		if v != code {
			if _, err := o.TakeCode(ctx, v); !errors.Is(err, oauth.ErrNotFound) {
				t.Errorf("TakeCode(%q) = %v, want ErrNotFound", v, err)
			}
		}
		if v != tok.Refresh {
			if _, _, err := o.Refresh(ctx, v, "c"); !errors.Is(err, oauth.ErrNotFound) {
				t.Errorf("Refresh(%q) = %v, want ErrNotFound", v, err)
			}
		}
	})
}
