package similarity

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
)

// serpRows is one keyword's SERP rows with the given ranks and URL keys.
func serpRows(keyword string, ranks []int32, keys []string) []kw.SERPRow {
	rows := make([]kw.SERPRow, len(ranks))
	for i := range ranks {
		rows[i] = kw.SERPRow{Keyword: keyword, Rank: ranks[i], URL: "https://" + keys[i], URLKey: keys[i]}
	}
	return rows
}

func ranks(from, to int32) []int32 {
	var r []int32
	for i := from; i <= to; i++ {
		r = append(r, i)
	}
	return r
}

// runAndRead runs the stage over one country and date and reads its output.
func runAndRead(t *testing.T, opt RunOptions) (RunStats, []kw.RelatedRow, []kw.IntentRow) {
	t.Helper()
	stats, err := Run(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) != 1 {
		t.Fatalf("stats = %+v, want one country", stats)
	}
	rel, err := lake.Read[kw.RelatedRow](opt.Data, kw.DatasetRelated, "us", opt.Date)
	if err != nil {
		t.Fatal(err)
	}
	in, err := lake.Read[kw.IntentRow](opt.Data, kw.DatasetIntents, "us", opt.Date)
	if err != nil {
		t.Fatal(err)
	}
	return stats[0], rel, in
}

// TestRunTopRanks checks the top-20 rule on the lake's rows: ranks past
// kw.MaxRank, after a gap or not, and ranks below 1 are not part of S(k),
// and at most kw.MaxRank rows of a keyword are kept.
func TestRunTopRanks(t *testing.T) {
	const date = "2026-11-21"
	u := urls("u.example/", 25)
	v := urls("v.example/", 19)
	dup := slices.Repeat([]int32{1}, 25) // 25 rows all at rank 1
	var rows []kw.SERPRow
	rows = append(rows, serpRows("a", ranks(1, 25), u)...)
	rows = append(rows, serpRows("b", ranks(1, 25), u)...)
	// c: ranks 1–19 and 35; its rank-35 URL is a's and b's rank 20.
	rows = append(rows, serpRows("c", append(ranks(1, 19), 35), cat(u[:19], u[19:20]))...)
	// d: ranks 1–19 and 35; the rank-35 URL is e's only URL.
	rows = append(rows, serpRows("d", append(ranks(1, 19), 35), cat(v, []string{"z.example/"}))...)
	rows = append(rows, serpRows("e", []int32{1}, []string{"z.example/"})...)
	// f: 25 rows at rank 1, of which only the first 20 count; g: ranks 0
	// and -1 count for nothing, then u[20:25] at ranks 1–5.
	rows = append(rows, serpRows("f", dup, u)...)
	rows = append(rows, serpRows("g", append([]int32{-1, 0}, ranks(1, 5)...), cat(u[:2], u[20:25]))...)
	kws := []Keyword{{Text: "a", Volume: 100}, {Text: "b", Volume: 100}, {Text: "c", Volume: 90},
		{Text: "d", Volume: 10}, {Text: "e", Volume: 10}, {Text: "f", Volume: 5000}, {Text: "g", Volume: 7}}
	data := t.TempDir()
	writeLake(t, data, "us", date, kws, nil, nil)
	if err := lake.WritePartition(data, kw.DatasetSERPs, "us", date, rows); err != nil {
		t.Fatal(err)
	}
	opt := Options{Workers: 2}
	st, gotRel, gotInt := runAndRead(t, RunOptions{Data: data, Date: date, Options: opt})
	if st.WithSERP != len(kws) {
		t.Errorf("WithSERP = %d, want %d", st.WithSERP, len(kws))
	}
	overlap := map[[2]string]int32{}
	for _, r := range gotRel {
		overlap[[2]string{r.Keyword, r.Related}] = r.Overlap
	}
	for _, tt := range []struct {
		k, c string
		want int32
	}{
		{"a", "b", 20}, {"b", "a", 20}, {"a", "c", 19}, {"a", "f", 20}, {"c", "f", 19},
		{"d", "e", 0}, {"e", "d", 0}, {"a", "g", 0}, {"g", "a", 0},
	} {
		if got := overlap[[2]string{tt.k, tt.c}]; got != tt.want {
			t.Errorf("overlap of %s with %s = %d, want %d", tt.k, tt.c, got, tt.want)
		}
	}
	wantRel, wantInt := Brute(kws, [][]string{u[:20], u[:20], u[:19], v, {"z.example/"}, u[:20], u[20:25]}, opt)
	diff(t, wantRel, gotRel, wantInt, gotInt)
}

// TestRunMaxAge checks the age window at its edges: a SERP dated exactly
// Date-MaxAgeDays is used, one a day older is not, nor one dated after
// Date, even for keywords that have no other SERP.
func TestRunMaxAge(t *testing.T) {
	const date = "2026-11-21"
	day, err := time.Parse(kw.DateLayout, date)
	if err != nil {
		t.Fatal(err)
	}
	shared := urls("s.example/", 12)
	for _, maxAge := range []int{0, 10} { // 0: the default, 30
		t.Run(fmt.Sprintf("max-age=%d", maxAge), func(t *testing.T) {
			days := maxAge
			if days == 0 {
				days = 30
			}
			edge := day.AddDate(0, 0, -days).Format(kw.DateLayout)
			old := day.AddDate(0, 0, -days-1).Format(kw.DateLayout)
			future := day.AddDate(0, 0, 1).Format(kw.DateLayout)
			kws := []Keyword{
				{Text: "edge a", Volume: 10}, {Text: "edge b", Volume: 12},
				{Text: "future a", Volume: 10}, {Text: "future b", Volume: 12},
				{Text: "old a", Volume: 10}, {Text: "old b", Volume: 12},
			}
			// Each pair has the same two SERPs, sharing twelve URLs, in the
			// partition of its name only: a wrongly used partition relates
			// its pair to each other and to the edge pair.
			two := [][]string{shared, cat(shared, []string{"x.example/"})}
			data := t.TempDir()
			writeLake(t, data, "us", date, kws,
				map[string][][]string{edge: two, old: two, future: two},
				map[string][]string{edge: {"edge a", "edge b"}, old: {"old a", "old b"}, future: {"future a", "future b"}})
			opt := Options{Workers: 2}
			st, gotRel, gotInt := runAndRead(t, RunOptions{Data: data, Date: date, MaxAgeDays: maxAge, Options: opt})
			if st.WithSERP != 2 {
				t.Errorf("WithSERP = %d, want 2 (the edge pair)", st.WithSERP)
			}
			wantRel, wantInt := Brute(kws, [][]string{two[0], two[1], nil, nil, nil, nil}, opt)
			if len(wantRel) != 2 || !wantRel[0].SameIntent {
				t.Fatalf("the edge pair is not related as the test means: %+v", wantRel)
			}
			diff(t, wantRel, gotRel, wantInt, gotInt)
		})
	}
}
