package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kwdata/kwdata/kw"
)

// Limits of the SERP reader.
const (
	// chunkSize is the size of the blocks of whole lines handed to the
	// parse goroutines: large enough to amortize the hand-off, small enough
	// to keep a few in flight.
	chunkSize = 4 << 20
	// maxSERPLine bounds one line; a longer one is a bad row.
	maxSERPLine = 64 << 20
	// formatProbeLines: when none of the first this many non-blank lines is
	// a SERP object, the file is refused without being read to the end.
	formatProbeLines = 100
)

// serpFormat is the FormatError of a file that is no SERP JSONL.
func serpFormat(name string) *FormatError {
	return &FormatError{File: name, Format: "SERP JSONL",
		Expected: `one JSON object a line like {"keyword": ..., "country": ..., "results": [{"rank": 1, "url": ...}]}`}
}

// serpLine is the shape of one SERP JSONL line.
type serpLine struct {
	Keyword *string      `json:"keyword"`
	Country string       `json:"country"`
	Results []serpResult `json:"results"`
}

type serpResult struct {
	Rank rank   `json:"rank"`
	URL  string `json:"url"`
}

// rank decodes a result's rank without failing its line: a rank that is
// not a positive integer (3, 3.0 or "3") leaves ok false, and the result is
// skipped. A result without a rank (or with a null one) leaves set false,
// and the result takes its position in the results array.
type rank struct {
	v   int32
	ok  bool
	set bool // the line gave a rank, valid or not
}

func (r *rank) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*r = rank{}
		return nil
	}
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		b = b[1 : len(b)-1]
	}
	r.v, r.ok = parseRank(string(b))
	r.set = true
	return nil
}

// ParseSERPJSONL reads SERP JSONL: one JSON object a line,
// {"keyword": "...", "country": "us", "results": [{"rank": 1, "url": "..."}]}.
// Blank lines are skipped; lines may be many megabytes long.
//
// For every accepted line, in file order, emit gets the normalized keyword
// and its rows: sorted by rank (ties keep their order), those ranked 1 to
// kw.MaxRank and at most kw.MaxRank of them (the rest are counted as
// truncated), each with its rank and its kw.URLKey. A result without a
// rank (or with a null one) is ranked by its 1-based position in the
// results array. A result whose rank is not a positive integer, or without
// a valid URL key, is dropped and counted as skipped, not the line; a line
// left without rows is still accepted. Duplicate URLs stay (overlap counts
// each key once). A line without a country is taken to be of the run's
// country. emit may keep rows. Lines are parsed in parallel, but emit and
// bad (which may be nil) are called from the calling goroutine only.
//
// A line that is not such an object, has an invalid keyword, or names
// another country than country (compared without case; "" accepts any) is
// a bad row. A file whose lines, or whose first formatProbeLines non-blank
// lines, hold no SERP object is refused with a *FormatError, and then
// neither emit nor bad has been called.
func ParseSERPJSONL(r io.Reader, name, country string, emit func(keyword string, rows []kw.SERPRow), bad func(BadRow)) (ParseStats, error) {
	var decodeErr error
	st, err := parseEncodedSERPs(r, name, country, func(key, payload []byte) {
		if emit == nil || decodeErr != nil {
			return
		}
		k := string(key)
		rows, err := decodeSERP(k, payload)
		if err != nil {
			decodeErr = err // cannot happen: the parser encoded it
			return
		}
		emit(k, rows)
	}, bad)
	return st, errors.Join(err, decodeErr)
}

