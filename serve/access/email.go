package access

import (
	"fmt"
	"net/mail"
	"strings"
	"unicode"

	"golang.org/x/net/idna"
	"golang.org/x/text/unicode/norm"
)

// NormalizeEmail checks that s is a plain address such as name@example.com
// and returns it in lower case (the form used to find an email's keys). A
// display name ("Ann <ann@example.com>"), a comment, a quoted local part, a
// domain without a dot or an address longer than 254 bytes is refused with
// ErrInvalidEmail.
func NormalizeEmail(s string) (string, error) {
	s = strings.TrimSpace(s)
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("%w (%s)", ErrInvalidEmail, why)
	}
	if s == "" {
		return bad("it is empty")
	}
	if len(s) > 254 {
		return bad("it is longer than 254 bytes")
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s {
		return bad("it is not a plain name@domain address")
	}
	local, domain, ok := strings.Cut(s, "@")
	if !ok || local == "" || len(local) > 64 || strings.ContainsAny(local, "\"\\ ") {
		return bad("the part before @ is not valid")
	}
	if strings.ContainsRune(domain, '@') {
		return bad("it has more than one @")
	}
	labels := strings.Split(domain, ".")
	if len(labels) < 2 {
		return bad("the domain has no dot")
	}
	for _, l := range labels {
		if !validLabel(l) {
			return bad("the domain is not a host name")
		}
	}
	return strings.ToLower(s), nil
}

// validLabel accepts a DNS label of letters, digits and inner hyphens, or
// any non-ASCII (internationalized) text without spaces.
func validLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for _, r := range l {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-':
		case r > 0x7f && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)):
		default:
			return false
		}
	}
	return true
}

// FoldEmail returns the mailbox a normalized address delivers to, the
// form in which one active key per mailbox is enforced: the address in
// lower case, its local part composed (Unicode NFC) and without a "+tag"
// suffix, its domain in Unicode (IDNA, so that xn--bcher-kva.example is
// bücher.example), and for Gmail (gmail.com, googlemail.com) without the
// dots of the local part, which Gmail ignores, and with googlemail.com
// read as gmail.com. The stored email stays as given; only the uniqueness
// check folds. Empty stays empty.
func FoldEmail(email string) string {
	local, domain, ok := strings.Cut(email, "@")
	if !ok {
		return strings.ToLower(email)
	}
	local = strings.ToLower(norm.NFC.String(local))
	if u, err := idna.Lookup.ToUnicode(domain); err == nil {
		domain = u
	} else {
		// Not a valid IDNA name: no other spelling reaches it.
		domain = strings.ToLower(norm.NFC.String(domain))
	}
	if i := strings.IndexByte(local, '+'); i > 0 {
		local = local[:i]
	}
	if domain == "googlemail.com" {
		domain = "gmail.com"
	}
	if domain == "gmail.com" {
		local = strings.ReplaceAll(local, ".", "")
	}
	return local + "@" + domain
}
