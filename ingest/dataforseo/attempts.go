package dataforseo

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/kwdata/kwdata/kw"
)

// AttemptsFile is the name of the attempts file in its folder, e.g.
// <data>/state/dataforseo/<cc>/attempts.json.
const AttemptsFile = "attempts.json"

// attemptsVersion is bumped when attemptsFile changes shape; a file of
// another version is read as empty.
const attemptsVersion = 1

// attemptsFile groups keywords by the date of their last attempt, which
// keeps the file small: a run adds one date with the keywords it picked.
type attemptsFile struct {
	Version int                 `json:"version"`
	Dates   map[string][]string `json:"dates"`
}

// Attempts holds the date each keyword's SERP was last asked for, whether
// or not a SERP came back. The serps partitions only show the keywords that
// got one; without this record a keyword whose task fails or finds no
// results would look never fetched to every run and take the front of the
// refresh budget forever.
type Attempts struct {
	path string
	last map[string]string // keyword -> YYYY-MM-DD
}

// LoadAttempts reads the attempts file in dir; a missing or damaged file
// is an empty record, which costs at most one more attempt of each
// keyword, never a wrong SERP.
func LoadAttempts(dir string) (*Attempts, error) {
	a := &Attempts{path: filepath.Join(dir, AttemptsFile), last: map[string]string{}}
	b, err := os.ReadFile(a.path)
	if errors.Is(err, fs.ErrNotExist) {
		return a, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the SERP attempts %s: %w", a.path, err)
	}
	var f attemptsFile
	if json.Unmarshal(b, &f) != nil || f.Version != attemptsVersion {
		return a, nil
	}
	for date, keywords := range f.Dates {
		for _, k := range keywords {
			if date > a.last[k] {
				a.last[k] = date
			}
		}
	}
	return a, nil
}

// Before maps each keyword last attempted before date (YYYY-MM-DD) to that
// day. Attempts on date itself are left out, like the serps partition of
// the date, so that a re-run of a date picks the keywords it picked before
// and collects them from the checkpoint without paying again.
func (a *Attempts) Before(date string) map[string]time.Time {
	out := make(map[string]time.Time, len(a.last))
	for k, d := range a.last {
		if d >= date {
			continue
		}
		if t, err := time.Parse(kw.DateLayout, d); err == nil {
			out[k] = t
		}
	}
	return out
}

// Record notes that keywords were asked for on date and saves the file,
// atomically: a crash leaves the old record or the new one.
func (a *Attempts) Record(date string, keywords []string) error {
	if _, err := time.Parse(kw.DateLayout, date); err != nil {
		return fmt.Errorf("date %q is not YYYY-MM-DD", date)
	}
	for _, k := range keywords {
		a.last[k] = date
	}
	f := attemptsFile{Version: attemptsVersion, Dates: map[string][]string{}}
	for k, d := range a.last {
		f.Dates[d] = append(f.Dates[d], k)
	}
	for _, ks := range f.Dates {
		slices.Sort(ks) // a stable file for the same record
	}
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("cannot encode the SERP attempts: %w", err)
	}
	if err := kw.WriteFileAtomic(a.path, b); err != nil {
		return fmt.Errorf("cannot save the SERP attempts: %w", err)
	}
	return nil
}
