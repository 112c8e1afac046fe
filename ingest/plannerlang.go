package ingest

import (
	"strings"
)

// plannerLanguage is what an export made with the planner's interface in
// one language writes in words: the competition levels and, where they
// differ from English, the headers of the two change columns. The other
// headers stay English in every language seen so far (the Korean
// interface translates only the change columns), and the change columns
// of a language without headers here are found by their position.
type plannerLanguage struct {
	code, name                string // ISO 639-1 code and English name
	low, medium, high, unknwn string // the Competition column's words
	threeMonth, yoy           string // change column headers; "" where not known
}

// plannerLanguages are the interface languages of the countries kwdata
// lists (kw.Countries), one row each. English, Spanish and Korean are
// checked against real exports; the other rows are the interface's words
// as published, and a word missing here costs nothing where the export
// has Competition (indexed value): the level follows from the index.
var plannerLanguages = []plannerLanguage{
	{code: "en", name: "English", low: "Low", medium: "Medium", high: "High", unknwn: "Unknown",
		threeMonth: colThreeMonth, yoy: colYoY},
	{code: "ko", name: "Korean", low: "낮음", medium: "중간", high: "높음", unknwn: "알 수 없음",
		threeMonth: "3개월간 변동", yoy: "전년 대비 변동"},
	{code: "es", name: "Spanish", low: "Bajo", medium: "Medio", high: "Alto", unknwn: "Desconocido"},
	{code: "pt", name: "Portuguese", low: "Baixa", medium: "Média", high: "Alta", unknwn: "Desconhecida"},
	{code: "fr", name: "French", low: "Faible", medium: "Moyenne", high: "Élevée", unknwn: "Inconnue"},
	{code: "de", name: "German", low: "Niedrig", medium: "Mittel", high: "Hoch", unknwn: "Unbekannt"},
	{code: "it", name: "Italian", low: "Bassa", medium: "Media", high: "Alta", unknwn: "Sconosciuta"},
	{code: "nl", name: "Dutch", low: "Laag", medium: "Gemiddeld", high: "Hoog", unknwn: "Onbekend"},
	{code: "ja", name: "Japanese", low: "低", medium: "中", high: "高", unknwn: "不明"},
	{code: "zh-CN", name: "Chinese (simplified)", low: "低", medium: "中", high: "高", unknwn: "未知"},
	{code: "zh-TW", name: "Chinese (traditional)", low: "低", medium: "中", high: "高", unknwn: "不明"},
	{code: "pl", name: "Polish", low: "Niska", medium: "Średnia", high: "Wysoka", unknwn: "Nieznana"},
	{code: "ru", name: "Russian", low: "Низкая", medium: "Средняя", high: "Высокая", unknwn: "Неизвестно"},
	{code: "uk", name: "Ukrainian", low: "Низька", medium: "Середня", high: "Висока", unknwn: "Невідомо"},
	{code: "tr", name: "Turkish", low: "Düşük", medium: "Orta", high: "Yüksek", unknwn: "Bilinmiyor"},
	{code: "sv", name: "Swedish", low: "Låg", medium: "Medel", high: "Hög", unknwn: "Okänd"},
	{code: "da", name: "Danish", low: "Lav", medium: "Middel", high: "Høj", unknwn: "Ukendt"},
	{code: "no", name: "Norwegian", low: "Lav", medium: "Middels", high: "Høy", unknwn: "Ukjent"},
	{code: "fi", name: "Finnish", low: "Matala", medium: "Keskitaso", high: "Korkea", unknwn: "Tuntematon"},
	{code: "is", name: "Icelandic", low: "Lág", medium: "Miðlungs", high: "Há", unknwn: "Óþekkt"},
	{code: "cs", name: "Czech", low: "Nízká", medium: "Střední", high: "Vysoká", unknwn: "Neznámá"},
	{code: "sk", name: "Slovak", low: "Nízka", medium: "Stredná", high: "Vysoká", unknwn: "Neznáma"},
	{code: "hu", name: "Hungarian", low: "Alacsony", medium: "Közepes", high: "Magas", unknwn: "Ismeretlen"},
	{code: "ro", name: "Romanian", low: "Scăzută", medium: "Medie", high: "Ridicată", unknwn: "Necunoscută"},
	{code: "bg", name: "Bulgarian", low: "Ниска", medium: "Средна", high: "Висока", unknwn: "Неизвестно"},
	{code: "el", name: "Greek", low: "Χαμηλός", medium: "Μέτριος", high: "Υψηλός", unknwn: "Άγνωστο"},
	{code: "hr", name: "Croatian", low: "Niska", medium: "Srednja", high: "Visoka", unknwn: "Nepoznato"},
	{code: "sr", name: "Serbian", low: "Низак", medium: "Средњи", high: "Висок", unknwn: "Непознато"},
	{code: "sl", name: "Slovenian", low: "Nizka", medium: "Srednja", high: "Visoka", unknwn: "Neznano"},
	{code: "et", name: "Estonian", low: "Madal", medium: "Keskmine", high: "Kõrge", unknwn: "Teadmata"},
	{code: "lv", name: "Latvian", low: "Zema", medium: "Vidēja", high: "Augsta", unknwn: "Nezināma"},
	{code: "lt", name: "Lithuanian", low: "Maža", medium: "Vidutinė", high: "Didelė", unknwn: "Nežinoma"},
	{code: "ar", name: "Arabic", low: "منخفضة", medium: "متوسطة", high: "مرتفعة", unknwn: "غير معروفة"},
	{code: "he", name: "Hebrew", low: "נמוכה", medium: "בינונית", high: "גבוהה", unknwn: "לא ידוע"},
	{code: "hi", name: "Hindi", low: "कम", medium: "मध्यम", high: "उच्च", unknwn: "अज्ञात"},
	{code: "bn", name: "Bengali", low: "কম", medium: "মাঝারি", high: "উচ্চ", unknwn: "অজানা"},
	{code: "id", name: "Indonesian", low: "Rendah", medium: "Sedang", high: "Tinggi", unknwn: "Tidak diketahui"},
	{code: "th", name: "Thai", low: "ต่ำ", medium: "ปานกลาง", high: "สูง", unknwn: "ไม่ทราบ"},
	{code: "vi", name: "Vietnamese", low: "Thấp", medium: "Trung bình", high: "Cao", unknwn: "Không xác định"},
}

