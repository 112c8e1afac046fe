package ingest

import (
	"bytes"
	"math"
	"unicode/utf8"
)

// rawResult is one result of a decoded line; url points into the line.
type rawResult struct {
	rank rank
	url  []byte
}

// fast decodes the usual shape of a SERP line without reflection: the keys
// keyword, country and results (with rank and url) spelled in lower case,
// each at most once; strings in valid UTF-8 without escapes; ranks as plain
// integers. It returns false on anything else, and encoding/json decides
// that line. The results are the same either way (FuzzSERPFastPath checks
// this against encoding/json).
func (p *serpParser) fast(b []byte) bool {
	s := scanner{b: b}
	p.keyword, p.hasKeyword, p.countryVal, p.results = nil, false, nil, p.results[:0]
	var seenCountry, seenResults bool
	if !s.byte('{') {
		return false
	}
	if s.byte('}') {
		return s.end()
	}
	for {
		key, ok := s.str()
		if !ok || !s.byte(':') {
			return false
		}
		switch string(key) {
		case "keyword":
			if p.hasKeyword {
				return false
			}
			if p.keyword, ok = s.str(); !ok {
				return false
			}
			p.hasKeyword = true
		case "country":
			if seenCountry {
				return false
			}
			if p.countryVal, ok = s.str(); !ok {
				return false
			}
			seenCountry = true
		case "results":
			if seenResults || !p.fastResults(&s) {
				return false
			}
			seenResults = true
		default:
			return false
		}
		if s.byte(',') {
			continue
		}
		return s.byte('}') && s.end()
	}
}

func (p *serpParser) fastResults(s *scanner) bool {
	if !s.byte('[') {
		return false
	}
	if s.byte(']') {
		return true
	}
	for {
		if !s.byte('{') {
			return false
		}
		var r rawResult
		if !s.byte('}') {
			var seenRank, seenURL bool
			for {
				key, ok := s.str()
				if !ok || !s.byte(':') {
					return false
				}
				switch string(key) {
				case "rank":
					if seenRank {
						return false
					}
					if r.rank, ok = s.rank(); !ok {
						return false
					}
					seenRank = true
				case "url":
					if seenURL {
						return false
					}
					if r.url, ok = s.str(); !ok {
						return false
					}
					seenURL = true
				default:
					return false
				}
				if s.byte(',') {
					continue
				}
				if s.byte('}') {
					break
				}
				return false
			}
		}
		p.results = append(p.results, r)
		if s.byte(',') {
			continue
		}
		return s.byte(']')
	}
}

// scanner reads JSON tokens from a line.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// byte consumes c after white space.
func (s *scanner) byte(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// str reads a string without escapes or control characters, in valid UTF-8.
func (s *scanner) str() ([]byte, bool) {
	if !s.byte('"') {
		return nil, false
	}
	j := bytes.IndexByte(s.b[s.i:], '"')
	if j < 0 {
		return nil, false
	}
	v := s.b[s.i : s.i+j]
	ascii := true
	for _, c := range v {
		if c < 0x20 || c == '\\' {
			return nil, false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if !ascii && !utf8.Valid(v) {
		return nil, false
	}
	s.i += j + 1
	return v, true
}

// rank reads a JSON integer without sign, fraction or exponent.
func (s *scanner) rank() (rank, bool) {
	s.ws()
	start := s.i
	var v int64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		if s.i-start == 10 {
			return rank{}, false
		}
		v = v*10 + int64(s.b[s.i]-'0')
		s.i++
	}
	n := s.i - start
	if n == 0 || (n > 1 && s.b[start] == '0') {
		return rank{}, false
	}
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case '.', 'e', 'E':
			return rank{}, false
		}
	}
	if v < 1 || v > math.MaxInt32 {
		return rank{}, true
	}
	return rank{v: int32(v), ok: true}, true
}
