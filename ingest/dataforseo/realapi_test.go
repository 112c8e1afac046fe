package dataforseo

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/kwdata/kwdata/kw"
)

// Answers recorded from the real service, kept beside the repository in
// ../shared/real-api (test data, not part of the project).
const (
	realTaskPost   = "dataforseo-task_post-marketingtoolbox.json"
	realTaskGetReg = "dataforseo-task_get_regular-marketingtoolbox.json"
)

// realAPIFile reads one recorded answer from ../shared/real-api, seen from
// the module root; it skips the test where that folder is absent.
func realAPIFile(tb testing.TB, name string) []byte {
	tb.Helper()
	dir := realAPIDir(tb)
	if dir == "" {
		tb.Skip("recorded DataForSEO answers not found: they live in ../shared/real-api beside the module root")
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		tb.Fatalf("cannot read recorded answer: %v", err)
	}
	return b
}

// realAPIDir returns ../shared/real-api beside the module root, or "" when
// there is none.
func realAPIDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
	real := filepath.Join(dir, "..", "shared", "real-api")
	if _, err := os.Stat(real); errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	return real
}

// recordedPost is the part of the recorded task_post answer the test
// checks the client against, decoded independently of the client.
type recordedPost struct {
	Cost  float64 `json:"cost"`
	Tasks []struct {
		ID         string `json:"id"`
		StatusCode int    `json:"status_code"`
	} `json:"tasks"`
}