// parseSERPs is ParseSERPJSONL with each SERP handed to emit encoded, as
// SERPWriter holds it: the keyword and the rows (see appendSERPRow), which
// are valid only during the call. Ingest takes this path: the parse
// goroutines encode, and no row becomes strings until it is written.
func parseEncodedSERPs(r io.Reader, name, country string, emit func(keyword, rows []byte), bad func(BadRow)) (ParseStats, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan *serpChunk)
	order := make(chan *serpChunk, 2*workers)
	var readErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(jobs)
		defer close(order)
		readErr = readChunks(ctx, r, jobs, order)
	})
	for range workers {
		wg.Go(func() {
			p := serpParser{country: country, name: name}
			for c := range jobs {
				c.res <- p.parse(c)
				putChunkBuf(c.buf)
			}
		})
	}
	defer func() {
		cancel()
		for range order { // let the reader finish; results are buffered
		}
		wg.Wait()
	}()

	var st ParseStats
	var pending []BadRow // bad rows held until the file is known to be SERP JSONL
	found, probed := false, 0
	for c := range order {
		res := <-c.res
		st.Lines += res.lines
		st.Records += res.records
		st.Bad += len(res.bad)
		st.SkippedResults += res.skipped
		st.Truncated += res.truncated
		if !found {
			if probed += res.before; probed >= formatProbeLines {
				return st, serpFormat(name)
			}
			found = res.found
			if !found {
				pending = append(pending, res.bad...)
				continue
			}
			for _, b := range pending {
				callBad(bad, b)
			}
			pending = nil
		}
		for _, b := range res.bad {
			callBad(bad, b)
		}
		st.Rows += res.rows
		for enc := res.enc; len(enc) > 0; {
			var key, payload []byte
			key, enc = cutRecord(enc)
			payload, enc = cutRecord(enc)
			if emit != nil {
				emit(key, payload)
			}
		}
		putEncBuf(res.enc)
	}
	cancel()
	wg.Wait()
	if readErr != nil {
		return st, fmt.Errorf("cannot read %s: %w", name, readErr)
	}
	if !found && st.Lines > 0 {
		return st, serpFormat(name)
	}
	return st, nil
}

func callBad(bad func(BadRow), b BadRow) {
	if bad != nil {
		bad(b)
	}
}

// serpChunk is a block of whole lines on its way to a parse goroutine.
type serpChunk struct {
	buf      []byte // pooled buffer behind data
	data     []byte
	line     int  // line number of the first line of data
	overlong bool // line `line` exceeded maxSERPLine and was skipped; data is empty
	res      chan chunkResult
}

// chunkResult is what a parse goroutine made of a chunk.
type chunkResult struct {
	enc                []byte // the SERPs, each a record (appendRecord) of its keyword and one of its rows
	records, rows      int
	bad                []BadRow
	lines              int
	skipped, truncated int
	found              bool // a line held a SERP object (even if rejected later)
	before             int  // non-blank lines before the first such line
}

var chunkPool = sync.Pool{New: func() any { b := make([]byte, chunkSize); return &b }}

// getChunkBuf returns a buffer of n bytes; full-size ones come from a pool.
func getChunkBuf(n int) []byte {
	if n < chunkSize {
		return make([]byte, n)
	}
	return (*chunkPool.Get().(*[]byte))[:chunkSize]
}

// encPool holds the buffers of encoded SERPs that parse goroutines fill
// and the reading goroutine empties: reused, they leave the garbage
// collector little to do while the SERPs held grow.
var encPool = sync.Pool{New: func() any { return new([]byte) }}

// getEncBuf returns an empty buffer for the SERPs of n bytes of JSON,
// which encoded take about two thirds of that.
func getEncBuf(n int) []byte {
	b := *encPool.Get().(*[]byte)
	return slices.Grow(b[:0], n*3/4)
}

func putEncBuf(b []byte) {
	if cap(b) > 0 {
		encPool.Put(&b)
	}
}

// firstChunk is the size of the first chunk; chunks double from it up to
// chunkSize, so that small files cost small buffers.
const firstChunk = 64 << 10

func putChunkBuf(b []byte) {
	if cap(b) == chunkSize {
		chunkPool.Put(&b)
	}
}

