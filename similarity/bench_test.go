package similarity

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkCompute measures Compute on the realistic corpus (topics, intent
// groups, Zipf hubs with the most popular URL in about 4% of SERPs). The
// 1M size runs only with -benchtime and without -short:
//
//	go test -run='^$' -bench='Compute/n=1000000' -benchtime=1x ./similarity
func BenchmarkCompute(b *testing.B) {
	for _, n := range []int{20_000, 100_000, 1_000_000} {
		if n > 100_000 && testing.Short() {
			continue
		}
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			kws, serps := realisticCorpus(1, n)
			b.ResetTimer()
			for b.Loop() {
				if _, _, err := Compute(context.Background(), kws, serps, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "keywords/s")
		})
	}
}

// BenchmarkBrute is the baseline: every pair compared, on one core.
func BenchmarkBrute(b *testing.B) {
	for _, n := range []int{5_000, 20_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			kws, serps := realisticCorpus(1, n)
			b.ResetTimer()
			for b.Loop() {
				Brute(kws, serps, Options{})
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "keywords/s")
		})
	}
}
