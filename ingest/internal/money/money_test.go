package money

import (
	"math"
	"testing"
)

func TestConvert(t *testing.T) {
	for _, tt := range []struct {
		rate   float64
		micros int64
		want   int64
	}{
		{1.08, 1_230_000, 1_328_400}, {0.1, 5, 1}, {0.1, 4, 0}, {1, 7, 7}, {0.0064, 100_000_000, 640_000},
		{1.15, 50, 58}, // 57.5 exactly; in float64 it is 57.49999999999999
		{0.5, 3, 2}, {1.08, 1_800_001, 1_944_001}, {1.08, 0, 0},
	} {
		r, err := NewRate(tt.rate)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := r.Convert(tt.micros); !ok || got != tt.want {
			t.Errorf("Convert(%d at %v) = %d, %v; want %d", tt.micros, tt.rate, got, ok, tt.want)
		}
	}
	if r, _ := NewRate(1e9); func() bool { _, ok := r.Convert(1 << 60); return ok }() {
		t.Error("overflowing conversion reported ok")
	}
	if r, _ := NewRate(2); func() bool { _, ok := r.Convert(math.MaxInt64); return ok }() {
		t.Error("an amount past int64 converted")
	}
	for _, f := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := NewRate(f); err == nil {
			t.Errorf("NewRate(%v) accepted", f)
		}
	}
}
