package dataforseo

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeDFS speaks the v3 SERP API's documented envelope on 127.0.0.1:
// HTTP Basic auth, task_post with per-task status codes, a tasks_ready list
// of finished uncollected tasks, and task_get/advanced that answers 40602
// while a task is queued. Its answers are built from the recorded-style
// fixtures in testdata.
//
// Keywords steer it: one containing "invalid" is refused at post time
// (40501), one containing "noresults" completes with 40102.
type fakeDFS struct {
	tb  testing.TB
	srv *httptest.Server

	mu         sync.Mutex
	login      string
	password   string
	readyAfter int // tasks_ready polls after posting before a task is ready
	perPoll    int // at most this many tasks listed by one tasks_ready; 0: all
	never      bool
	polls      int
	nextID     int
	tasks      map[string]*fakeTask // by id
	order      []string             // ids in posting order
	posts      map[string]int       // keyword -> tasks created for it
	postSizes  []int
	postBodies [][]map[string]any
	gets       int
	script     map[string][]scripted // path prefix -> answers to give first
}

type fakeTask struct {
	id, keyword, tag string
	readyAt          int
	collected        bool
}

type scripted struct {
	status  int
	fixture string
}

func newFakeDFS(tb testing.TB) *fakeDFS {
	tb.Helper()
	f := &fakeDFS{tb: tb, login: "user@example.com", password: "secret", tasks: map[string]*fakeTask{},
		posts: map[string]int{}, script: map[string][]scripted{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+pathTaskPost, f.taskPost)
	mux.HandleFunc("GET "+pathTasksReady, f.tasksReady)
	mux.HandleFunc("GET "+pathTaskGet+"{id}", f.taskGet)
	f.srv = httptest.NewServer(f.auth(mux))
	tb.Cleanup(f.srv.Close)
	return f
}

func (f *fakeDFS) config() Config {
	return Config{Endpoint: f.srv.URL, Login: f.login, Password: f.password, MaxSERPsPerRun: 10000}
}

func (f *fakeDFS) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != f.login || p != f.password {
			f.fixture(w, http.StatusUnauthorized, "error_unauthorized.json")
			return
		}
		f.mu.Lock()
		for prefix, q := range f.script {
			if strings.HasPrefix(r.URL.Path, prefix) && len(q) > 0 {
				f.script[prefix] = q[1:]
				f.mu.Unlock()
				f.fixture(w, q[0].status, q[0].fixture)
				return
			}
		}
		f.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (f *fakeDFS) push(prefix string, s ...scripted) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script[prefix] = append(f.script[prefix], s...)
}

func (f *fakeDFS) fixture(w http.ResponseWriter, status int, name string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(readFixture(f.tb, name))
}

func readFixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatalf("cannot read fixture: %v", err)
	}
	return b
}

func (f *fakeDFS) template(name string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(readFixture(f.tb, name), &m); err != nil {
		f.tb.Fatalf("fixture %s: %v", name, err)
	}
	return m
}

func (f *fakeDFS) taskPost(w http.ResponseWriter, r *http.Request) {
	var req []map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "POST data must be a JSON array of tasks", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.postSizes = append(f.postSizes, len(req))
	f.postBodies = append(f.postBodies, req)
	env := f.template("task_post_response.json")
	proto := env["tasks"].([]any)[0].(map[string]any)
	var tasks []any
	cost := 0.0
	for i, t := range req {
		kwd, _ := t["keyword"].(string)
		tag, _ := t["tag"].(string)
		out := clone(proto)
		data := out["data"].(map[string]any)
		for k, v := range t {
			data[k] = v
		}
		f.nextID++
		id := fmt.Sprintf("11211530-0696-0066-0000-%012x", f.nextID)
		out["id"] = id
		switch {
		case i >= MaxTasksPerPost:
			out["status_code"], out["status_message"], out["cost"] = 40006, "The maximum number of tasks per request is 100.", 0
		case kwd == "" || t["location_code"] != float64(2840) && t["location_code"] != float64(2276) ||
			t["language_code"] == "" || t["depth"] != float64(Depth):
			out["status_code"], out["status_message"], out["cost"] = 40501, "Invalid Field: 'depth'.", 0
		case strings.Contains(kwd, "invalid"):
			out["status_code"], out["status_message"], out["cost"] = 40501, "Invalid Field: 'keyword'.", 0
		default:
			f.tasks[id] = &fakeTask{id: id, keyword: kwd, tag: tag, readyAt: f.polls + f.readyAfter}
			f.order = append(f.order, id)
			f.posts[kwd]++
			cost += 0.0024
		}
		tasks = append(tasks, out)
	}
	env["tasks"], env["tasks_count"], env["cost"] = tasks, len(tasks), cost
	json.NewEncoder(w).Encode(env)
}

