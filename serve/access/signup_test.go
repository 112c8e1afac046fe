package access

import (
	"errors"
	"testing"
	"time"
)

func mustStart(tb testing.TB, s accountStore, email string) Signup {
	tb.Helper()
	su, err := s.StartSignup(ctx, email, mustAddr(tb, "192.0.2.1"))
	if err != nil {
		tb.Fatalf("StartSignup(%q): %v", email, err)
	}
	return su
}

func TestSignup(t *testing.T) { forBackends(t, testSignup) }

func testSignup(t *testing.T, b backend) {
	clk, open := b.start(t)
	s := open()
	su := mustStart(t, s, "Ann+kwdata@Example.com")
	if len(su.Code) != CodeDigits || su.Replaces || su.Email != "ann+kwdata@example.com" || !su.Expires.Equal(clk.Now().Add(CodeTTL)) {
		t.Fatalf("signup = %+v", su)
	}
	wrong := "00000000"
	if su.Code == wrong {
		wrong = "11111111"
	}
	if _, _, err := s.VerifySignup(ctx, "ann+kwdata@example.com", wrong); !errors.Is(err, ErrCodeInvalid) {
		t.Errorf("wrong code: %v, want ErrCodeInvalid", err)
	}
	// The code belongs to the mailbox, whatever +tag or case it is sent with.
	key, rec, err := s.VerifySignup(ctx, "ANN@example.com", su.Code)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Tier != Registered || rec.Email != "ann+kwdata@example.com" {
		t.Errorf("record = %+v", rec)
	}
	if c := mustIdentify(t, s, key, mustAddr(t, "192.0.2.1")); c.KeyID != rec.ID {
		t.Errorf("new key identified as %+v", c)
	}
	if _, _, err := s.VerifySignup(ctx, "ann@example.com", su.Code); !errors.Is(err, ErrCodeInvalid) {
		t.Errorf("a used code: %v, want ErrCodeInvalid", err)
	}

	// A registered mailbox gets a code too; it replaces the key, keeping
	// the account and its count.
	use(t, s, mustIdentify(t, s, key, mustAddr(t, "192.0.2.1")), 9)
	su = mustStart(t, s, "ann@example.com")
	if !su.Replaces {
		t.Error("a code for a registered mailbox does not say it replaces the key")
	}
	key2, rec2, err := s.VerifySignup(ctx, "ann@example.com", su.Code)
	if err != nil {
		t.Fatal(err)
	}
	if rec2.ID != rec.ID || key2 == key {
		t.Errorf("recovery gave %+v (key changed: %v), want account %s", rec2, key2 != key, rec.ID)
	}
	if _, err := s.Identify(ctx, key, mustAddr(t, "192.0.2.1")); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("the replaced key: %v, want ErrInvalidKey", err)
	}
	if got := remaining(t, s, mustIdentify(t, s, key2, mustAddr(t, "192.0.2.1"))); got != 491 {
		t.Errorf("remaining after recovery = %d, want 491", got)
	}
	if list, _ := s.ListKeys(ctx); len(list) != 1 {
		t.Errorf("%d accounts after a recovery, want 1", len(list))
	}
}

func TestSignupCodeLimits(t *testing.T) { forBackends(t, testSignupCodeLimits) }

