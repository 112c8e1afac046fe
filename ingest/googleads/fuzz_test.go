package googleads

import (
	"github.com/kwdata/kwdata/kw"
	"os"
	"path/filepath"
	"testing"
)

func addFixtureSeeds(f *testing.F) {
	f.Helper()
	paths, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"results":[{"text":"a","keywordMetrics":{"avgMonthlySearches":9223372036854775807,"competition":4,"monthlySearchVolumes":[{"year":"-1","month":13,"monthlySearches":"-5"}]}}]}`))
	f.Add([]byte(`{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"retryDelay":"1e308s","errors":[{"errorCode":{"quotaError":2},"message":"Retry in 999999999 seconds"}]}]}}`))
	f.Add([]byte(`null`))
}

// FuzzDecodeHistoricalMetrics feeds arbitrary bytes through the decoder and
// the record mapping; neither may panic, and a decoded record stays in range.
func FuzzDecodeHistoricalMetrics(f *testing.F) {
	addFixtureSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeHistoricalMetrics(b)
		if err != nil {
			return
		}
		var requested []string
		for _, res := range r.Results {
			requested = append(requested, res.Text)
			requested = append(requested, res.CloseVariants...)
		}
		norm, _ := normalizeAll(requested)
		for _, rec := range matchResults(norm, r.Results) {
			if kw.Deref(rec.Volume) < 0 || kw.Deref(rec.CPCMicros) < 0 || kw.Deref(rec.Competition) < 0 || kw.Deref(rec.Competition) > 1 {
				t.Fatalf("record out of range: %+v", rec)
			}
			for i := 1; i < len(rec.Monthly); i++ {
				if rec.Monthly[i-1].Month >= rec.Monthly[i].Month {
					t.Fatalf("months not ascending: %+v", rec.Monthly)
				}
			}
		}
	})
}

// FuzzDecodeKeywordIdeas checks the ideas decoder never panics.
func FuzzDecodeKeywordIdeas(f *testing.F) {
	addFixtureSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeKeywordIdeas(b)
		if err != nil {
			return
		}
		for _, res := range r.Results {
			toRecord(res.Text, res.KeywordIdeaMetrics)
		}
	})
}

// FuzzDecodeError checks the error decoder accepts anything and never
// yields a negative delay.
func FuzzDecodeError(f *testing.F) {
	addFixtureSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		e := decodeError(429, b)
		if e.RetryDelay < 0 {
			t.Fatalf("negative retry delay %v", e.RetryDelay)
		}
		_ = e.Error()
	})
}
