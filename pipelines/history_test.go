package pipelines

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

func rec(kind, run, stage, status string, start time.Time) Record {
	return Record{Kind: kind, RunID: run, Date: start.Format("2006-01-02"), Stage: stage, Status: status,
		Start: start, End: start.Add(90 * time.Second), Counts: map[string]int64{"rows": 7}}
}

func TestHistoryToleratesATornLastLine(t *testing.T) {
	data := t.TempDir()
	t0 := time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)
	for _, r := range []Record{
		rec(KindStage, "r1", "ingest", StatusOK, t0),
		rec(KindRun, "r1", "", StatusOK, t0),
	} {
		if err := AppendHistory(data, r); err != nil {
			t.Fatal(err)
		}
	}
	// A crash in the middle of the next append.
	f, err := os.OpenFile(HistoryPath(data), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"kind":"stage","run_id":"r2","sta`)
	f.Close()

	runs, err := ReadHistory(data, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].RunID != "r1" || len(runs[0].Stages) != 1 {
		t.Fatalf("runs = %+v, want r1 with one stage", runs)
	}
	// The next record lands on its own line, readable.
	if err := AppendHistory(data, rec(KindRun, "r3", "", StatusFailed, t0.Add(24*time.Hour))); err != nil {
		t.Fatal(err)
	}
	runs, err = ReadHistory(data, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[1].RunID != "r3" || runs[1].Status != StatusFailed {
		t.Fatalf("runs = %+v, want r1 and r3", runs)
	}
}

func TestReadHistoryGroupsAndLimits(t *testing.T) {
	data := t.TempDir()
	t0 := time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)
	var all []Record
	for i, id := range []string{"a", "b", "c"} {
		start := t0.Add(time.Duration(i) * 24 * time.Hour)
		all = append(all, rec(KindStage, id, "ingest", StatusOK, start), rec(KindStage, id, "similarity", StatusOK, start),
			rec(KindRun, id, "", StatusOK, start))
	}
	// A run whose process died after its first stage.
	all = append(all, rec(KindStage, "d", "ingest", StatusOK, t0.Add(72*time.Hour)))
	for _, r := range all {
		if err := AppendHistory(data, r); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		last int
		want string
	}{
		{0, "a b c d"},
		{-1, "a b c d"},
		{2, "c d"},
		{10, "a b c d"},
	}
	for _, tt := range tests {
		runs, err := ReadHistory(data, tt.last)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.RunID)
		}
		if got := strings.Join(ids, " "); got != tt.want {
			t.Errorf("last %d = %s, want %s", tt.last, got, tt.want)
		}
	}
	runs, _ := ReadHistory(data, 2)
	if runs[0].Kind != KindRun || len(runs[0].Stages) != 2 {
		t.Errorf("run c = %+v, want the run with two stages", runs[0])
	}
	if runs[1].Status != StatusUnfinished || runs[1].Date != "2026-11-24" {
		t.Errorf("run d = %+v, want an unfinished run of 2026-11-24", runs[1].Record)
	}
	end, date, err := LastSuccess(data)
	if err != nil || date != "2026-11-23" || !end.Equal(t0.Add(48*time.Hour+90*time.Second)) {
		t.Errorf("LastSuccess = %v, %s, %v", end, date, err)
	}
}

func TestMissingHistoryIsEmpty(t *testing.T) {
	data := t.TempDir()
	runs, err := ReadHistory(data, 5)
	if err != nil || len(runs) != 0 {
		t.Errorf("ReadHistory = %v, %v; want nothing", runs, err)
	}
	end, date, err := LastSuccess(data)
	if err != nil || !end.IsZero() || date != "" {
		t.Errorf("LastSuccess = %v, %q, %v; want zero", end, date, err)
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, runs); err != nil || strings.TrimSpace(buf.String()) != "[]" {
		t.Errorf("WriteJSON of nothing = %q, %v; want []", buf.String(), err)
	}
}

func TestWriteTableAndJSON(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)
	run := RunRecord{Record: rec(KindRun, "20261121T030000Z-abcdef", "", StatusFailed, t0), Stages: []Record{
		rec(KindStage, "20261121T030000Z-abcdef", "ingest", StatusOK, t0),
		rec(KindStage, "20261121T030000Z-abcdef", "similarity", StatusFailed, t0),
	}}
	run.Trigger = TriggerSchedule
	run.Counts = nil
	run.Stages[1].Error = "cannot read\nserps: disk on fire"
	var buf bytes.Buffer
	if err := WriteTable(&buf, []RunRecord{run}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("table has %d lines, want header, run and 2 stages:\n%s", len(lines), buf.String())
	}
	for i, want := range [][]string{
		{"RUN", "DATE", "STAGE", "STATUS", "STARTED", "TOOK", "COUNTS", "ERROR"},
		{"20261121T030000Z-abcdef", "2026-11-21", "(schedule)", "failed", "2026-11-21 03:00:00Z", "1m30s", "-"},
		{"2026-11-21", "ingest", "ok", "rows=7"},
		{"similarity", "failed", "cannot read serps: disk on fire"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q lacks %q", i, lines[i], w)
			}
		}
	}
	buf.Reset()
	if err := WriteJSON(&buf, []RunRecord{run}); err != nil {
		t.Fatal(err)
	}
	var back []RunRecord
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != 1 || back[0].RunID != run.RunID || len(back[0].Stages) != 2 || back[0].Stages[1].Error != run.Stages[1].Error {
		t.Errorf("JSON round trip = %+v", back)
	}
	if !strings.Contains(buf.String(), `"run_id": "20261121T030000Z-abcdef"`) || !strings.Contains(buf.String(), `"stages": [`) {
		t.Errorf("JSON lacks the documented field names:\n%s", buf.String())
	}
}

func FuzzParseHistory(f *testing.F) {
	t0 := time.Date(2026, 11, 21, 3, 0, 0, 0, time.UTC)
	good, _ := json.Marshal(rec(KindRun, "r", "", StatusOK, t0))
	stage, _ := json.Marshal(rec(KindStage, "s", "ingest", StatusOK, t0))
	f.Add([]byte(string(good) + "\n"))
	f.Add([]byte(string(stage) + "\n" + string(good)[:20]))
	f.Add([]byte("\n\n{}\n{\"run_id\":\"x\"}\n"))
	f.Add([]byte(`{"kind":"stage","run_id":"x","start":"nope"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		runs, err := parseHistory(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if r.RunID == "" || r.Kind != KindRun {
				t.Fatalf("run without id or kind: %+v", r)
			}
		}
	})
}
