package access

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"
)

func mustStartSignin(tb testing.TB, s signinStore, email string) Signin {
	tb.Helper()
	si, err := s.StartSignin(ctx, email, mustAddr(tb, "192.0.2.1"))
	if err != nil {
		tb.Fatalf("StartSignin(%q): %v", email, err)
	}
	return si
}

// signinStore is what the sign-in tests need of a store.
type signinStore interface {
	accountStore
	StartSignin(ctx0 context.Context, email string, client netip.Addr) (Signin, error)
	VerifySignin(ctx0 context.Context, email, code string) (KeyRecord, error)
}

// TestSigninKeepsKey is an attack: someone who can read a person's mail
// for a moment (or the person, signing in on a page) verifies a sign-in
// code. The account's API key must keep working: only the lost-key
// verification and rotation change it.
func TestSigninKeepsKey(t *testing.T) { forBackends(t, testSigninKeepsKey) }

func testSigninKeepsKey(t *testing.T, b backend) {
	_, open := b.start(t)
	s := open().(signinStore)
	su := mustStart(t, s, "ann@example.com")
	key, rec, err := s.VerifySignup(ctx, su.Email, su.Code)
	if err != nil {
		t.Fatal(err)
	}
	si := mustStartSignin(t, s, "Ann@Example.com")
	if si.To != "ann@example.com" || !si.Known {
		t.Errorf("sign-in code for a known mailbox: %+v", si)
	}
	got, err := s.VerifySignin(ctx, "ann@example.com", si.Code)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != rec.ID {
		t.Errorf("signed in to account %s, want %s", got.ID, rec.ID)
	}
	if c, err := s.Identify(ctx, key, mustAddr(t, "192.0.2.1")); err != nil || c.KeyID != rec.ID {
		t.Errorf("the API key after a sign-in: %+v, %v; want it still working", c, err)
	}
	if list, _ := s.ListKeys(ctx); len(list) != 1 {
		t.Errorf("%d accounts after signing in to one, want 1", len(list))
	}
	// Another spelling of the mailbox: the code goes to the account's own
	// address, and signs in to that account.
	si = mustStartSignin(t, s, "ann+other@example.com")
	if si.To != "ann@example.com" || !si.Known {
		t.Errorf("sign-in code for another spelling of a known mailbox: %+v, want it sent to ann@example.com", si)
	}
	if got, err := s.VerifySignin(ctx, "ann+other@example.com", si.Code); err != nil || got.ID != rec.ID {
		t.Errorf("signing in with another spelling: %+v, %v; want account %s", got, err, rec.ID)
	}
	// A sign-in code is not a lost-key code: it cannot re-key either.
	si = mustStartSignin(t, s, "ann@example.com")
	if _, _, err := s.VerifySignup(ctx, "ann@example.com", si.Code); !errors.Is(err, ErrCodeInvalid) {
		t.Errorf("a sign-in code used as a lost-key code: %v, want ErrCodeInvalid", err)
	}
	if _, err := s.Identify(ctx, key, mustAddr(t, "192.0.2.1")); err != nil {
		t.Errorf("the API key after a sign-in code was tried as a lost-key code: %v", err)
	}
}

// TestSigninWrongCodeBurns is an attack: guessing codes. CodeAttempts
// wrong codes burn the pending one, so the right code then fails too.
func TestSigninWrongCodeBurns(t *testing.T) { forBackends(t, testSigninWrongCodeBurns) }

func testSigninWrongCodeBurns(t *testing.T, b backend) {
	_, open := b.start(t)
	s := open().(signinStore)
	si := mustStartSignin(t, s, "guess@example.com")
	wrong := "12345678"
	if si.Code == wrong {
		wrong = "87654321"
	}
	for i := range CodeAttempts {
		if _, err := s.VerifySignin(ctx, "guess@example.com", wrong); !errors.Is(err, ErrCodeInvalid) {
			t.Fatalf("wrong code %d: %v, want ErrCodeInvalid", i+1, err)
		}
	}
	if _, err := s.VerifySignin(ctx, "guess@example.com", si.Code); !errors.Is(err, ErrCodeInvalid) {
		t.Errorf("the right code after %d wrong ones: %v, want ErrCodeInvalid", CodeAttempts, err)
	}
}

