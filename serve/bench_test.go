package serve

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kwdata/kwdata/serve/internal/servetest"
)

// discardWriter is a ResponseWriter that keeps nothing, so the benchmark
// measures the handler rather than a recorder.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}

func BenchmarkKeywordHandler(b *testing.B) {
	for _, bc := range []struct {
		name, target string
		want         int
	}{
		{"found", "/v1/keyword?q=running+shoes&country=us", 200},
		{"found_unnormalized", "/v1/keyword?q=%20%20Running%20%20SHOES%20&country=US", 200},
		{"not_found", "/v1/keyword?q=running+sandals", 404},
		{"missing_q", "/v1/keyword?country=us", 400},
	} {
		b.Run(bc.name, func(b *testing.B) {
			idx := servetest.NewIndex(b)
			s := New(Options{Index: idx, Logger: slog.New(slog.DiscardHandler)})
			r := httptest.NewRequest("GET", bc.target, nil)
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, r)
			if rec.Code != bc.want {
				b.Fatalf("status %d, want %d: %s", rec.Code, bc.want, rec.Body)
			}
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				s.ServeHTTP(w, r)
			}
		})
	}
}
