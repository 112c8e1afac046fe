package kw

import (
	"sort"
	"strings"
)

// Country is a supported market: its ISO 3166-1 alpha-2 code and the Google
// Ads constants that address it.
type Country struct {
	Code         string // ISO 3166-1 alpha-2, upper case ("US").
	Name         string // English short name ("United States").
	GeoTarget    int64  // Google Ads geo target constant: 2000 + ISO numeric code.
	Language     int64  // Google Ads language constant of the default language.
	LanguageCode string // ISO 639-1 code of the default language ("en").
	LanguageName string // English name of the default language ("English").
}

// Language constants of Google Ads (languageConstants/<id>).
var languages = map[string]struct {
	id   int64
	name string
}{
	"en": {1000, "English"}, "de": {1001, "German"}, "fr": {1002, "French"},
	"es": {1003, "Spanish"}, "it": {1004, "Italian"}, "ja": {1005, "Japanese"},
	"da": {1009, "Danish"}, "nl": {1010, "Dutch"}, "fi": {1011, "Finnish"},
	"ko": {1012, "Korean"}, "no": {1013, "Norwegian"}, "pt": {1014, "Portuguese"},
	"sv": {1015, "Swedish"}, "zh-CN": {1017, "Chinese (simplified)"},
	"zh-TW": {1018, "Chinese (traditional)"}, "ar": {1019, "Arabic"},
	"bg": {1020, "Bulgarian"}, "cs": {1021, "Czech"}, "el": {1022, "Greek"},
	"hi": {1023, "Hindi"}, "hu": {1024, "Hungarian"}, "id": {1025, "Indonesian"},
	"is": {1026, "Icelandic"}, "he": {1027, "Hebrew"}, "lv": {1028, "Latvian"},
	"lt": {1029, "Lithuanian"}, "pl": {1030, "Polish"}, "ru": {1031, "Russian"},
	"ro": {1032, "Romanian"}, "sk": {1033, "Slovak"}, "sl": {1034, "Slovenian"},
	"sr": {1035, "Serbian"}, "uk": {1036, "Ukrainian"}, "tr": {1037, "Turkish"},
	"hr": {1039, "Croatian"}, "vi": {1040, "Vietnamese"}, "et": {1043, "Estonian"},
	"th": {1044, "Thai"}, "bn": {1056, "Bengali"},
}

// countryRows is code, ISO numeric, default language, name.
var countryRows = []struct {
	code    string
	numeric int64
	lang    string
	name    string
}{
	{"AE", 784, "ar", "United Arab Emirates"}, {"AR", 32, "es", "Argentina"},
	{"AT", 40, "de", "Austria"}, {"AU", 36, "en", "Australia"},
	{"BD", 50, "bn", "Bangladesh"}, {"BE", 56, "nl", "Belgium"},
	{"BG", 100, "bg", "Bulgaria"}, {"BR", 76, "pt", "Brazil"},
	{"CA", 124, "en", "Canada"}, {"CH", 756, "de", "Switzerland"},
	{"CL", 152, "es", "Chile"}, {"CO", 170, "es", "Colombia"},
	{"CZ", 203, "cs", "Czechia"}, {"DE", 276, "de", "Germany"},
	{"DK", 208, "da", "Denmark"}, {"EC", 218, "es", "Ecuador"},
	{"EE", 233, "et", "Estonia"}, {"EG", 818, "ar", "Egypt"},
	{"ES", 724, "es", "Spain"}, {"FI", 246, "fi", "Finland"},
	{"FR", 250, "fr", "France"}, {"GB", 826, "en", "United Kingdom"},
	{"GR", 300, "el", "Greece"}, {"HK", 344, "zh-TW", "Hong Kong"},
	{"HR", 191, "hr", "Croatia"}, {"HU", 348, "hu", "Hungary"},
	{"ID", 360, "id", "Indonesia"}, {"IE", 372, "en", "Ireland"},
	{"IL", 376, "he", "Israel"}, {"IN", 356, "en", "India"},
	{"IS", 352, "is", "Iceland"}, {"IT", 380, "it", "Italy"},
	{"JP", 392, "ja", "Japan"}, {"KE", 404, "en", "Kenya"},
	{"KR", 410, "ko", "South Korea"}, {"LT", 440, "lt", "Lithuania"},
	{"LV", 428, "lv", "Latvia"}, {"MA", 504, "fr", "Morocco"},
	{"MX", 484, "es", "Mexico"}, {"MY", 458, "en", "Malaysia"},
	{"NG", 566, "en", "Nigeria"}, {"NL", 528, "nl", "Netherlands"},
	{"NO", 578, "no", "Norway"}, {"NZ", 554, "en", "New Zealand"},
	{"PE", 604, "es", "Peru"}, {"PH", 608, "en", "Philippines"},
	{"PK", 586, "en", "Pakistan"}, {"PL", 616, "pl", "Poland"},
	{"PT", 620, "pt", "Portugal"}, {"RO", 642, "ro", "Romania"},
	{"RS", 688, "sr", "Serbia"}, {"SA", 682, "ar", "Saudi Arabia"},
	{"SE", 752, "sv", "Sweden"}, {"SG", 702, "en", "Singapore"},
	{"SI", 705, "sl", "Slovenia"}, {"SK", 703, "sk", "Slovakia"},
	{"TH", 764, "th", "Thailand"}, {"TR", 792, "tr", "Turkey"},
	{"TW", 158, "zh-TW", "Taiwan"}, {"UA", 804, "uk", "Ukraine"},
	{"US", 840, "en", "United States"}, {"VN", 704, "vi", "Vietnam"},
	{"ZA", 710, "en", "South Africa"},
}

var countryByCode = func() map[string]Country {
	m := make(map[string]Country, len(countryRows))
	for _, r := range countryRows {
		l, ok := languages[r.lang]
		if !ok {
			panic("kw: country " + r.code + " names unknown language " + r.lang)
		}
		m[r.code] = Country{
			Code: r.code, Name: r.name, GeoTarget: 2000 + r.numeric,
			Language: l.id, LanguageCode: r.lang, LanguageName: l.name,
		}
	}
	return m
}()

// LookupCountry returns the supported country with the ISO code, in either
// case, and whether it is supported. A code is two ASCII letters, with
// ASCII white space around them at most: Unicode case mapping would
// take "uſ" (long s) for "US", so it is never applied.
func LookupCountry(code string) (Country, bool) {
	code = strings.Trim(code, " \t\r\n")
	if len(code) != 2 {
		return Country{}, false
	}
	// Every request names a country, most in lower case: upper-case the
	// two bytes in place rather than allocate a string for them. A byte
	// that is not an ASCII letter stays as it is and matches no code.
	b := [2]byte{asciiUpper(code[0]), asciiUpper(code[1])}
	c, ok := countryByCode[string(b[:])]
	return c, ok
}

func asciiUpper(b byte) byte {
	if 'a' <= b && b <= 'z' {
		return b - 'a' + 'A'
	}
	return b
}

// Countries returns every supported country, sorted by code.
func Countries() []Country {
	out := make([]Country, 0, len(countryByCode))
	for _, c := range countryByCode {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Code < out[j].Code })
	return out
}
