package oauth

import (
	"strings"
	"testing"
)

func TestVerifyPKCE(t *testing.T) {
	// RFC 7636 appendix B.
	const verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	const challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
	for _, tc := range []struct {
		name, verifier, challenge string
		ok                        bool
	}{
		{"RFC 7636 example", verifier, challenge, true},
		{"wrong verifier", verifier[:42] + "a", challenge, false},
		{"plain method (verifier as challenge)", verifier, verifier, false},
		{"empty verifier", "", challenge, false},
		{"empty challenge", verifier, "", false},
		{"short verifier", "abc", "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0", false},
		{"long verifier", strings.Repeat("a", 129), challenge, false},
		{"verifier outside the alphabet", strings.Repeat("a", 42) + "+", challenge, false},
	} {
		if got := verifyPKCE(tc.verifier, tc.challenge); got != tc.ok {
			t.Errorf("%s: verifyPKCE = %v, want %v", tc.name, got, tc.ok)
		}
	}
	for _, tc := range []struct {
		challenge string
		ok        bool
	}{
		{challenge, true},
		{challenge[:42], false},
		{challenge + "A", false},
		{strings.Repeat("=", 43), false},
		{"", false},
	} {
		if got := validChallenge(tc.challenge); got != tc.ok {
			t.Errorf("validChallenge(%q) = %v, want %v", tc.challenge, got, tc.ok)
		}
	}
}