// readChunks cuts r into blocks of whole lines and sends each to order
// (which keeps file order) and to jobs (which any parse goroutine takes).
func readChunks(ctx context.Context, r io.Reader, jobs, order chan<- *serpChunk) error {
	send := func(c *serpChunk) bool {
		c.res = make(chan chunkResult, 1)
		select {
		case order <- c:
		case <-ctx.Done():
			return false
		}
		select {
		case jobs <- c:
			return true
		case <-ctx.Done():
			c.res <- chunkResult{}
			return false
		}
	}
	line := 1
	var carry []byte // start of a line that did not fit the last chunk
	discard := false // skipping the rest of an overlong line
	size := firstChunk
	buf := getChunkBuf(size)
	for {
		n := copy(buf, carry)
		carry = nil
		m, err := io.ReadFull(r, buf[n:])
		n += m
		eof := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if err != nil && !eof {
			return err
		}
		data := buf[:n]
		if discard {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				if eof {
					return nil
				}
				continue
			}
			discard = false
			data = buf[:copy(buf, data[i+1:])]
		}
		if eof && len(data) == 0 {
			return nil
		}
		cut := bytes.LastIndexByte(data, '\n') + 1
		if eof {
			cut = len(data)
		}
		if cut == 0 { // one line fills the buffer: grow it, or give up on the line
			if len(buf) >= maxSERPLine {
				if !send(&serpChunk{line: line, overlong: true}) {
					return nil
				}
				line++
				discard = true
				continue
			}
			carry = data
			buf = make([]byte, 2*len(buf))
			continue
		}
		c := &serpChunk{buf: buf, data: data[:cut], line: line}
		line += bytes.Count(c.data, []byte{'\n'})
		if !eof {
			size = min(2*size, chunkSize)
			next := getChunkBuf(size)
			if rest := len(data) - cut; rest >= len(next) {
				next = make([]byte, 2*rest)
			}
			carry = next[:copy(next, data[cut:])]
			buf = next
		}
		if !send(c) || eof {
			return nil
		}
	}
}

// serpParser parses chunks; one per parse goroutine, reused.
type serpParser struct {
	country, name string
	line          serpLine // encoding/json's target, reused
	ranked        []rankedResult
	rowBuf, key   []byte // the line's encoded rows; a URL key

	// The line being parsed, as fast or slow decoded it; slices point into
	// the line or into line.
	keyword    []byte
	hasKeyword bool
	countryVal []byte
	results    []rawResult
}

type rankedResult struct {
	rank int32
	url  []byte
}

func (p *serpParser) parse(c *serpChunk) chunkResult {
	var res chunkResult
	if c.overlong {
		res.lines = 1
		res.before = 1
		res.bad = []BadRow{{File: p.name, Line: c.line, Reason: fmt.Sprintf("line is longer than %d bytes", maxSERPLine)}}
		return res
	}
	data, line := c.data, c.line
	res.enc = getEncBuf(len(data))
	if line == 1 {
		data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	}
	for len(data) > 0 {
		var b []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			b, data = data[:i], data[i+1:]
		} else {
			b, data = data, nil
		}
		n := line
		line++
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		res.lines++
		isSERP, reason := p.parseLine(b, &res)
		if isSERP {
			res.found = true
		} else if !res.found {
			res.before++
		}
		if reason != "" {
			res.bad = append(res.bad, BadRow{File: p.name, Line: n, Reason: reason})
		}
	}
	return res
}

// parseLine parses one non-blank line and appends its SERP to res.enc.
// isSERP says whether it is a JSON object with a keyword, which is what
// tells SERP JSONL from other files.
func (p *serpParser) parseLine(b []byte, res *chunkResult) (isSERP bool, reason string) {
	if b[0] != '{' {
		return false, "not a JSON object"
	}
	// fast cannot tell a missing rank (ranked by position) from an invalid
	// one (skipped); slow decides lines that have either.
	if !p.fast(b) || p.unranked() {
		if reason := p.slow(b); reason != "" {
			return false, reason
		}
	}
	if !p.hasKeyword {
		return false, `no "keyword"`
	}
	keyword, reason := normalizeKeyword(string(p.keyword))
	if reason != "" {
		return true, reason
	}
	if c := bytes.TrimSpace(p.countryVal); len(c) > 0 && p.country != "" && !bytes.EqualFold(c, []byte(p.country)) {
		return true, fmt.Sprintf("country %s in a %s run", strings.ToLower(string(c)), strings.ToLower(p.country))
	}

	ranked := p.ranked[:0]
	for i, r := range p.results {
		v := r.rank.v
		switch {
		case r.rank.ok:
		case r.rank.set: // a rank, but not a positive integer
			res.skipped++
			continue
		default: // no rank: its position
			v = int32(min(i+1, math.MaxInt32))
		}
		if !kw.InTop(v) {
			res.truncated++
			continue
		}
		ranked = append(ranked, rankedResult{v, r.url})
	}
	p.ranked = ranked
	slices.SortStableFunc(ranked, func(a, b rankedResult) int { return int(a.rank) - int(b.rank) })
	if len(ranked) > kw.MaxRank {
		res.truncated += len(ranked) - kw.MaxRank
		ranked = ranked[:kw.MaxRank]
	}
	rows, n := p.rowBuf[:0], 0
	for _, r := range ranked {
		var ok bool
		var at int
		if p.key, at, ok = appendURLKey(p.key[:0], r.url); !ok {
			res.skipped++
			continue
		}
		rows = appendSERPRow(rows, r.rank, r.url, p.key, at)
		n++
	}
	p.rowBuf = rows
	res.enc = appendRecord(res.enc, keyword)
	res.enc = binary.AppendUvarint(res.enc, uint64(uvarintLen(uint64(n))+len(rows)))
	res.enc = binary.AppendUvarint(res.enc, uint64(n))
	res.enc = append(res.enc, rows...)
	res.records++
	res.rows += n
	return true, ""
}

