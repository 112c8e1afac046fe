package api

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/serve/web"
)

// CSV downloads. Accept: text/csv (or format=csv in the query string, which
// a download link can carry and a header cannot) makes POST /v1/keywords,
// GET /v1/keyword and GET /v1/intent answer RFC 4180 CSV: a header row,
// UTF-8, CRLF line ends, one row a keyword (a member, for a group), values
// written as the JSON writes them and a missing (null) value empty. JSON
// has no infinity; CSV has no sibling flag field, so a change that rose
// from zero (JSON: null with *_from_zero) is written "inf", which pandas
// and DuckDB read as infinity. Trends and related keywords stay in the
// JSON: a row holds the record's own numbers.

// contentTypeCSV is the Content-Type of CSV answers.
var contentTypeCSV = []string{"text/csv; charset=utf-8; header=present"}

// wantsCSV reports whether the request asks for CSV: format=csv, or an
// Accept that ranks text/csv above application/json (a missing q counts 1).
func wantsCSV(r *http.Request) bool {
	// The keyword lookup is the hot path: only a request that names CSV
	// somewhere pays for parsing.
	if strings.Contains(r.URL.RawQuery, "format=") {
		if f, _, _ := web.QueryValue(r.URL.RawQuery, "format"); f == "csv" {
			return true
		}
	}
	accept := r.Header["Accept"] // canonical already: no key to canonicalize on the hot path
	named := false
	for _, a := range accept {
		named = named || strings.Contains(a, "text/csv")
	}
	if !named {
		return false
	}
	csvQ, jsonQ := -1.0, -1.0
	for _, field := range accept {
		for _, part := range strings.Split(field, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			q := 1.0
			if s, ok := params["q"]; ok {
				if v, err := strconv.ParseFloat(s, 64); err == nil {
					q = v
				}
			}
			switch mt {
			case "text/csv":
				csvQ = max(csvQ, q)
			case "application/json", "application/*", "*/*":
				jsonQ = max(jsonQ, q)
			}
		}
	}
	return csvQ > 0 && csvQ > jsonQ
}

// csvHeaderKeyword is the header row of keyword records.
var csvHeaderKeyword = []string{"query", "status", "keyword", "country", "volume", "volume_range", "cpc", "competition", "yoy", "three_month", "updated", "intent", "error_code", "error"}

// csvChange writes a change as the JSON does, "inf" for one from zero.
func csvChange(v *float64) string {
	switch {
	case v == nil || math.IsNaN(*v) || math.IsInf(*v, -1):
		return ""
	case math.IsInf(*v, 1):
		return "inf"
	}
	return string(web.AppendPercent(nil, *v))
}

func csvInt(v *int64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatInt(*v, 10)
}

func csvCents(v *int64) string {
	if v == nil {
		return ""
	}
	return string(web.AppendHundredths(nil, web.MicrosToCents(*v)))
}

// keywordRow is one record as a CSV row.
func keywordRow(query string, e *kw.Entry, country, updated string) []string {
	comp := ""
	if e.Competition != nil {
		comp = string(web.AppendHundredths(nil, web.CompetitionHundredths(*e.Competition)))
	}
	return []string{query, "200", e.Keyword, country, csvInt(e.Volume), e.VolumeRange, csvCents(e.CPCMicros), comp,
		csvChange(e.YoYChange), csvChange(e.ThreeMonthChange), updated, e.Intent, "", ""}
}

// csvNumeric names the columns that hold numbers, written as the JSON
// writes them: a negative change stays a number a spreadsheet can sum.
// Every other column is text (see csvText).
var csvNumeric = map[string]bool{"status": true, "volume": true, "cpc": true, "competition": true, "yoy": true, "three_month": true}

// csvText makes a text cell read as text in a spreadsheet. Keywords,
// intents and volume ranges come from ingested files, and Excel, Sheets
// and LibreOffice run a cell that begins with =, +, -, @, tab or carriage
// return as a formula (=HYPERLINK("http://…"&A1,…), +cmd|' /C calc'!A0):
// such a cell gets a leading apostrophe, OWASP's rule against CSV
// injection. "-1 squared" then reads as the text it is.
func csvText(s string) string {
	if s != "" && strings.IndexByte("=+-@\t\r", s[0]) >= 0 {
		return "'" + s
	}
	return s
}

// writeCSV renders rows as RFC 4180 CSV (CRLF line ends). rows[0] is the
// header row; every cell of a column it does not name in csvNumeric goes
// through csvText, so a text column added later is safe by default.
func writeCSV(rows [][]string) []byte {
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	cw.UseCRLF = true
	var numeric []bool
	if len(rows) > 0 {
		numeric = make([]bool, len(rows[0]))
		for i, name := range rows[0] {
			numeric[i] = csvNumeric[name]
		}
	}
	var cells []string
	for _, row := range rows {
		cells = cells[:0]
		for i, v := range row {
			if i >= len(numeric) || !numeric[i] {
				v = csvText(v)
			}
			cells = append(cells, v)
		}
		_ = cw.Write(cells) // a bytes.Buffer does not fail
	}
	cw.Flush()
	return buf.Bytes()
}

// appendBulkCSV is the CSV of a bulk answer: one row per keyword in
// request order, a failed one with its status and problem.
func appendBulkCSV(items []web.BulkItem, country string, info kw.IndexInfo) []byte {
	rows := [][]string{csvHeaderKeyword}
	for i := range items {
		it := &items[i]
		if it.Err == nil {
			rows = append(rows, keywordRow(it.Query, &it.Entry, country, web.DataDate(&it.Entry, info)))
			continue
		}
		he := web.Classify(it.Err)
		rows = append(rows, []string{it.Query, strconv.Itoa(he.Status), it.Q, country, "", "", "", "", "", "", "", "", he.Code, he.Msg})
	}
	return writeCSV(rows)
}

// csvHeaderGroup is the header row of intent group members.
var csvHeaderGroup = []string{"leader", "keyword", "volume", "cpc", "overlap", "country", "updated"}

// appendIntentCSV is the CSV of an intent group: one row per member.
func appendIntentCSV(g *kw.IntentGroup) []byte {
	rows := [][]string{csvHeaderGroup}
	for _, m := range g.Members {
		rows = append(rows, []string{g.Leader, m.Keyword, csvInt(m.Volume), csvCents(m.CPCMicros), fmt.Sprintf("%d/20", m.Overlap), g.Country, g.DataDate})
	}
	return writeCSV(rows)
}

// writeCSVDownload writes a CSV answer with a file name for browsers.
func writeCSVDownload(w http.ResponseWriter, r *http.Request, name string, body []byte) error {
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	w.Header().Set("Vary", "Accept")
	return web.WriteBody(w, r, contentTypeCSV, body)
}

// csvName is a download's file name: kwdata-<what>-<keyword>-<cc>.csv with
// the keyword reduced to letters, digits and dashes.
func csvName(what, keyword, country string) string {
	var b strings.Builder
	for _, c := range keyword {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b.WriteRune(c)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
		if b.Len() >= 60 {
			break
		}
	}
	k := strings.Trim(b.String(), "-")
	if k == "" {
		k = "keyword"
	}
	return fmt.Sprintf("kwdata-%s-%s-%s.csv", what, k, strings.ToLower(country))
}
