package pages

import (
	"math"
	"testing"
	"time"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/serve/internal/servetest"
	"github.com/kwdata/kwdata/serve/web"
)

func TestFormatters(t *testing.T) {
	for _, tt := range []struct {
		got, want string
	}{
		{formatInt(0), "0"}, {formatInt(999), "999"}, {formatInt(1000), "1,000"}, {formatInt(301000), "301,000"},
		{formatInt(1234567890), "1,234,567,890"}, {formatInt(-1234), "-1,234"},
		{formatUSD(0), "$0"}, {formatUSD(1), "$0.01"}, {formatUSD(123), "$1.23"}, {formatUSD(120), "$1.20"},
		{formatUSD(100), "$1.00"}, {formatUSD(123456), "$1,234.56"}, {formatUSD(-5), "-$0.05"},
		{formatHundredths(87), "0.87"}, {formatHundredths(50), "0.50"}, {formatHundredths(0), "0.00"}, {formatHundredths(100), "1.00"},
		{formatCompact(950), "950"}, {formatCompact(1200), "1.2K"}, {formatCompact(301000), "301K"}, {formatCompact(2_500_000), "2.5M"},
		{formatCompact(1000), "1K"},
		{formatChange(servetest.F64(900)), "+900%"}, {formatChange(servetest.F64(-12.5)), "−12.5%"}, {formatChange(servetest.F64(0)), "0%"},
		{formatChange(servetest.F64(math.Inf(1))), "∞"}, {formatChange(nil), "—"}, {formatChange(servetest.F64(math.NaN())), "—"},
		{web.HumanDuration(70200 * time.Second), "19h 30m"}, {web.HumanDuration(90 * time.Second), "2m"}, {web.HumanDuration(40 * time.Second), "40s"},
		{web.HumanDuration(72 * time.Hour), "3d"}, {web.HumanDuration(time.Hour), "1h"}, {web.HumanDuration(time.Hour + time.Second), "1h 1m"},
		{web.HumanDuration(50*time.Hour + time.Second), "2d 3h"}, {web.HumanDuration(59500 * time.Millisecond), "60s"}, {web.HumanDuration(0), "0s"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	for _, tt := range []struct{ in, want float64 }{{0, 1}, {0.3, 1}, {3.2, 5}, {2.1, 5}, {12, 20}, {24, 25}, {75250, 100000}, {91750, 100000}, {60000, 100000}, {50000, 50000}} {
		if got := niceStep(tt.in); got != tt.want {
			t.Errorf("niceStep(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestChartGeometry(t *testing.T) {
	trend := servetest.SeasonalTrend(301000)
	for _, g := range []chartGeom{wideChart, narrowChart} {
		c := newChart("running shoes", trend, g)
		if len(c.Bars) != 12 || len(c.Grid) != chartGridLines+1 {
			t.Fatalf("%d bars, %d grid lines", len(c.Bars), len(c.Grid))
		}
		base := c.Grid[0].Y
		for i, b := range c.Bars {
			if b.X < g.Left || b.X+b.W > float64(g.W)-g.Right+0.2 || b.Y < g.Top-0.1 || b.Y+b.H > base+0.2 || b.H <= 0 {
				t.Errorf("bar %d %+v outside the plot", i, b)
			}
			if i > 0 && b.X <= c.Bars[i-1].X+c.Bars[i-1].W {
				t.Errorf("bar %d overlaps its neighbour", i)
			}
		}
		// Bars are proportional to the searches.
		if r := c.Bars[2].H / c.Bars[0].H; r < 1.48 || r > 1.50 {
			t.Errorf("January/November height ratio %.3f, want %.3f", r, 367220.0/246820)
		}
		if top := c.Grid[len(c.Grid)-1].Label; top != "400K" {
			t.Errorf("top grid label %q", top)
		}
	}
	if newChart("x", nil, wideChart) != nil {
		t.Error("a chart without data")
	}
	if c := newChart("x", []kw.MonthlySearches{{Month: "2026-01", Searches: servetest.I64(0)}}, wideChart); c == nil || c.Bars[0].H != 0 {
		t.Errorf("an all-zero chart: %+v", c)
	}
}
