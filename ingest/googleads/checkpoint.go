package googleads

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/kwdata/kwdata/kw"
)

// checkpointVersion is bumped when batchFile changes shape or meaning;
// files of other versions are ignored and their batches requested again.
// Version 2: amounts are USD micros (version 1 held the account's currency).
const checkpointVersion = 2

// batchFile is one finished batch. It names the keywords it answered, so a
// re-run with a different keyword list never reuses a batch that does not
// match its own.
type batchFile struct {
	Version  int                `json:"version"`
	Country  string             `json:"country"`
	Keywords []string           `json:"keywords"`
	Records  []kw.KeywordRecord `json:"records"`
}

type checkpoint struct {
	dir     string
	country string
}

func (cp checkpoint) path(i int) string {
	return filepath.Join(cp.dir, fmt.Sprintf("batch-%05d.json", i))
}

// load returns the saved records of batch i when a file for exactly these
// keywords exists.
func (cp checkpoint) load(i int, keywords []string) ([]kw.KeywordRecord, bool, error) {
	if cp.dir == "" {
		return nil, false, nil
	}
	b, err := os.ReadFile(cp.path(i))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("cannot read checkpoint %s: %w", cp.path(i), err)
	}
	var f batchFile
	if json.Unmarshal(b, &f) != nil || f.Version != checkpointVersion || f.Country != cp.country || !slices.Equal(f.Keywords, keywords) {
		// A damaged or foreign file costs one request, never a wrong record.
		return nil, false, nil
	}
	return f.Records, true, nil
}

func (cp checkpoint) save(i int, keywords []string, recs []kw.KeywordRecord) error {
	if cp.dir == "" {
		return nil
	}
	if recs == nil {
		recs = []kw.KeywordRecord{}
	}
	b, err := json.Marshal(batchFile{Version: checkpointVersion, Country: cp.country, Keywords: keywords, Records: recs})
	if err != nil {
		return fmt.Errorf("cannot encode checkpoint: %w", err)
	}
	if err := kw.WriteFileAtomic(cp.path(i), b); err != nil {
		return fmt.Errorf("cannot write checkpoint: %w", err)
	}
	return nil
}

// universeFile is the keyword list of a date after ExpandUniverse: the
// listed keywords (normalized, the first Listed entries) and the ideas
// added to them. It is only reused for the same list and MaxNew.
type universeFile struct {
	Version  int      `json:"version"`
	Country  string   `json:"country"`
	MaxNew   int      `json:"max_new"`
	Listed   int      `json:"listed"`
	Keywords []string `json:"keywords"`
}

const universeName = "universe.json"

// loadUniverse returns the saved expansion of listed when there is one
// for exactly these keywords and maxNew.
func (cp checkpoint) loadUniverse(listed []string, maxNew int) ([]string, bool, error) {
	if cp.dir == "" {
		return nil, false, nil
	}
	path := filepath.Join(cp.dir, universeName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("cannot read checkpoint %s: %w", path, err)
	}
	var f universeFile
	if json.Unmarshal(b, &f) != nil || f.Version != checkpointVersion || f.Country != cp.country || f.MaxNew != maxNew ||
		f.Listed != len(listed) || len(f.Keywords) < f.Listed || !slices.Equal(f.Keywords[:f.Listed], listed) {
		// Another list or a damaged file: expand again rather than
		// fetch metrics for a universe the operator did not ask for.
		return nil, false, nil
	}
	return f.Keywords, true, nil
}

func (cp checkpoint) saveUniverse(listed, maxNew int, keywords []string) error {
	if cp.dir == "" {
		return nil
	}
	b, err := json.Marshal(universeFile{Version: checkpointVersion, Country: cp.country, MaxNew: maxNew, Listed: listed, Keywords: keywords})
	if err != nil {
		return fmt.Errorf("cannot encode checkpoint: %w", err)
	}
	if err := kw.WriteFileAtomic(filepath.Join(cp.dir, universeName), b); err != nil {
		return fmt.Errorf("cannot write checkpoint: %w", err)
	}
	return nil
}
