package dataforseo

import (
	"encoding/json"
	"testing"
)

// BenchmarkDecodeTaskGet measures turning one task_get answer into rows; a
// run does this once per SERP. "generated" is an advanced answer of a paid
// and 25 organic items, "recorded" the task_get/regular answer of 98
// organic items recorded from the real service (skipped where absent).
func BenchmarkDecodeTaskGet(b *testing.B) {
	b.Run("generated", func(b *testing.B) {
		env := map[string]any{"status_code": 20000, "tasks": []any{map[string]any{
			"id": "x", "status_code": 20000,
			"result": []any{map[string]any{"keyword": "k", "items": genItems("some keyword")}},
		}}}
		body, err := json.Marshal(env)
		if err != nil {
			b.Fatal(err)
		}
		benchDecode(b, body)
	})
	b.Run("recorded", func(b *testing.B) {
		benchDecode(b, realAPIFile(b, realTaskGetReg))
	})
}

func benchDecode(b *testing.B, body []byte) {
	b.Helper()
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
