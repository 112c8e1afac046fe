package dataforseo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kwdata/kwdata/kw"
)

// The checkpoint is two append-only JSON Lines files in CheckpointDir:
// posted.jsonl (a task id the moment task_post confirms it) and
// collected.jsonl (a SERP, or a task's final failure, the moment it is
// collected). Each line is written and synced on its own, so a crash loses
// at most the line being written; a torn last line is skipped on load.

type postedLine struct {
	Country string `json:"country"`
	Keyword string `json:"keyword"`
	ID      string `json:"id"`
}

type collectedLine struct {
	Country     string       `json:"country"`
	Keyword     string       `json:"keyword"`
	ID          string       `json:"id"`
	Rows        []kw.SERPRow `json:"rows,omitempty"`
	SkippedURLs int          `json:"skipped_urls,omitempty"`
	Code        int          `json:"code,omitempty"` // set when the task failed
	Message     string       `json:"message,omitempty"`
}

// state is what the checkpoint knows about one country's run.
type state struct {
	dir       string
	country   string
	posted    map[string]string        // keyword -> task id
	collected map[string]collectedLine // keyword -> final outcome
}

func loadState(dir, country string) (*state, error) {
	s := &state{dir: dir, country: country, posted: map[string]string{}, collected: map[string]collectedLine{}}
	if dir == "" {
		return s, nil
	}
	err := readLines(filepath.Join(dir, "posted.jsonl"), func(b []byte) {
		var l postedLine
		if json.Unmarshal(b, &l) == nil && l.Country == country && l.Keyword != "" && l.ID != "" {
			s.posted[l.Keyword] = l.ID
		}
	})
	if err != nil {
		return nil, err
	}
	err = readLines(filepath.Join(dir, "collected.jsonl"), func(b []byte) {
		var l collectedLine
		if json.Unmarshal(b, &l) == nil && l.Country == country && l.Keyword != "" {
			s.collected[l.Keyword] = l
		}
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

func readLines(path string, fn func([]byte)) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot open checkpoint %s: %w", path, err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			fn(line)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cannot read checkpoint %s: %w", path, err)
		}
	}
}

func (s *state) addPosted(keyword, id string) error {
	s.posted[keyword] = id
	return s.append("posted.jsonl", postedLine{Country: s.country, Keyword: keyword, ID: id})
}

func (s *state) addCollected(l collectedLine) error {
	l.Country = s.country
	s.collected[l.Keyword] = l
	return s.append("collected.jsonl", l)
}

func (s *state) append(name string, v any) error {
	if s.dir == "" {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("cannot encode checkpoint line: %w", err)
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("cannot create checkpoint folder: %w", err)
	}
	path := filepath.Join(s.dir, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("cannot open checkpoint %s: %w", path, err)
	}
	defer f.Close()
	// After a crash mid-line, start on a fresh line so the torn one stays
	// the only casualty.
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			b = append([]byte("\n"), b...)
		}
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("cannot write checkpoint %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("cannot sync checkpoint %s: %w", path, err)
	}
	return nil
}
