package index

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/cockroachdb/errors/oserror"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/kwdata/kwdata/kw"
)

// FormatVersion is the index format this package writes: the directory
// layout, the key layout and value version ValueVersion. Version 2 added
// missing values to the value, version 3 the YoY and three month changes
// and the intent groups (keys country, 0x01, leader; see group.go) and the
// suggestion keys (0x02 and 0x03; see suggest.go). A store also reads
// builds of versions 1 and 2 (oldestFormatVersion), so an upgraded server
// keeps serving the build it finds until the next one is published (they
// have no groups and no suggestions: those answer not found), and refuses
// any other format (an older server refuses a newer build at its manifest,
// with a message).
const FormatVersion = 3

// oldestFormatVersion is the oldest build format a store still reads.
const oldestFormatVersion = 1

// Names inside <data>/index/ and inside a build.
const (
	pointerName    = "CURRENT"
	pointerTmpName = "CURRENT.tmp"
	manifestName   = "manifest.json"
	dbDirName      = "db"
	buildingPrefix = ".building-"
)

// maxManifestBytes bounds what a store reads of a manifest, so a damaged
// or foreign file cannot exhaust memory.
const maxManifestBytes = 1 << 20

// Manifest describes one build. It is written as manifest.json in the
// build directory before the build is published.
type Manifest struct {
	FormatVersion int            `json:"format_version"`
	DataDate      string         `json:"data_date"` // the lake date, "YYYY-MM-DD"
	BuiltAt       time.Time      `json:"built_at"`
	BuildID       string         `json:"build_id"`  // the build directory's name
	Countries     map[string]int `json:"countries"` // upper-case code -> keyword count
	Keys          int            `json:"keys"`      // keywords in all countries
	Bytes         int64          `json:"bytes"`     // size of the SSTables
	// Probes are keys the build wrote (the first and last of every SSTable
	// and of every country); a store looks them all up before it serves the
	// build.
	Probes []Probe `json:"probes"`
	// Examples are, per upper-case country code, its most searched
	// keywords, those with related keywords first (at most MaxExamples):
	// what the home page offers to try, so its links always answer. Absent
	// in builds made before it existed.
	Examples map[string][]string `json:"examples,omitempty"`
	// Explore is the version of the explorer's tables the build holds
	// (explore_build.go); 0, in builds made before them, is none.
	Explore int `json:"explore,omitempty"`
}

// MaxExamples is the most example keywords a build records per country.
const MaxExamples = 3

// Probe is one key of a build: a country and a normalized keyword.
type Probe struct {
	Country string `json:"country"`
	Keyword string `json:"keyword"`
}

// appendKey appends the key of a keyword in a country: the upper-case
// two-letter code, 0x00, the keyword. ok is false for a country code that
// cannot be in the index (the caller answers not found).
func appendKey(dst []byte, country, keyword string) (key []byte, ok bool) {
	if len(country) != 2 {
		return dst, false
	}
	for i := 0; i < 2; i++ {
		c := country[i]
		switch {
		case c >= 'a' && c <= 'z':
			c -= 'a' - 'A'
		case c >= 'A' && c <= 'Z':
		default:
			return dst, false
		}
		dst = append(dst, c)
	}
	dst = append(dst, 0)
	return append(dst, keyword...), true
}

// splitKey is appendKey's inverse.
func splitKey(key []byte) (country, keyword string, ok bool) {
	if len(key) < 3 || key[2] != 0 {
		return "", "", false
	}
	return string(key[:2]), string(key[3:]), true
}

