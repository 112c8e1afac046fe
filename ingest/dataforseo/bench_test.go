package dataforseo

import (
	"encoding/json"
	"testing"
)

// BenchmarkDecodeTaskGet measures turning one task_get/advanced answer into
// rows; a run does this once per SERP.
func BenchmarkDecodeTaskGet(b *testing.B) {
	env := map[string]any{"status_code": 20000, "tasks": []any{map[string]any{
		"id": "x", "status_code": 20000,
		"result": []any{map[string]any{"keyword": "k", "items": genItems("some keyword")}},
	}}}
	body, err := json.Marshal(env)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		e, err := decodeTaskGet(body)
		if err != nil {
			b.Fatal(err)
		}
		if rows, _ := organicRows(e.Tasks[0].Result); len(rows) != Depth {
			b.Fatalf("%d rows", len(rows))
		}
	}
}