// appendRecord appends b with its uvarint length before it.
func appendRecord[S string | []byte](dst []byte, b S) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(b))), b...)
}

// cutRecord splits what appendRecord wrote off the front of enc.
func cutRecord(enc []byte) (b, rest []byte) {
	n, k := binary.Uvarint(enc)
	return enc[k : k+int(n)], enc[k+int(n):]
}

func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// unranked reports whether a result of the line lacks a valid rank.
func (p *serpParser) unranked() bool {
	for _, r := range p.results {
		if !r.rank.ok {
			return true
		}
	}
	return false
}

// slow decodes a line with encoding/json, for every shape fast declines.
func (p *serpParser) slow(b []byte) (reason string) {
	// Unmarshal decodes into reused elements without zeroing them first, so
	// a result without a rank would inherit one from an earlier line.
	clear(p.line.Results[:cap(p.line.Results)])
	p.line.Keyword, p.line.Country, p.line.Results = nil, "", p.line.Results[:0]
	if err := json.Unmarshal(b, &p.line); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			// encoding/json's own text names Go types ("Go struct field
			// serpLine.results of type []ingest.serpResult").
			return unexpectedJSON(te)
		}
		return "invalid JSON: " + strings.TrimPrefix(err.Error(), "json: ")
	}
	p.keyword, p.hasKeyword = nil, p.line.Keyword != nil
	if p.hasKeyword {
		p.keyword = []byte(*p.line.Keyword)
	}
	p.countryVal = []byte(p.line.Country)
	p.results = p.results[:0]
	for _, r := range p.line.Results {
		p.results = append(p.results, rawResult{rank: r.Rank, url: []byte(r.URL)})
	}
	return ""
}

// parseRank accepts a positive integer rank, also written as 3.0.
func parseRank(n string) (int32, bool) {
	v, err := strconv.ParseInt(n, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(n, 64)
		if ferr != nil || f != math.Trunc(f) || f < 1 || f > math.MaxInt32 {
			return 0, false
		}
		v = int64(f)
	}
	if v < 1 || v > math.MaxInt32 {
		return 0, false
	}
	return int32(v), true
}

// unexpectedJSON words a value of the wrong JSON type in a SERP line for
// the person who wrote the file: which field, what it holds, what it
// should hold.
func unexpectedJSON(te *json.UnmarshalTypeError) string {
	want := "another kind of value"
	switch te.Type.Kind() {
	case reflect.Slice:
		want = "an array"
	case reflect.Struct:
		want = "an object"
	case reflect.String, reflect.Pointer:
		want = "a string"
	}
	if te.Field == "" {
		return "unexpected JSON: the line is a JSON " + te.Value + ", not an object like " + serpLineExample
	}
	return fmt.Sprintf("unexpected JSON: %q is a JSON %s, not %s; write a line like %s", te.Field, te.Value, want, serpLineExample)
}

// serpLineExample is the shape of a SERP line, for messages.
const serpLineExample = `{"keyword": "running shoes", "country": "us", "results": [{"rank": 1, "url": "https://..."}]}`
