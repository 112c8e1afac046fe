package kw

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNormalizeKeyword(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		err      error
	}{
		{"Running Shoes", "running shoes", nil},
		{"  running \t\n  shoes  ", "running shoes", nil},
		{"RUNNING\u00a0SHOES", "running shoes", nil}, // no-break space is white space
		{"ｒｕｎｎｉｎｇ　ｓｈｏｅｓ", "running shoes", nil},      // full-width letters and ideographic space (NFKC)
		{"Straße", "straße", nil},                    // lower case keeps ß
		{"ÄPFEL", "äpfel", nil},
		{"ﬁsh", "fish", nil},                // ligature decomposes under NFKC
		{"café", "café", nil},               // combining accent composes
		{"ΟΔΟΣ ΣΟΦΙΑΣ", "οδος σοφιας", nil}, // final sigma before a space and at the end
		{"ΣΊΣΥΦΟΣ", "σίσυφος", nil},
		{"İSTANBUL", "i\u0307stanbul", nil}, // full lower case keeps the dot above
		{"", "", ErrKeywordEmpty},
		{" \t ", "", ErrKeywordEmpty},
		{strings.Repeat("a", 80), strings.Repeat("a", 80), nil},
		{strings.Repeat("a", 81), "", ErrKeywordTooLong},
		{strings.Repeat("é", 80), strings.Repeat("é", 80), nil}, // characters, not bytes
		{"a b c d e f g h i j", "a b c d e f g h i j", nil},
		{"a b c d e f g h i j k", "a b c d e f g h i j k", nil}, // no word limit: real exports hold longer ideas
		{"tipo de aceite para autos de más de 100 mil kilómetros", "tipo de aceite para autos de más de 100 mil kilómetros", nil},
		{"bad \xff utf8", "", ErrKeywordInvalid},
	} {
		got, err := NormalizeKeyword(tc.in)
		if !errors.Is(err, tc.err) || got != tc.want {
			t.Errorf("NormalizeKeyword(%q) = %q, %v; want %q, %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func FuzzNormalizeKeyword(f *testing.F) {
	for _, s := range []string{"Running Shoes", "running shoes", "a  b", "a\tb", "a b ", strings.Repeat("a ", 40) + "a", " a\u00a0b ", "ｒｕｎ", "İstanbul", "ΣΊΣΥΦΟΣ", "\xff", strings.Repeat("ab ", 30)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := NormalizeKeyword(s)
		// The ASCII fast path answers exactly as the general one.
		slow, slowErr := normalizeKeyword(s)
		if got != slow || (err == nil) != (slowErr == nil) {
			t.Fatalf("NormalizeKeyword(%q) = %q, %v; the general path gives %q, %v", s, got, err, slow, slowErr)
		}
		if err != nil {
			return
		}
		if !utf8.ValidString(got) || got != strings.TrimSpace(got) || strings.Contains(got, "  ") {
			t.Fatalf("NormalizeKeyword(%q) = %q is not normalized", s, got)
		}
		if n := utf8.RuneCountInString(got); n > MaxKeywordChars {
			t.Fatalf("NormalizeKeyword(%q) = %q exceeds the limits", s, got)
		}
		again, err := NormalizeKeyword(got)
		if err != nil || again != got {
			t.Fatalf("not idempotent: %q -> %q -> %q (%v)", s, got, again, err)
		}
	})
}
