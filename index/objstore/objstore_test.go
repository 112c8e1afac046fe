package objstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/kwdata/kwdata/index"
	"github.com/kwdata/kwdata/internal/testservers"
	"github.com/kwdata/kwdata/kw"
	"github.com/kwdata/kwdata/lake"
	"github.com/prometheus/client_golang/prometheus"
)

const testBucket = "kwdata-builds"

// startStore runs a real S3 (Versity Gateway) on loopback with an empty
// bucket and returns a client of prefix in it.
func startStore(tb testing.TB, prefix string) (*Client, *testservers.S3) {
	tb.Helper()
	srv := testservers.StartS3(tb)
	c, err := New(aws.Config{Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.Secret, "")},
		Location{Bucket: testBucket, Prefix: prefix}, Options{Endpoint: srv.Endpoint})
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.CreateBucket(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return c, srv
}

func testLogger(tb testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tbWriter{tb}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// buildDate writes n keywords of country US with the given volume to the
// lake of data on date and builds the index of that date, stamped day
// days after a fixed time so that each build has its own id.
func buildDate(tb testing.TB, data, date string, n int, volume int64, day int) index.Manifest {
	tb.Helper()
	var keywords []kw.KeywordRecord
	var related []kw.RelatedRow
	var intents []kw.IntentRow
	for i := range n {
		k := fmt.Sprintf("kw %06d", i)
		v := volume
		keywords = append(keywords, kw.KeywordRecord{Keyword: k, Volume: &v})
		related = append(related, kw.RelatedRow{Keyword: k, Rank: 1, Related: fmt.Sprintf("kw %06d", (i+1)%n), Overlap: 5, Volume: &v})
		intents = append(intents, kw.IntentRow{Keyword: k, Intent: k})
	}
	for ds, rows := range map[string]any{kw.DatasetKeywords: keywords, kw.DatasetRelated: related, kw.DatasetIntents: intents} {
		var err error
		switch r := rows.(type) {
		case []kw.KeywordRecord:
			err = lake.WritePartition(data, ds, "us", date, r)
		case []kw.RelatedRow:
			err = lake.WritePartition(data, ds, "us", date, r)
		case []kw.IntentRow:
			err = lake.WritePartition(data, ds, "us", date, r)
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
	now := time.Date(2026, 11, 1, 3, 0, 0, 0, time.UTC).AddDate(0, 0, day)
	m, err := index.Build(context.Background(), index.BuildOptions{Data: data, Date: date, Now: func() time.Time { return now }})
	if err != nil {
		tb.Fatalf("cannot build the index of %s: %v", date, err)
	}
	return m
}

func publish(tb testing.TB, c *Client, data, id string) {
	tb.Helper()
	if _, err := c.Publish(context.Background(), data, id); err != nil {
		tb.Fatal(err)
	}
}

func published(tb testing.TB, data string) string {
	tb.Helper()
	id, err := index.Published(data)
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

func localBuilds(tb testing.TB, data string) []string {
	tb.Helper()
	ids, err := index.ListBuilds(data)
	if err != nil {
		tb.Fatal(err)
	}
	return ids
}

// incoming lists the download folders left in <data>/index/.
func incoming(tb testing.TB, data string) []string {
	tb.Helper()
	ents, err := os.ReadDir(kw.IndexDir(data))
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), incomingPrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

func newSyncer(tb testing.TB, c *Client, data string, reload func() error) *Syncer {
	tb.Helper()
	s, err := NewSyncer(c, SyncOptions{Data: data, Logger: testLogger(tb), Reload: reload})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func openStore(tb testing.TB, data string) *index.Store {
	tb.Helper()
	st, err := index.OpenStore(context.Background(), data, index.StoreOptions{Logger: testLogger(tb), PollInterval: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

func servedDate(tb testing.TB, st *index.Store) string {
	tb.Helper()
	e, err := st.Lookup(context.Background(), "US", "kw 000001")
	if err != nil {
		tb.Fatalf("lookup on the served build: %v", err)
	}
	return e.DataDate
}

// TestPublishThenSync: a server's data folder follows what is published,
// switches its store, keeps the last two builds, and an unchanged
// CURRENT changes nothing.
func TestPublishThenSync(t *testing.T) {
	ctx := context.Background()
	c, _ := startStore(t, "prod/index")
	pipe, srv := t.TempDir(), t.TempDir()
	m1 := buildDate(t, pipe, "2026-11-01", 50, 100, 0)
	publish(t, c, pipe, m1.BuildID)

	s := newSyncer(t, c, srv, nil)
	got, err := s.Sync(ctx)
	if err != nil || got != m1.BuildID {
		t.Fatalf("first Sync = %q, %v; want %s", got, err, m1.BuildID)
	}
	if p := published(t, srv); p != m1.BuildID {
		t.Fatalf("local CURRENT = %q, want %s", p, m1.BuildID)
	}
	st := openStore(t, srv)
	if d := servedDate(t, st); d != "2026-11-01" {
		t.Fatalf("served date %s, want 2026-11-01", d)
	}
	s.opt.Reload = st.Reload

	var ids []string
	for i, date := range []string{"2026-11-02", "2026-11-03"} {
		m := buildDate(t, pipe, date, 50, 100, i+1)
		publish(t, c, pipe, m.BuildID)
		got, err := s.Sync(ctx)
		if err != nil || got != m.BuildID {
			t.Fatalf("Sync after publishing %s = %q, %v", m.BuildID, got, err)
		}
		if d := servedDate(t, st); d != date {
			t.Fatalf("served date %s after the switch, want %s", d, date)
		}
		ids = append(ids, m.BuildID)
	}
	if got := localBuilds(t, srv); !slices.Equal(got, ids) {
		t.Errorf("local builds %v, want the last two %v", got, ids)
	}
	got, err = s.Sync(ctx)
	if err != nil || got != "" {
		t.Errorf("Sync of an unchanged CURRENT = %q, %v; want nothing", got, err)
	}
}

// TestSyncRefusesDamagedObject: a byte flipped in a published table is
// caught by its SHA-256; the served build stays, nothing of the damaged
// one is left, and once it is published again intact the server takes it.
func TestSyncRefusesDamagedObject(t *testing.T) {
	ctx := context.Background()
	c, store := startStore(t, "idx")
	pipe, srv := t.TempDir(), t.TempDir()
	m1 := buildDate(t, pipe, "2026-11-01", 50, 100, 0)
	publish(t, c, pipe, m1.BuildID)
	s := newSyncer(t, c, srv, nil)
	if _, err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	st := openStore(t, srv)
	s.opt.Reload = st.Reload

	m2 := buildDate(t, pipe, "2026-11-02", 50, 100, 1)
	publish(t, c, pipe, m2.BuildID)
	tables, _ := filepath.Glob(filepath.Join(store.Dir, testBucket, "idx", buildsDir, m2.BuildID, "db", "*.sst"))
	if len(tables) == 0 {
		t.Fatal("no table of the published build in the store's folder")
	}
	b, err := os.ReadFile(tables[0])
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x40
	if err := os.WriteFile(tables[0], b, 0o644); err != nil {
		t.Fatal(err)
	}

	for range 2 { // and again: a retry refuses it the same way
		_, err = s.Sync(ctx)
		if err == nil || !strings.Contains(err.Error(), "SHA-256") {
			t.Fatalf("Sync of a damaged build = %v, want a checksum error", err)
		}
	}
	if p := published(t, srv); p != m1.BuildID {
		t.Errorf("local CURRENT = %q after the refusal, want %s", p, m1.BuildID)
	}
	if d := servedDate(t, st); d != "2026-11-01" {
		t.Errorf("served date %s after the refusal, want 2026-11-01", d)
	}
	if got := localBuilds(t, srv); !slices.Equal(got, []string{m1.BuildID}) {
		t.Errorf("local builds %v, want only %s", got, m1.BuildID)
	}
	if left := incoming(t, srv); len(left) > 0 {
		t.Errorf("download folders left: %v", left)
	}

	publish(t, c, pipe, m2.BuildID)
	if got, err := s.Sync(ctx); err != nil || got != m2.BuildID {
		t.Fatalf("Sync after the intact publish = %q, %v", got, err)
	}
	if d := servedDate(t, st); d != "2026-11-02" {
		t.Errorf("served date %s, want 2026-11-02", d)
	}
}

// TestPartialUploadNeverSeen: a build whose files are all uploaded but
// whose publish stopped before CURRENT is invisible to servers.
func TestPartialUploadNeverSeen(t *testing.T) {
	ctx := context.Background()
	c, _ := startStore(t, "")
	pipe, srv := t.TempDir(), t.TempDir()
	m1 := buildDate(t, pipe, "2026-11-01", 20, 100, 0)
	publish(t, c, pipe, m1.BuildID)
	s := newSyncer(t, c, srv, nil)
	if _, err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	m2 := buildDate(t, pipe, "2026-11-02", 20, 100, 1)
	if _, err := c.upload(ctx, filepath.Join(kw.IndexDir(pipe), m2.BuildID), m2.BuildID); err != nil {
		t.Fatal(err)
	}
	s.etag = "" // no help from If-None-Match: the pointer is read whole
	if got, err := s.Sync(ctx); err != nil || got != "" {
		t.Fatalf("Sync after a partial publish = %q, %v; want nothing", got, err)
	}
	if p := published(t, srv); p != m1.BuildID {
		t.Errorf("local CURRENT = %q, want %s", p, m1.BuildID)
	}
	if got := localBuilds(t, srv); !slices.Equal(got, []string{m1.BuildID}) {
		t.Errorf("local builds %v, want only %s", got, m1.BuildID)
	}
}

// TestSyncStoreRefusal: when the store refuses a fetched build, CURRENT
// goes back to the build served, and the refused one is removed.
func TestSyncStoreRefusal(t *testing.T) {
	ctx := context.Background()
	c, _ := startStore(t, "p")
	pipe, srv := t.TempDir(), t.TempDir()
	m1 := buildDate(t, pipe, "2026-11-01", 20, 100, 0)
	publish(t, c, pipe, m1.BuildID)
	s := newSyncer(t, c, srv, nil)
	if _, err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	m2 := buildDate(t, pipe, "2026-11-02", 20, 100, 1)
	publish(t, c, pipe, m2.BuildID)
	refusals := 0
	s.opt.Reload = func() error { refusals++; return errors.New("table damaged") }
	if _, err := s.Sync(ctx); err == nil || !strings.Contains(err.Error(), "table damaged") {
		t.Fatalf("Sync = %v, want the store's refusal", err)
	}
	if refusals != 1 {
		t.Errorf("Reload called %d times, want 1", refusals)
	}
	if p := published(t, srv); p != m1.BuildID {
		t.Errorf("local CURRENT = %q after the refusal, want %s", p, m1.BuildID)
	}
	if got := localBuilds(t, srv); !slices.Equal(got, []string{m1.BuildID}) {
		t.Errorf("local builds %v, want only %s", got, m1.BuildID)
	}
}

// TestSyncNothingPublished: an empty prefix is not a failure, and leaves
// the data folder without an index.
func TestSyncNothingPublished(t *testing.T) {
	c, _ := startStore(t, "empty")
	srv := t.TempDir()
	s := newSyncer(t, c, srv, nil)
	if got, err := s.Sync(context.Background()); err != nil || got != "" {
		t.Fatalf("Sync = %q, %v; want nothing", got, err)
	}
	if p := published(t, srv); p != "" {
		t.Errorf("local CURRENT = %q, want none", p)
	}
}

// TestSyncMissingBucket: a bucket that does not exist is a failure to
// report, not an empty store to wait on.
func TestSyncMissingBucket(t *testing.T) {
	_, srv := startStore(t, "")
	c, err := New(aws.Config{Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.Secret, "")},
		Location{Bucket: "no-such-bucket"}, Options{Endpoint: srv.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	s := newSyncer(t, c, t.TempDir(), nil)
	if _, err := s.Sync(context.Background()); err == nil || !strings.Contains(err.Error(), "NoSuchBucket") {
		t.Fatalf("Sync of a missing bucket = %v, want NoSuchBucket", err)
	}
}

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Location
		wantErr bool
	}{
		{in: "s3://bucket", want: Location{Bucket: "bucket"}},
		{in: "s3://bucket/", want: Location{Bucket: "bucket"}},
		{in: "s3://bucket/a/b/", want: Location{Bucket: "bucket", Prefix: "a/b"}},
		{in: "s3://bucket/index", want: Location{Bucket: "bucket", Prefix: "index"}},
		{in: "s3:///index", wantErr: true},
		{in: "s3://bucket/a//b", wantErr: true},
		{in: "s3://bucket/a/../b", wantErr: true},
		{in: "s3://bucket:9000/a", wantErr: true},
		{in: "s3://user@bucket/a", wantErr: true},
		{in: "s3://bucket/a?x=1", wantErr: true},
		{in: "https://bucket/a", wantErr: true},
		{in: "/data/index", wantErr: true},
	} {
		got, err := ParseURL(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseURL(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if err == nil {
			if back, err := ParseURL(got.String()); err != nil || back != got {
				t.Errorf("ParseURL(%q.String()) = %+v, %v", tc.in, back, err)
			}
		}
	}
}

func TestFileListCheck(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	ok := func(names ...string) FileList {
		l := FileList{BuildID: "b1"}
		for _, n := range names {
			l.Files = append(l.Files, File{Name: n, Size: 1, SHA256: sum})
		}
		return l
	}
	bad := ok("manifest.json", "db/1.sst")
	bad.Files[1].SHA256 = "xyz"
	neg := ok("manifest.json")
	neg.Files[0].Size = -1
	for _, tc := range []struct {
		name string
		list FileList
		want string // part of the error; "" for none
	}{
		{"good", ok("manifest.json", "db/000005.sst", "db/MANIFEST-000001"), ""},
		{"other build", FileList{BuildID: "b2", Files: ok("manifest.json").Files}, "names build"},
		{"empty", FileList{BuildID: "b1"}, "lists 0 files"},
		{"no manifest", ok("db/1.sst"), "no manifest.json"},
		{"climbs out", ok("manifest.json", "../CURRENT"), "not a relative path"},
		{"absolute", ok("manifest.json", "/etc/passwd"), "not a relative path"},
		{"hidden", ok("manifest.json", ".incoming-x/a"), "not a relative path"},
		{"unclean", ok("manifest.json", "db//1.sst"), "not a relative path"},
		{"backslash", ok("manifest.json", `db\1.sst`), "not a relative path"},
		{"twice", ok("manifest.json", "manifest.json"), "twice"},
		{"bad checksum", bad, "not a SHA-256"},
		{"negative size", neg, "size of -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.list.check("b1")
			if tc.want == "" {
				if err != nil {
					t.Fatalf("check = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("check = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// FuzzFileList: files.json comes from the store, so whatever it holds
// either is refused or names only files inside the build folder.
func FuzzFileList(f *testing.F) {
	sum := strings.Repeat("0f", 32)
	f.Add(`{"build_id":"b1","files":[{"name":"manifest.json","size":3,"sha256":"` + sum + `"}]}`)
	f.Add(`{"build_id":"b1","files":[{"name":"manifest.json","size":3,"sha256":"` + sum + `"},{"name":"db/../../x","size":1,"sha256":"` + sum + `"}]}`)
	f.Add(`{"build_id":"b1","files":[]}`)
	f.Fuzz(func(t *testing.T, s string) {
		var l FileList
		if json.Unmarshal([]byte(s), &l) != nil {
			return
		}
		if l.check("b1") != nil {
			return
		}
		root := filepath.Join("data", "index", ".incoming-b1")
		for _, file := range l.Files {
			p := filepath.Join(root, filepath.FromSlash(file.Name))
			rel, err := filepath.Rel(root, p)
			if err != nil || rel == "." || strings.HasPrefix(rel, "..") || filepath.IsAbs(rel) {
				t.Fatalf("accepted %q, which lands at %s", file.Name, p)
			}
		}
	})
}

// TestRunFollowsAndRetries: a running syncer takes a new build within a
// poll or two, Trigger checks at once whatever the poll interval, and a
// store that cannot be reached is retried without ending the loop.
func TestRunFollowsAndRetries(t *testing.T) {
	c, _ := startStore(t, "run")
	pipe, srv := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waitFor := func(id string) {
		t.Helper()
		testservers.WaitFor(t, 5*time.Second, "local CURRENT "+id, func() bool { return published(t, srv) == id })
	}

	s, err := NewSyncer(c, SyncOptions{Data: srv, Logger: testLogger(t), PollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	m1 := buildDate(t, pipe, "2026-11-01", 20, 100, 0)
	publish(t, c, pipe, m1.BuildID)
	waitFor(m1.BuildID)

	// A poll of an hour: once its check at start is done, only Trigger
	// can bring the next build in time.
	slowReg := prometheus.NewRegistry()
	slow, err := NewSyncer(c, SyncOptions{Data: srv, Logger: testLogger(t), PollInterval: time.Hour, Metrics: NewMetrics(slowReg)})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	done = make(chan struct{})
	go func() { slow.Run(ctx); close(done) }()
	testservers.WaitFor(t, 5*time.Second, "the check at start to succeed", func() bool {
		return metricValue(t, slowReg, "kwdata_index_sync_last_success_timestamp_seconds", "") != 0
	})
	m2 := buildDate(t, pipe, "2026-11-02", 20, 100, 1)
	publish(t, c, pipe, m2.BuildID)
	slow.Trigger()
	waitFor(m2.BuildID)
	cancel()
	<-done

	// Nothing listens on the endpoint: every check fails, the loop goes on.
	dead, err := New(aws.Config{Credentials: credentials.NewStaticCredentialsProvider("a", "b", "")},
		Location{Bucket: testBucket}, Options{Endpoint: "http://" + testservers.FreeAddr(t), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	down, err := NewSyncer(dead, SyncOptions{Data: srv, Logger: testLogger(t), PollInterval: 10 * time.Millisecond,
		MinRetry: 10 * time.Millisecond, MaxRetry: 40 * time.Millisecond, Metrics: NewMetrics(reg)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	down.Run(ctx)
	if got := metricValue(t, reg, "kwdata_index_sync_failing", ""); got != 1 {
		t.Errorf("kwdata_index_sync_failing = %v, want 1", got)
	}
	if got := metricValue(t, reg, "kwdata_index_syncs_total", "failed"); got < 3 {
		t.Errorf("failed syncs = %v in 2s with a 40ms cap, want several", got)
	}
	if p := published(t, srv); p != m2.BuildID {
		t.Errorf("local CURRENT = %q after the failures, want %s", p, m2.BuildID)
	}
}

func TestBackoff(t *testing.T) {
	s, err := NewSyncer(&Client{loc: Location{Bucket: "b"}}, SyncOptions{Data: "d"})
	if err != nil {
		t.Fatal(err)
	}
	wait := time.Duration(0)
	var got []time.Duration
	for range 9 {
		wait = s.backoff(wait)
		got = append(got, wait)
	}
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second,
		64 * time.Second, 2 * time.Minute, 2 * time.Minute, 2 * time.Minute}
	if !slices.Equal(got, want) {
		t.Errorf("backoff = %v, want %v", got, want)
	}
}

// metricValue returns the value of the metric name in reg, of the series
// whose one label has the value label ("" for a metric without labels).
func metricValue(tb testing.TB, reg *prometheus.Registry, name, label string) float64 {
	tb.Helper()
	families, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if label != "" && (len(m.GetLabel()) != 1 || m.GetLabel()[0].GetValue() != label) {
				continue
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	tb.Fatalf("no metric %s{%s}", name, label)
	return 0
}
