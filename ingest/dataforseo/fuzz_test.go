package dataforseo

import (
	"os"
	"path/filepath"
	"testing"
)

func addFixtureSeeds(f *testing.F) {
	f.Helper()
	paths, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	if dir := realAPIDir(f); dir != "" { // answers recorded from the real service, where present
		real, _ := filepath.Glob(filepath.Join(dir, "dataforseo-*.json"))
		paths = append(paths, real...)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"status_code":20000,"tasks":[{"status_code":20000,"result":[{"items":[{"type":"organic","rank_group":-9223372036854775808,"url":"//"}]}]}]}`))
	f.Add([]byte(`{"tasks":[null,{"result":[null]}]}`))
}

// FuzzDecodeTaskGet feeds arbitrary bytes through the task_get decoder and
// the row builder: no panic, at most Depth rows, ranks 1..n, every row
// with a URL key.
func FuzzDecodeTaskGet(f *testing.F) {
	addFixtureSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		env, err := decodeTaskGet(b)
		if err != nil {
			return
		}
		for _, tk := range env.Tasks {
			rows, skipped := organicRows(tk.Result)
			if len(rows) > Depth || skipped < 0 {
				t.Fatalf("%d rows, %d skipped", len(rows), skipped)
			}
			for i, r := range rows {
				if r.Rank != int32(i+1) || r.URLKey == "" {
					t.Fatalf("row %d: %+v", i, r)
				}
			}
		}
	})
}

// FuzzDecodeTasksReady checks the tasks_ready decoder never panics.
func FuzzDecodeTasksReady(f *testing.F) {
	addFixtureSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		env, err := decodeTasksReady(b)
		if err != nil {
			return
		}
		for _, tk := range env.Tasks {
			for _, r := range tk.Result {
				_ = r.ID + r.Tag
			}
		}
	})
}

// FuzzDecodeTaskPost checks the task_post decoder never panics.
func FuzzDecodeTaskPost(f *testing.F) {
	addFixtureSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		env, err := decodeTaskPost(b)
		if err != nil {
			return
		}
		_ = anyCreated(env)
	})
}
