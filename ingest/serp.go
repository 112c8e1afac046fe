package ingest

import (
	"bytes"
	"context"
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
		st.Records += len(res.serps)
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
		for _, s := range res.serps {
			st.Rows += len(s.Rows)
			if emit != nil {
				emit(s.Keyword, s.Rows)
			}
		}
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
	serps              []SERP
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
	slab          []kw.SERPRow
	urls          map[string]resolvedURL
	chunkLen      int // length of the chunk being parsed

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
	p.chunkLen = len(data)
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
		s, isSERP, reason := p.parseLine(b, &res)
		if isSERP {
			res.found = true
		} else if !res.found {
			res.before++
		}
		if reason != "" {
			res.bad = append(res.bad, BadRow{File: p.name, Line: n, Reason: reason})
			continue
		}
		res.serps = append(res.serps, s)
	}
	return res
}

// parseLine parses one non-blank line. isSERP says whether it is a JSON
// object with a keyword, which is what tells SERP JSONL from other files.
func (p *serpParser) parseLine(b []byte, res *chunkResult) (s SERP, isSERP bool, reason string) {
	if b[0] != '{' {
		return s, false, "not a JSON object"
	}
	// fast cannot tell a missing rank (ranked by position) from an invalid
	// one (skipped); slow decides lines that have either.
	if !p.fast(b) || p.unranked() {
		if reason := p.slow(b); reason != "" {
			return s, false, reason
		}
	}
	if !p.hasKeyword {
		return s, false, `no "keyword"`
	}
	if s.Keyword, reason = normalizeKeyword(string(p.keyword)); reason != "" {
		return s, true, reason
	}
	if c := bytes.TrimSpace(p.countryVal); len(c) > 0 && p.country != "" && !bytes.EqualFold(c, []byte(p.country)) {
		return s, true, fmt.Sprintf("country %s in a %s run", strings.ToLower(string(c)), strings.ToLower(p.country))
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
	rows := p.rows(len(ranked))
	for _, r := range ranked {
		u := p.resolve(r.url)
		if !u.ok {
			res.skipped++
			continue
		}
		rows = append(rows, kw.SERPRow{Keyword: s.Keyword, Rank: r.rank, URL: u.url, URLKey: u.key})
	}
	p.slab = p.slab[len(rows):]
	s.Rows = rows
	return s, true, ""
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

// resolvedURL is a result URL with its key, shared by the rows that
// repeat it.
type resolvedURL struct {
	url, key string
	ok       bool // the URL has a key
}

// maxURLCache bounds the URLs a parse goroutine remembers; popular URLs
// come back soon after the cache is emptied.
const maxURLCache = 1 << 20

// resolve returns the URL as a string and its kw.URLKey. Results repeat
// URLs a lot (popular sites rank for many keywords), so one string and
// one key computation serve every repetition the cache catches.
func (p *serpParser) resolve(b []byte) resolvedURL {
	if u, ok := p.urls[string(b)]; ok {
		return u
	}
	if p.urls == nil || len(p.urls) >= maxURLCache {
		// Sized for a full chunk of a large file: growing the map from
		// small costs more than parsing; small inputs get a small map.
		p.urls = make(map[string]resolvedURL, min(1<<16, p.chunkLen/64))
	}
	u := resolvedURL{url: string(b)}
	key, err := kw.URLKey(u.url)
	if err == nil {
		// The key is most often a substring of the URL; sharing it saves
		// an allocation.
		if i := strings.Index(u.url, key); i >= 0 {
			key = u.url[i : i+len(key)]
		}
		u.key, u.ok = key, true
	}
	p.urls[u.url] = u
	return u
}

// rows returns an empty slice with room for n rows, carved from a shared
// slab.
func (p *serpParser) rows(n int) []kw.SERPRow {
	if len(p.slab) < n {
		p.slab = make([]kw.SERPRow, max(n, 64*kw.MaxRank))
	}
	return p.slab[:0:n]
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
