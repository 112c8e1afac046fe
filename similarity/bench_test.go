package similarity

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
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

// BenchmarkComputeShapes measures Compute on each data shape of the
// stage's benchmark, small: the default, the long URL tail and the web's
// small groups with mid-frequency URLs shared across topics, where few
// keywords are cut early. Profile the heavy shape with
//
//	go test -run='^$' -bench='ComputeShapes/web' -benchtime=1x -cpuprofile=cpu.out ./similarity
func BenchmarkComputeShapes(b *testing.B) {
	shapes := []struct {
		name string
		gen  func(uint64, int) ([]Keyword, [][]string)
	}{{"default", realisticCorpus}, {"tail", tailCorpus}, {"web", webCorpus}}
	const n = 200_000
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			kws, serps := sh.gen(1, n)
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

// BenchmarkNewEngine measures the preparation of the engine on each data
// shape and reports the time of each of its phases (ms per run), so a
// change to one phase shows beside the others.
func BenchmarkNewEngine(b *testing.B) {
	shapes := []struct {
		name string
		gen  func(uint64, int) ([]Keyword, [][]string)
	}{{"default", realisticCorpus}, {"tail", tailCorpus}, {"web", webCorpus}}
	const n = 200_000
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) {
			kws, serps := sh.gen(1, n)
			phases := map[string]time.Duration{}
			var names []string
			for b.Loop() {
				b.StopTimer()
				c, err := newCorpus(kws, serps) // newEngine recodes it in place
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				e, err := newEngine(c, Options{}.withDefaults())
				if err != nil {
					b.Fatal(err)
				}
				for _, p := range e.phases {
					if _, ok := phases[p.name]; !ok {
						names = append(names, p.name)
					}
					phases[p.name] += p.elapsed
				}
			}
			for _, name := range names {
				b.ReportMetric(float64(phases[name].Milliseconds())/float64(b.N), strings.ReplaceAll(name, " ", "_")+"-ms")
			}
		})
	}
}