// buildIDPattern is the form newBuildID gives every build id.
var buildIDPattern = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}$`)

// ValidBuildID reports whether id has the form Build gives build ids: the
// build time and six lower-case hex digits ("20261126T213500Z-0a1b2c").
// An id that arrives from elsewhere (an object store's pointer) must pass
// it before it names anything under <data>/index/, where it then cannot
// name a pointer file (CURRENT, CURRENT.tmp) or a staging folder.
func ValidBuildID(id string) bool { return buildIDPattern.MatchString(id) }

// validBuildID reports whether a name in the local index folder can be a
// build: not empty, no path separators, no leading dot (staging and
// hidden names), and not a pointer file. It is looser than ValidBuildID
// because only Build and SetCurrent (which checks ValidBuildID) name
// what is there.
func validBuildID(id string) bool {
	return id != "" && id[0] != '.' && !strings.ContainsAny(id, "/\\\x00") && len(id) <= 128 &&
		id != pointerName && id != pointerTmpName
}

// Published returns the build id that <data>/index/CURRENT names, or "" if
// no index has been published yet.
func Published(data string) (string, error) {
	return readPointer(vfs.Default, kw.IndexDir(data))
}

func readPointer(fs vfs.FS, dir string) (string, error) {
	name := fs.PathJoin(dir, pointerName)
	f, err := fs.Open(name)
	if err != nil {
		if oserror.IsNotExist(err) {
			return "", nil
		}
		return "", fmt.Errorf("cannot open index pointer %s: %w", name, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return "", fmt.Errorf("cannot read index pointer %s: %w", name, err)
	}
	id := strings.TrimSpace(string(b))
	if !validBuildID(id) {
		return "", fmt.Errorf("index pointer %s holds %q, not a build id; fix or remove it", name, id)
	}
	return id, nil
}

// SetCurrent points <data>/index/CURRENT at the complete build id the way
// Build publishes one: the pointer is written to CURRENT.tmp, synced and
// renamed over CURRENT, so a reader sees the old pointer or the new one,
// never a half-written one. It is for a build that arrived complete from
// elsewhere (an object store) and was renamed into <data>/index/; a store
// watching the folder switches to it, or refuses it, as after Build.
func SetCurrent(data, id string) error {
	if !ValidBuildID(id) {
		return fmt.Errorf("cannot publish build %q: not a build id", id)
	}
	fs := vfs.Default
	dir := kw.IndexDir(data)
	if _, err := readManifest(fs, fs.PathJoin(dir, id), id); err != nil {
		return fmt.Errorf("cannot publish build %s: %w", id, err)
	}
	tmp := fs.PathJoin(dir, pointerTmpName)
	if err := writeFileSync(fs, tmp, []byte(id+"\n")); err != nil {
		_ = fs.Remove(tmp)
		return err
	}
	if err := fs.Rename(tmp, fs.PathJoin(dir, pointerName)); err != nil {
		_ = fs.Remove(tmp)
		return fmt.Errorf("cannot point %s at build %s: %w", pointerName, id, err)
	}
	return syncDir(fs, dir)
}

// ListBuilds returns the ids of the complete builds under <data>/index/
// (those with a manifest), oldest first to the second: ids begin with
// their build time, then a random suffix that orders builds of one second.
// Builds in progress, and the leftovers of builds that crashed, are named
// .building-<id> and are not listed; they are safe to delete when no build
// is running.
func ListBuilds(data string) ([]string, error) {
	return listBuilds(vfs.Default, kw.IndexDir(data))
}

func listBuilds(fs vfs.FS, dir string) ([]string, error) {
	names, err := fs.List(dir)
	if err != nil {
		if oserror.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("cannot list index builds in %s: %w", dir, err)
	}
	var out []string
	for _, n := range names {
		if !validBuildID(n) {
			continue
		}
		if _, err := fs.Stat(fs.PathJoin(dir, n, manifestName)); err != nil {
			continue
		}
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// Unfinished returns the paths of the builds under <data>/index/ that are
// not complete: builds in progress and the leftovers of builds that
// crashed (.building-<id>). Only a caller that knows no build is running,
// or that judges by their age, may delete them.
func Unfinished(data string) ([]string, error) {
	dir := kw.IndexDir(data)
	names, err := vfs.Default.List(dir)
	if err != nil {
		if oserror.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("cannot list index builds in %s: %w", dir, err)
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, buildingPrefix) {
			out = append(out, vfs.Default.PathJoin(dir, n))
		}
	}
	sort.Strings(out)
	return out, nil
}

// ReadManifest reads and checks the manifest of the build id under
// <data>/index/.
func ReadManifest(data, id string) (Manifest, error) {
	if !validBuildID(id) {
		return Manifest{}, fmt.Errorf("%q is not a build id", id)
	}
	dir := kw.IndexDir(data)
	return readManifest(vfs.Default, vfs.Default.PathJoin(dir, id), id)
}

// readManifest reads and checks the manifest of build id.
func readManifest(fs vfs.FS, buildDir, id string) (Manifest, error) {
	var m Manifest
	name := fs.PathJoin(buildDir, manifestName)
	f, err := fs.Open(name)
	if err != nil {
		return m, fmt.Errorf("cannot open manifest: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return m, fmt.Errorf("cannot read manifest %s: %w", name, err)
	}
	if len(b) > maxManifestBytes {
		return m, fmt.Errorf("manifest %s is larger than %d bytes", name, maxManifestBytes)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("cannot parse manifest %s: %w", name, err)
	}
	if m.FormatVersion < oldestFormatVersion || m.FormatVersion > FormatVersion {
		return m, fmt.Errorf("manifest %s has format version %d; this build reads versions %d to %d", name, m.FormatVersion, oldestFormatVersion, FormatVersion)
	}
	if m.BuildID != id {
		return m, fmt.Errorf("manifest %s names build %q, not %q", name, m.BuildID, id)
	}
	if _, err := time.Parse(kw.DateLayout, m.DataDate); err != nil {
		return m, fmt.Errorf("manifest %s has data date %q, not YYYY-MM-DD", name, m.DataDate)
	}
	if m.Keys > 0 && len(m.Probes) == 0 {
		return m, fmt.Errorf("manifest %s lists no probe keys", name)
	}
	return m, nil
}

// writeFileSync writes a small file and syncs it before closing.
func writeFileSync(fs vfs.FS, name string, b []byte) error {
	f, err := fs.Create(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("cannot create %s: %w", name, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("cannot write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("cannot sync %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot close %s: %w", name, err)
	}
	return nil
}

// syncDir makes the entries of a directory (new names, renames) durable.
func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("cannot open directory %s: %w", dir, err)
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return fmt.Errorf("cannot sync directory %s: %w", dir, err)
	}
	if err := d.Close(); err != nil {
		return fmt.Errorf("cannot close directory %s: %w", dir, err)
	}
	return nil
}
