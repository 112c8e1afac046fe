package access

import (
	"fmt"
	"net/mail"
	"strings"
	"unicode"
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