// levelWords maps a folded competition word of any language to its level:
// "LOW", "MEDIUM", "HIGH", or "" for the words that say the planner does
// not know (English "Unknown", Korean "알 수 없음").
var levelWords = func() map[string]string {
	m := map[string]string{}
	for _, l := range plannerLanguages {
		for word, level := range map[string]string{l.low: "LOW", l.medium: "MEDIUM", l.high: "HIGH", l.unknwn: ""} {
			m[foldWord(word)] = level
		}
	}
	return m
}()

// changeHeaders maps a folded change column header of any language in
// plannerLanguages to the English one.
var changeHeaders = func() map[string]string {
	m := map[string]string{}
	for _, l := range plannerLanguages {
		if l.threeMonth != "" {
			m[foldWord(l.threeMonth)] = colThreeMonth
		}
		if l.yoy != "" {
			m[foldWord(l.yoy)] = colYoY
		}
	}
	return m
}()

// foldWord folds a cell for comparison with the table: lower case, runs
// of white space (a no-break space among them) made one space.
func foldWord(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}

// levelFromIndex is the planner's competition level of an index from 0
// to 100: Low below 34, Medium from 34 to 66, High from 67. The planner
// cuts at thirds of the unrounded value, so an index of 33 or 67 that it
// rounded is now and then the other level (TestCompetitionBandsRealExports).
func levelFromIndex(index int64) string {
	switch {
	case index < 34:
		return "LOW"
	case index < 67:
		return "MEDIUM"
	default:
		return "HIGH"
	}
}
