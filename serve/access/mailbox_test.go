package access

import (
	"errors"
	"testing"
	"time"
)

// internationalSpellings are pairs of addresses of one mailbox: a domain
// in Unicode and in punycode (IDNA), in upper and lower case, and a local
// part composed (NFC) and decomposed (NFD).
var internationalSpellings = [][2]string{
	{"ann@bücher.example", "ann@xn--bcher-kva.example"},
	{"ann@BÜCHER.example", "ann@xn--bcher-kva.example"},
	{"jos\u00e9@corp.test", "jose\u0301@corp.test"},
	{"JOS\u00c9@corp.test", "jose\u0301@corp.test"},
	{"jos\u00e9@bücher.example", "jose\u0301@XN--BCHER-KVA.example"},
}

// TestFoldInternationalEmail: the spellings of one mailbox fold alike.
func TestFoldInternationalEmail(t *testing.T) {
	for _, p := range internationalSpellings {
		a, err := NormalizeEmail(p[0])
		if err != nil {
			t.Fatalf("NormalizeEmail(%q): %v", p[0], err)
		}
		b, err := NormalizeEmail(p[1])
		if err != nil {
			t.Fatalf("NormalizeEmail(%q): %v", p[1], err)
		}
		if FoldEmail(a) != FoldEmail(b) {
			t.Errorf("FoldEmail(%+q) = %+q but FoldEmail(%+q) = %+q: one mailbox, two accounts", a, FoldEmail(a), b, FoldEmail(b))
		}
	}
	if FoldEmail("ann@bücher.example") == FoldEmail("ann@bucher.example") {
		t.Error("bücher.example and bucher.example fold alike; they are two domains")
	}
}

// TestOneAccountPerInternationalMailbox: an account made with one spelling
// holds the mailbox against the other, for the operator and for sign-up.
func TestOneAccountPerInternationalMailbox(t *testing.T) {
	forBackends(t, testOneAccountPerInternationalMailbox)
}

func testOneAccountPerInternationalMailbox(t *testing.T, b backend) {
	_, open := b.start(t, func(o *Options) { o.RegistrationsPerAddressPerDay = 100 })
	s := open()
	for _, i := range []int{0, 2, 4} { // three mailboxes
		p := internationalSpellings[i]
		if _, _, err := s.CreateKey(ctx, Registered, p[0], time.Time{}); err != nil {
			t.Fatalf("CreateKey(%q): %v", p[0], err)
		}
		if _, _, err := s.CreateKey(ctx, Registered, p[1], time.Time{}); !errors.Is(err, ErrEmailTaken) {
			t.Errorf("CreateKey(%+q) after %+q: %v, want ErrEmailTaken", p[1], p[0], err)
		}
		if su := mustStart(t, s, p[1]); !su.Replaces {
			t.Errorf("a code for %+q after an account of %+q does not replace its key", p[1], p[0])
		}
	}
}

// TestLostKeyCodeGoesToTheAccount: a code asked for another spelling of a
// mailbox that has an account is mailed to the account's own address,
// while the answer keeps the address asked for; a new mailbox's code goes
// where it was asked.
func TestLostKeyCodeGoesToTheAccount(t *testing.T) { forBackends(t, testLostKeyCodeGoesToTheAccount) }

func testLostKeyCodeGoesToTheAccount(t *testing.T, b backend) {
	_, open := b.start(t)
	s := open()
	if _, _, err := s.CreateKey(ctx, Registered, "Ann@corp.test", time.Time{}); err != nil {
		t.Fatal(err)
	}
	su := mustStart(t, s, "ann+x@corp.test")
	if !su.Replaces || su.To != "ann@corp.test" || su.Email != "ann+x@corp.test" {
		t.Errorf("a code for ann+x@ with an account of ann@: %+v, want it mailed to ann@corp.test", su)
	}
	su = mustStart(t, s, "bob+x@corp.test")
	if su.Replaces || su.To != "bob+x@corp.test" {
		t.Errorf("a code for a new mailbox: %+v, want it mailed to bob+x@corp.test", su)
	}
}
