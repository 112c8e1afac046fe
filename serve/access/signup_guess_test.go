package access

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"testing"
	"time"
)

// TestSignupGuessOdds checks the documented bound: someone guessing codes
// for one mailbox for a year succeeds with a chance under 1 in 10,000.
func TestSignupGuessOdds(t *testing.T) {
	guesses := float64(CodeAttempts * CodesPerMailboxPerDay * 365)
	if p := guesses / math.Pow10(CodeDigits); p >= 1e-4 {
		t.Errorf("%v guesses a year against %d-digit codes succeed with chance %.2g, want under 1e-4", guesses, CodeDigits, p)
	}
	if CodeDigits < 6 || CodeDigits > 10 {
		t.Errorf("codes of %d digits; people and agents type 6 to 10", CodeDigits)
	}
	for range 100 {
		c := newCode()
		if _, err := strconv.ParseUint(c, 10, 64); err != nil || len(c) != CodeDigits {
			t.Fatalf("code %q is not %d digits", c, CodeDigits)
		}
	}
}

// TestSignupGuessesPerMailbox: a guesser with many client addresses still
// gets CodesPerMailboxPerDay codes a day for one mailbox, and
// CodeAttempts tries at each.
func TestSignupGuessesPerMailbox(t *testing.T) { forBackends(t, testSignupGuessesPerMailbox) }

func testSignupGuessesPerMailbox(t *testing.T, b backend) {
	_, open := b.start(t)
	s := open()
	const mailbox = "victim@example.com"
	codes := 0
	for i := range 40 {
		client := netip.AddrFrom4([4]byte{198, 51, 100, byte(i + 1)})
		su, err := s.StartSignup(ctx, mailbox, client)
		if errors.Is(err, ErrTooManyRegistrations) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		codes++
		n, _ := strconv.ParseUint(su.Code, 10, 64)
		for j := range CodeAttempts {
			wrong := fmt.Sprintf("%0*d", CodeDigits, (n+1+uint64(j))%uint64(math.Pow10(CodeDigits)))
			if _, _, err := s.VerifySignup(ctx, mailbox, wrong); !errors.Is(err, ErrCodeInvalid) {
				t.Fatalf("guess %d: %v, want ErrCodeInvalid", j, err)
			}
		}
		if _, _, err := s.VerifySignup(ctx, mailbox, su.Code); !errors.Is(err, ErrCodeInvalid) {
			t.Fatalf("the right code after %d wrong guesses from address %d: %v, want ErrCodeInvalid", CodeAttempts, i, err)
		}
	}
	if codes != CodesPerMailboxPerDay {
		t.Errorf("%d codes for one mailbox from 40 addresses in a day, want %d", codes, CodesPerMailboxPerDay)
	}
}

// TestSignupPerNetwork: the /48 allowance holds across many /64s, and one
// client address keeps its 3 sign-ups a day.
func TestSignupPerNetwork(t *testing.T) { forBackends(t, testSignupPerNetwork) }

func testSignupPerNetwork(t *testing.T, b backend) {
	clk, open := b.start(t)
	s := open()
	mail := 0
	signup := func(client string) error {
		t.Helper()
		mail++
		_, err := s.StartSignup(ctx, fmt.Sprintf("p%d@example.com", mail), mustAddr(t, client))
		if err != nil && !errors.Is(err, ErrTooManyRegistrations) {
			t.Fatal(err)
		}
		return err
	}
	ok := 0
	for i := range 40 {
		if signup(fmt.Sprintf("2001:db8:7:%x::1", i)) == nil {
			ok++
		}
	}
	if want := 10; ok != want {
		t.Errorf("%d sign-ups from 40 /64s of one /48 in a day, want %d", ok, want)
	}
	if err := signup("2001:db8:8::1"); err != nil {
		t.Errorf("another /48: %v", err)
	}
	for _, client := range []string{"192.0.2.77", "2001:db8:9::5"} {
		for i := range 3 {
			if err := signup(client); err != nil {
				t.Errorf("sign-up %d of the day from %s: %v", i+1, client, err)
			}
		}
		if err := signup(client); !errors.Is(err, ErrTooManyRegistrations) {
			t.Errorf("sign-up 4 of the day from %s: %v, want ErrTooManyRegistrations", client, err)
		}
	}
	// A new day, a new allowance for the /48.
	clk.Add(24 * time.Hour)
	if err := signup("2001:db8:7:ff::1"); err != nil {
		t.Errorf("the next day: %v", err)
	}
}