func (f *fakeDFS) ready(t *fakeTask) bool { return !f.never && f.polls >= t.readyAt }

func (f *fakeDFS) tasksReady(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.polls++
	env := f.template("tasks_ready_response.json")
	tk := env["tasks"].([]any)[0].(map[string]any)
	proto := tk["result"].([]any)[0].(map[string]any)
	var list []any
	for _, id := range f.order {
		t := f.tasks[id]
		if t.collected || !f.ready(t) || (f.perPoll > 0 && len(list) == f.perPoll) {
			continue
		}
		e := clone(proto)
		e["id"], e["tag"] = id, t.tag
		e["endpoint_advanced"] = pathTaskGet + id
		list = append(list, e)
	}
	tk["result"], tk["result_count"] = list, len(list)
	json.NewEncoder(w).Encode(env)
}

func (f *fakeDFS) taskGet(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	t, ok := f.tasks[id]
	switch {
	case !ok:
		env := f.template("task_get_in_queue.json")
		tk := env["tasks"].([]any)[0].(map[string]any)
		tk["id"], tk["status_code"], tk["status_message"] = id, 40401, "Task Not Found."
		json.NewEncoder(w).Encode(env)
	case !f.ready(t):
		env := f.template("task_get_in_queue.json")
		tk := env["tasks"].([]any)[0].(map[string]any)
		tk["id"] = id
		json.NewEncoder(w).Encode(env)
	case strings.Contains(t.keyword, "noresults"):
		t.collected = true
		f.fixture(w, 200, "task_get_no_results.json")
	default:
		t.collected = true
		env := f.template("task_get_advanced_response.json")
		tk := env["tasks"].([]any)[0].(map[string]any)
		tk["id"] = id
		tk["data"].(map[string]any)["keyword"] = t.keyword
		res := tk["result"].([]any)[0].(map[string]any)
		res["keyword"] = t.keyword
		if t.keyword != "running shoes" {
			res["items"] = genItems(t.keyword)
		}
		json.NewEncoder(w).Encode(env)
	}
}

// genItems makes a paid result and 25 organic ones, so that depth and
// type filtering both matter.
func genItems(keyword string) []any {
	slug := strings.ReplaceAll(keyword, " ", "-")
	items := []any{map[string]any{"type": "paid", "rank_group": 1, "rank_absolute": 1, "url": "https://ads.example/" + slug}}
	for i := 1; i <= 25; i++ {
		items = append(items, map[string]any{
			"type": "organic", "rank_group": i, "rank_absolute": i + 1,
			"domain": fmt.Sprintf("site%d.example", i), "url": fmt.Sprintf("https://site%d.example/%s", i, slug),
		})
	}
	return items
}

func clone(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	var out map[string]any
	json.Unmarshal(b, &out)
	return out
}

// addForeign lists n finished tasks of another program of the same account
// ahead of everything posted later: tasks_ready shows them, and nobody
// collects them.
func (f *fakeDFS) addForeign(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range n {
		f.nextID++
		id := fmt.Sprintf("11211530-0696-0066-0001-%012x", f.nextID)
		f.tasks[id] = &fakeTask{id: id, keyword: fmt.Sprintf("other %d", i), tag: "another-tool"}
		f.order = append(f.order, id)
	}
}

func (f *fakeDFS) postsOf(keyword string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.posts[keyword]
}

// fakeClock is the injected clock: Sleep records and advances time.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	sleeps  []time.Duration
	onSleep func(n int)
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	n, hook := len(c.sleeps), c.onSleep
	c.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	return ctx.Err()
}

func newTestClient(tb testing.TB, cfg Config, opt Options) (*Client, *fakeClock) {
	tb.Helper()
	clock := newFakeClock()
	if opt.Now == nil {
		opt.Now = clock.Now
	}
	if opt.Sleep == nil {
		opt.Sleep = clock.Sleep
	}
	c, err := New(cfg, opt)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return c, clock
}
