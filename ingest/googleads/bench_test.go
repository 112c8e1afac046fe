package googleads

import (
	"encoding/json"
	"fmt"
	"testing"
)

// BenchmarkDecodeAndMatch measures decoding a full 10,000-keyword answer
// and matching it to the request, the per-batch CPU cost of a run.
func BenchmarkDecodeAndMatch(b *testing.B) {
	for _, n := range []int{1000, MaxKeywordsPerRequest} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			kws := make([]string, n)
			for i := range kws {
				kws[i] = fmt.Sprintf("keyword number %d", i)
			}
			body, err := json.Marshal(generate(kws))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(body)))
			b.ResetTimer()
			for b.Loop() {
				r, err := decodeHistoricalMetrics(body)
				if err != nil {
					b.Fatal(err)
				}
				if recs := matchResults(kws, r.Results); len(recs) != n {
					b.Fatalf("%d records", len(recs))
				}
			}
		})
	}
}
