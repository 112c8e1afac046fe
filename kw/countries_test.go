package kw

import "testing"

func TestCountryTable(t *testing.T) {
	if n := len(Countries()); n < 55 {
		t.Fatalf("%d countries, the country table must hold at least 55", n)
	}
	for _, tc := range []struct {
		code      string
		geo, lang int64
	}{
		{"US", 2840, 1000}, {"us", 2840, 1000}, {"GB", 2826, 1000}, {"DE", 2276, 1001},
		{"JP", 2392, 1005}, {"BR", 2076, 1014}, {"FR", 2250, 1002}, {"ES", 2724, 1003},
	} {
		c, ok := LookupCountry(tc.code)
		if !ok {
			t.Errorf("%s is not supported", tc.code)
			continue
		}
		if c.GeoTarget != tc.geo || c.Language != tc.lang {
			t.Errorf("%s: geo %d lang %d, want %d %d", tc.code, c.GeoTarget, c.Language, tc.geo, tc.lang)
		}
	}
	if _, ok := LookupCountry("XX"); ok {
		t.Error("XX is supported")
	}
	seen := map[int64]string{}
	for i, c := range Countries() {
		if i > 0 && Countries()[i-1].Code >= c.Code {
			t.Fatal("Countries is not sorted by code")
		}
		if other, dup := seen[c.GeoTarget]; dup {
			t.Errorf("%s and %s share geo target %d", c.Code, other, c.GeoTarget)
		}
		seen[c.GeoTarget] = c.Code
		if c.GeoTarget <= 2000 || c.Language < 1000 || c.Name == "" || c.LanguageCode == "" {
			t.Errorf("%s has an incomplete row: %+v", c.Code, c)
		}
	}
}

func TestLookupCountryCase(t *testing.T) {
	for _, code := range []string{"us", "US", "uS", " us ", "Us"} {
		if c, ok := LookupCountry(code); !ok || c.Code != "US" {
			t.Errorf("LookupCountry(%q) = %q, %v; want US", code, c.Code, ok)
		}
	}
	for _, code := range []string{"", "u", "usa", "u\xffs", "ÜS", "zz", "u-",
		"uſ", "ſu", "uſ ", "\u00a0us", "ｕｓ", "us\x00", "ıd" /* dotless i: upper-cased by Unicode, it is "ID" */} {
		if c, ok := LookupCountry(code); ok {
			t.Errorf("LookupCountry(%q) = %q; want unsupported", code, c.Code)
		}
	}
	if n := testing.AllocsPerRun(100, func() { LookupCountry("de") }); n != 0 {
		t.Errorf("LookupCountry allocates %v times", n)
	}
}