// wantTop20 derives the SERP the client must make of a task_get answer:
// the organic items ranked 1 to 20 by rank_group, in that order, numbered
// 1..n. It decodes the answer without the client's types.
func wantTop20(tb testing.TB, body []byte, keyword string) []kw.SERPRow {
	tb.Helper()
	var env struct {
		Tasks []struct {
			Result []struct {
				Items []map[string]any `json:"items"`
			} `json:"result"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		tb.Fatalf("recorded task_get answer: %v", err)
	}
	type item struct {
		rank int
		url  string
	}
	var organic []item
	for _, it := range env.Tasks[0].Result[0].Items {
		if it["type"] != "organic" {
			continue
		}
		organic = append(organic, item{int(it["rank_group"].(float64)), it["url"].(string)})
	}
	if len(organic) <= kw.MaxRank {
		tb.Fatalf("the recorded answer has %d organic items; the top-20 rule needs more", len(organic))
	}
	slices.SortStableFunc(organic, func(a, b item) int { return cmp.Compare(a.rank, b.rank) })
	var rows []kw.SERPRow
	for _, it := range organic {
		if it.rank < 1 || it.rank > kw.MaxRank {
			continue
		}
		key, err := kw.URLKey(it.url)
		if err != nil {
			tb.Fatalf("recorded URL %q: %v", it.url, err)
		}
		rows = append(rows, kw.SERPRow{Keyword: keyword, Rank: int32(len(rows) + 1), URL: it.url, URLKey: key})
	}
	return rows
}

// withUnknownItems returns the recorded answer with the kinds of items an
// advanced answer adds (and the regular one lacks) put in front: other
// types at the top ranks, an item of a type no documentation names yet,
// null fields and nested items.
func withUnknownItems(tb testing.TB, body []byte) []byte {
	tb.Helper()
	var env map[string]any
	if err := json.Unmarshal(body, &env); err != nil {
		tb.Fatal(err)
	}
	res := env["tasks"].([]any)[0].(map[string]any)["result"].([]any)[0].(map[string]any)
	extra := []any{
		map[string]any{"type": "paid", "rank_group": 1, "rank_absolute": 1, "url": "https://ads.example/pans?gclid=x"},
		map[string]any{"type": "featured_snippet", "rank_group": 1, "rank_absolute": 2, "url": "https://snippet.example/"},
		map[string]any{"type": "people_also_ask", "rank_group": 1, "rank_absolute": 3, "url": nil, "domain": nil,
			"items": []any{map[string]any{"type": "people_also_ask_element", "title": "Which pans are best?", "expanded_element": nil}}},
		map[string]any{"type": "ai_overview", "rank_group": 2, "rank_absolute": 4, "url": nil, "items": nil},
		map[string]any{"type": "images", "rank_group": nil, "rank_absolute": nil, "url": nil},
	}
	res["items"] = append(extra, res["items"].([]any)...)
	out, err := json.Marshal(env)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// recordedFake answers on 127.0.0.1 with the recorded bodies: task_post
// with the recorded task_post answer, task_get/advanced of a task it
// created with getBody, and tasks_ready with a list of the tasks not yet
// collected.
type recordedFake struct {
	srv      *httptest.Server
	postBody []byte
	getBody  []byte

	mu        sync.Mutex
	created   []string // task ids the recorded task_post created
	posted    [][]taskPost
	collected map[string]int // task id -> task_get calls
}

func newRecordedFake(tb testing.TB, postBody, getBody []byte) *recordedFake {
	tb.Helper()
	f := &recordedFake{postBody: postBody, getBody: getBody, collected: map[string]int{}}
	var rec recordedPost
	if err := json.Unmarshal(postBody, &rec); err != nil {
		tb.Fatal(err)
	}
	for _, t := range rec.Tasks {
		f.created = append(f.created, t.ID)
	}
	ready := readFixture(tb, "tasks_ready_response.json")
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+pathTaskPost, func(w http.ResponseWriter, r *http.Request) {
		var tasks []taskPost
		if err := json.NewDecoder(r.Body).Decode(&tasks); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.posted = append(f.posted, tasks)
		f.mu.Unlock()
		w.Write(f.postBody)
	})
	mux.HandleFunc("GET "+pathTasksReady, func(w http.ResponseWriter, r *http.Request) {
		var env map[string]any
		json.Unmarshal(ready, &env)
		tk := env["tasks"].([]any)[0].(map[string]any)
		var list []any
		f.mu.Lock()
		for _, id := range f.created {
			if f.collected[id] == 0 {
				list = append(list, map[string]any{"id": id, "se": "google", "se_type": "organic", "tag": nil,
					"endpoint_advanced": pathTaskGet + id})
			}
		}
		f.mu.Unlock()
		tk["result"], tk["result_count"] = list, len(list)
		json.NewEncoder(w).Encode(env)
	})
	mux.HandleFunc("GET "+pathTaskGet+"{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		f.mu.Lock()
		known := slices.Contains(f.created, id)
		f.collected[id]++
		f.mu.Unlock()
		if !known {
			http.NotFound(w, r)
			return
		}
		w.Write(f.getBody)
	})
	f.srv = httptest.NewServer(mux)
	tb.Cleanup(f.srv.Close)
	return f
}

// TestFetchSERPsRecordedAnswers runs the client against answers recorded
// from the real service: it must take the task ids from the recorded
// task_post answer, and make of the recorded task_get/regular answer (98
// organic items) the top 20 organic results, ranked by rank_group, also
// when items of other and unknown types with null fields come first.
func TestFetchSERPsRecordedAnswers(t *testing.T) {
	postBody := realAPIFile(t, realTaskPost)
	getBody := realAPIFile(t, realTaskGetReg)
	var rec recordedPost
	if err := json.Unmarshal(postBody, &rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.Tasks) != 2 || rec.Tasks[0].StatusCode != codeTaskCreated || rec.Tasks[1].StatusCode != codeTaskCreated {
		t.Fatalf("the recorded task_post answer should create two tasks: %+v", rec)
	}
	dk, ok := kw.LookupCountry("dk")
	if !ok {
		t.Fatal("DK is not supported")
	}
	keywords := []string{"pots and pans", "gryder"}
	for _, tc := range []struct {
		name string
		get  []byte
	}{
		{"recorded", getBody},
		{"recorded with unknown item types first", withUnknownItems(t, getBody)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRecordedFake(t, postBody, tc.get)
			dir := t.TempDir()
			c, _ := newTestClient(t, Config{Endpoint: f.srv.URL, Login: "l", Password: "p"}, Options{CheckpointDir: dir})
			got, stats, err := c.FetchSERPs(context.Background(), dk, keywords)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string][]kw.SERPRow{}
			for _, k := range keywords {
				want[k] = wantTop20(t, getBody, k)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("SERPs\n got %+v\nwant %+v", got, want)
			}
			if len(want["gryder"]) != kw.MaxRank {
				t.Errorf("want %d rows from the recorded answer, derived %d", kw.MaxRank, len(want["gryder"]))
			}
			if stats.Posted != 2 || stats.Collected != 2 || stats.Failed != 0 || stats.SkippedURLs != 0 || stats.Cost != rec.Cost {
				t.Errorf("stats %+v; want 2 posted and collected, cost %v", stats, rec.Cost)
			}
			// The ids come from the recorded answer, in task order, since
			// it echoes no tag of ours.
			st, err := loadState(dir, dk.Code)
			if err != nil {
				t.Fatal(err)
			}
			wantPosted := map[string]string{keywords[0]: rec.Tasks[0].ID, keywords[1]: rec.Tasks[1].ID}
			if !reflect.DeepEqual(st.posted, wantPosted) {
				t.Errorf("task ids in the checkpoint %v, want %v", st.posted, wantPosted)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if !reflect.DeepEqual(f.collected, map[string]int{rec.Tasks[0].ID: 1, rec.Tasks[1].ID: 1}) {
				t.Errorf("task_get calls %v, want one for each recorded id", f.collected)
			}
			if len(f.posted) != 1 || len(f.posted[0]) != 2 || f.posted[0][0].LocationCode != dk.GeoTarget || f.posted[0][0].Depth != Depth {
				t.Errorf("posted %+v, want one POST of both keywords in DK at depth %d", f.posted, Depth)
			}
		})
	}
}