func testSignupCodeLimits(t *testing.T, b backend) {
	clk, open := b.start(t, func(o *Options) { o.RegistrationsPerAddressPerDay = 100 })
	s := open()

	// Expiry.
	su := mustStart(t, s, "exp@example.com")
	clk.Add(CodeTTL)
	if _, _, err := s.VerifySignup(ctx, "exp@example.com", su.Code); !errors.Is(err, ErrCodeInvalid) {
		t.Errorf("expired code: %v, want ErrCodeInvalid", err)
	}

	// Attempts: the right code after CodeAttempts wrong ones is refused,
	// across a restart.
	su = mustStart(t, s, "try@example.com")
	wrong := "99999999"
	if su.Code == wrong {
		wrong = "88888888"
	}
	for range CodeAttempts - 1 {
		if _, _, err := s.VerifySignup(ctx, "try@example.com", wrong); !errors.Is(err, ErrCodeInvalid) {
			t.Fatal(err)
		}
	}
	s.Close()
	s = open()
	if _, _, err := s.VerifySignup(ctx, "try@example.com", wrong); !errors.Is(err, ErrCodeInvalid) {
		t.Fatal(err)
	}
	if _, _, err := s.VerifySignup(ctx, "try@example.com", su.Code); !errors.Is(err, ErrCodeInvalid) {
		t.Errorf("right code after %d wrong ones: %v, want ErrCodeInvalid", CodeAttempts, err)
	}
	// A new code starts over; only the latest works.
	old := mustStart(t, s, "try@example.com")
	su = mustStart(t, s, "try@example.com")
	if old.Code != su.Code {
		if _, _, err := s.VerifySignup(ctx, "try@example.com", old.Code); !errors.Is(err, ErrCodeInvalid) {
			t.Errorf("a superseded code: %v", err)
		}
	}
	if _, _, err := s.VerifySignup(ctx, "try@example.com", su.Code); err != nil {
		t.Errorf("the latest code: %v", err)
	}

	// At most CodesPerMailboxPerDay codes a mailbox a day.
	var err error
	for range CodesPerMailboxPerDay + 1 {
		_, err = s.StartSignup(ctx, "flood@example.com", mustAddr(t, "192.0.2.1"))
	}
	var qe *QuotaError
	if !errors.Is(err, ErrTooManyRegistrations) || !errors.As(err, &qe) || qe.RetryAfter <= 0 {
		t.Errorf("code %d to one mailbox: %v, want ErrTooManyRegistrations", CodesPerMailboxPerDay+1, err)
	}
	clk.Add(24 * time.Hour)
	if _, err := s.StartSignup(ctx, "flood+x@example.com", mustAddr(t, "192.0.2.1")); err != nil {
		t.Errorf("the next day: %v", err)
	}
	if _, err := s.StartSignup(ctx, "not an email", mustAddr(t, "192.0.2.1")); !errors.Is(err, ErrInvalidEmail) {
		t.Errorf("bad address: %v", err)
	}
}

func TestSignupPerAddressLimit(t *testing.T) { forBackends(t, testSignupPerAddressLimit) }

func testSignupPerAddressLimit(t *testing.T, b backend) {
	_, open := b.start(t)
	s := open()
	client := mustAddr(t, "2001:db8:5::1")
	for i, email := range []string{"a@example.com", "b@example.com", "c@example.com"} {
		if _, err := s.StartSignup(ctx, email, client); err != nil {
			t.Fatalf("code %d: %v", i+1, err)
		}
	}
	if _, err := s.StartSignup(ctx, "d@example.com", mustAddr(t, "2001:db8:5::2")); !errors.Is(err, ErrTooManyRegistrations) {
		t.Errorf("fourth code from one /64: %v, want ErrTooManyRegistrations", err)
	}
}

// TestRotateKey: the new key carries the account; the old one is refused.
func TestRotateKey(t *testing.T) { forBackends(t, testRotateKey) }

func testRotateKey(t *testing.T, b backend) {
	clk, open := b.start(t)
	s := open()
	client := mustAddr(t, "192.0.2.1")
	until := clk.Now().AddDate(0, 2, 0)
	paid, prec := mustCreate(t, s, Paid, until)
	reg, rrec := mustCreate(t, s, Registered, time.Time{})
	use(t, s, mustIdentify(t, s, reg, client), 40)
	use(t, s, mustIdentify(t, s, paid, client), 7)

	for _, tc := range []struct {
		name string
		key  string
		rec  KeyRecord
	}{{"registered", reg, rrec}, {"paid", paid, prec}} {
		t.Run(tc.name, func(t *testing.T) {
			fresh, rec, err := s.RotateKey(ctx, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			if rec.ID != tc.rec.ID || rec.Tier != tc.rec.Tier || !rec.PaidUntil.Equal(tc.rec.PaidUntil) || fresh == tc.key {
				t.Errorf("rotated %+v into %+v", tc.rec, rec)
			}
			if _, err := s.Identify(ctx, tc.key, client); !errors.Is(err, ErrInvalidKey) {
				t.Errorf("old key after rotation: %v", err)
			}
			c := mustIdentify(t, s, fresh, client)
			if c.KeyID != tc.rec.ID || c.Tier != tc.rec.Tier {
				t.Errorf("new key identified as %+v", c)
			}
			if _, _, err := s.RotateKey(ctx, tc.key); !errors.Is(err, ErrInvalidKey) {
				t.Errorf("rotating the old key again: %v", err)
			}
		})
	}
	list, _ := s.ListKeys(ctx)
	if len(list) != 2 || list[0].Lookups != 7 || list[1].Lookups != 40 {
		t.Errorf("after rotation: %+v; want the counts kept", list)
	}
	if err := s.RevokeKey(ctx, rrec.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.RotateKey(ctx, newKey()); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("rotating an unknown key: %v", err)
	}
}