// TestSigninNewMailbox: a new mailbox gets a registered account whose key
// was never shown; a second sign-in finds the same account; the code works
// once.
func TestSigninNewMailbox(t *testing.T) { forBackends(t, testSigninNewMailbox) }

func testSigninNewMailbox(t *testing.T, b backend) {
	_, open := b.start(t)
	s := open().(signinStore)
	si := mustStartSignin(t, s, "new@example.com")
	if si.Known || si.To != "new@example.com" {
		t.Errorf("sign-in code for a new mailbox: %+v", si)
	}
	rec, err := s.VerifySignin(ctx, "new@example.com", si.Code)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Tier != Registered || rec.Email != "new@example.com" || !rec.NoKeyShown {
		t.Errorf("new account %+v, want registered, new@example.com, no key shown", rec)
	}
	if _, err := s.VerifySignin(ctx, "new@example.com", si.Code); !errors.Is(err, ErrCodeInvalid) {
		t.Errorf("a used sign-in code: %v, want ErrCodeInvalid", err)
	}
	si = mustStartSignin(t, s, "new+again@example.com")
	again, err := s.VerifySignin(ctx, "new@example.com", si.Code)
	if err != nil || again.ID != rec.ID {
		t.Errorf("second sign-in: %+v, %v; want account %s", again, err, rec.ID)
	}
	// A sign-up code does not sign in: it is a wrong code here.
	su := mustStart(t, s, "other@example.com")
	if _, err := s.VerifySignin(ctx, "other@example.com", su.Code); !errors.Is(err, ErrCodeInvalid) {
		t.Errorf("a sign-up code used to sign in: %v, want ErrCodeInvalid", err)
	}
	// Registration finds the mailbox taken by the signed-in account.
	if _, _, err := s.CreateKey(ctx, Registered, "new@example.com", time.Time{}); !errors.Is(err, ErrEmailTaken) {
		t.Errorf("creating a key for a signed-in mailbox: %v, want ErrEmailTaken", err)
	}
}

// TestSigninAllowances: signing in to a known mailbox takes from the
// sign-in allowance of the address, not from its registrations; a new
// mailbox takes a registration.
func TestSigninAllowances(t *testing.T) { forBackends(t, testSigninAllowances) }

func testSigninAllowances(t *testing.T, b backend) {
	_, open := b.start(t, func(o *Options) { o.RegistrationsPerAddressPerDay, o.SigninsPerAddressPerDay = 2, 4 })
	s := open().(signinStore)
	client := mustAddr(t, "198.51.100.7")
	var known []string
	for _, email := range []string{"k1@example.com", "k2@example.com", "k3@example.com", "k4@example.com", "k5@example.com"} {
		if _, _, err := s.CreateKey(ctx, Registered, email, time.Time{}); err != nil {
			t.Fatal(err)
		}
		known = append(known, email)
	}
	for i, email := range known[:4] {
		if _, err := s.StartSignin(ctx, email, client); err != nil {
			t.Fatalf("sign-in %d to a known mailbox: %v", i+1, err)
		}
	}
	if _, err := s.StartSignin(ctx, known[4], client); !errors.Is(err, ErrTooManyRegistrations) {
		t.Errorf("sign-in 5 with an allowance of 4: %v, want a refusal", err)
	}
	// The registrations of the address are untouched.
	for i, email := range []string{"n1@example.com", "n2@example.com"} {
		if _, err := s.StartSignin(ctx, email, client); err != nil {
			t.Fatalf("sign-in %d of a new mailbox: %v", i+1, err)
		}
	}
	if _, err := s.StartSignup(ctx, "n3@example.com", client); !errors.Is(err, ErrTooManyRegistrations) {
		t.Errorf("a third registration with an allowance of 2: %v, want a refusal", err)
	}
}
