package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/kwdata/kwdata/index"
	"github.com/kwdata/kwdata/index/objstore"
	"github.com/kwdata/kwdata/internal/testservers"
)

// TestObjectStoreSwitch: build-index --publish uploads a build to a real
// S3 (Versity Gateway on loopback); three `kwdata serve --index s3://…`
// processes, each with a data folder of its own, download and serve it;
// a second build published under load reaches all three within 5 s, and
// no request of the load fails meanwhile.
func TestObjectStoreSwitch(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts four servers")
	}
	store := testservers.StartS3(t)
	for _, kv := range store.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	const bucket, loc = "kwdata-builds", "s3://kwdata-builds/prod/index"
	c, err := objstore.New(aws.Config{Credentials: credentials.NewStaticCredentialsProvider(store.AccessKey, store.Secret, "")},
		objstore.Location{Bucket: bucket}, objstore.Options{Endpoint: store.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CreateBucket(context.Background()); err != nil {
		t.Fatal(err)
	}

	env := tiersSetup(t)
	publish := func(date string) {
		t.Helper()
		out, _ := env.cli(t, "build-index", "--data", env.seed, "--date", date, "--publish", loc, "--s3-endpoint", store.Endpoint)
		if !regexp.MustCompile(`(?m)^uploaded index \S+ to ` + loc + `: \d+ files, \d+ bytes`).MatchString(out) {
			t.Fatalf("build-index --publish printed %q", out)
		}
	}
	publish(tiersDate)

	// A second date of the lake, so that the switch shows in "updated".
	const date2 = "2026-11-22"
	in := filepath.Join(t.TempDir(), "in")
	env.cli(t, "sample", "--out", in, "--keywords", "500", "--countries", "us", "--seed", "11")
	env.cli(t, "ingest", "--data", env.seed, "--date", date2, "--country", "us",
		"--planner-csv", filepath.Join(in, "us", "keyword-planner.csv"), "--serp-jsonl", filepath.Join(in, "us", "serps.jsonl"))
	env.cli(t, "similarity", "--data", env.seed, "--date", date2)

	type server struct {
		*tiersServer
		key, data string
	}
	var servers []server
	for range 3 {
		data := filepath.Join(t.TempDir(), "data")
		if err := os.MkdirAll(data, 0o755); err != nil {
			t.Fatal(err)
		}
		// A paid key each: the load loop must never meet an allowance.
		key, _ := env.createKey(t, data, "--tier", "paid")
		s := env.start(t, data, "--index", loc, "--s3-endpoint", store.Endpoint)
		servers = append(servers, server{s, key, data})
	}
	q := env.keywords[0]
	for i, s := range servers {
		if d := updated(t, s.lookup(t, q, "Authorization", "Bearer "+s.key)); d != tiersDate {
			t.Fatalf("server %d serves %s, want %s", i, d, tiersDate)
		}
	}

	// The load: each server asked in a loop, at most 2000 requests or 20 s,
	// until it answers with the new date.
	start := make(chan struct{})
	switched := make([]time.Time, len(servers))
	failures := make([][]string, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			testservers.Poll(20*time.Second, func() bool {
				r, err := s.send(s.client, "GET", "/v1/keyword?q="+strings.ReplaceAll(q, " ", "+")+"&country=us", "", "Authorization", "Bearer "+s.key)
				if err != nil || r.status != 200 {
					failures[i] = append(failures[i], fmt.Sprintf("status %d, %v: %.200s", r.status, err, r.body))
					return false
				}
				var body struct{ Updated string }
				if err := json.Unmarshal(r.body, &body); err != nil {
					failures[i] = append(failures[i], fmt.Sprintf("cannot parse %q: %v", r.body, err))
					return false
				}
				if body.Updated == date2 {
					switched[i] = time.Now()
					return true
				}
				return false
			})
		}()
	}
	close(start)
	publish(date2)
	published := time.Now()
	wg.Wait()
	for i, s := range servers {
		if len(failures[i]) > 0 {
			t.Errorf("server %d failed %d requests during the switch, first: %s", i, len(failures[i]), failures[i][0])
		}
		if switched[i].IsZero() {
			t.Errorf("server %d never served %s\n%s", i, date2, s.stderr())
			continue
		}
		took := switched[i].Sub(published)
		t.Logf("server %d serves %s %v after the publish", i, date2, took.Round(time.Millisecond))
		if took > 5*time.Second {
			t.Errorf("server %d switched %v after the publish, want within 5s", i, took)
		}
	}
	m := servers[0].do(t, "GET", "/metrics", "")
	if !strings.Contains(string(m.body), `kwdata_index_syncs_total{result="ok"} 2`) {
		t.Errorf("metrics do not count 2 syncs:\n%s", grepLines(string(m.body), "kwdata_index_sync"))
	}
	if t.Failed() {
		return
	}

	// A build damaged before its upload: its checksums match what was
	// uploaded, so the download passes, and each server's store refuses
	// it at its block checksums. The servers keep answering from the
	// build they serve, and their local CURRENT goes back to it.
	env.cli(t, "build-index", "--data", env.seed, "--date", date2)
	bad, err := os.ReadFile(filepath.Join(env.seed, "index", "CURRENT"))
	if err != nil {
		t.Fatal(err)
	}
	badID := strings.TrimSpace(string(bad))
	flipTableByte(t, filepath.Join(env.seed, "index", badID, "db"))
	pc, err := objstore.New(aws.Config{Credentials: credentials.NewStaticCredentialsProvider(store.AccessKey, store.Secret, "")},
		objstore.Location{Bucket: bucket, Prefix: "prod/index"}, objstore.Options{Endpoint: store.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pc.Publish(context.Background(), env.seed, badID); err != nil {
		t.Fatal(err)
	}
	refused := make([]bool, len(servers))
	testservers.Poll(30*time.Second, func() bool {
		for i, s := range servers {
			if d := updated(t, s.lookup(t, q, "Authorization", "Bearer "+s.key)); d != date2 {
				t.Fatalf("server %d serves %s while a damaged build is published, want %s", i, d, date2)
			}
			refused[i] = refused[i] || strings.Contains(s.stderr(), "refused build "+badID)
		}
		return !slices.Contains(refused, false)
	})
	for i, s := range servers {
		if !refused[i] {
			t.Errorf("server %d did not refuse the damaged build %s:\n%s", i, badID, s.stderr())
		}
		b, err := os.ReadFile(filepath.Join(s.data, "index", "CURRENT"))
		if err != nil || strings.TrimSpace(string(b)) == badID {
			t.Errorf("server %d: local CURRENT = %q, %v; want the served build", i, b, err)
		}
	}
	m = servers[0].do(t, "GET", "/metrics", "")
	if !strings.Contains(string(m.body), "kwdata_index_sync_failing 1") {
		t.Errorf("metrics do not show the failing sync:\n%s", grepLines(string(m.body), "kwdata_index_sync"))
	}
}

// flipTableByte flips one byte in the middle of the largest table of a
// build's database: inside a data block, whose checksum then fails.
func flipTableByte(tb testing.TB, dbDir string) {
	tb.Helper()
	tables, _ := filepath.Glob(filepath.Join(dbDir, "*.sst"))
	var name string
	var size int64
	for _, p := range tables {
		if fi, err := os.Stat(p); err == nil && fi.Size() > size {
			name, size = p, fi.Size()
		}
	}
	if name == "" {
		tb.Fatalf("no table in %s", dbDir)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		tb.Fatal(err)
	}
	b[len(b)/3] ^= 0x55
	if err := os.WriteFile(name, b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// updated returns the data date of a 200 keyword answer.
func updated(tb testing.TB, r tiersResp) string {
	tb.Helper()
	if r.status != 200 {
		tb.Fatalf("lookup answered %d: %s", r.status, r.body)
	}
	var body struct{ Updated string }
	if err := json.Unmarshal(r.body, &body); err != nil {
		tb.Fatal(err)
	}
	return body.Updated
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestRunConfigUploads: a pipeline run whose configuration has a publish
// section uploads the build it publishes, and a server's syncer fetches
// exactly that build; an unreachable store fails the build-index stage
// after the local publish, and the bucket keeps the previous build.
func TestRunConfigUploads(t *testing.T) {
	store := testservers.StartS3(t)
	for _, kv := range store.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	c, err := objstore.New(aws.Config{Credentials: credentials.NewStaticCredentialsProvider(store.AccessKey, store.Secret, "")},
		objstore.Location{Bucket: "nightly", Prefix: "idx"}, objstore.Options{Endpoint: store.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CreateBucket(context.Background()); err != nil {
		t.Fatal(err)
	}
	fetched := func() string {
		t.Helper()
		s, err := objstore.NewSyncer(c, objstore.SyncOptions{Data: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		id, err := s.Sync(context.Background())
		if err != nil {
			t.Fatalf("cannot fetch the uploaded build: %v", err)
		}
		return id
	}

	dir := t.TempDir()
	corpus := newSampleCorpus(t, dir, 200, 3)
	cfg, _ := fileConfig(t, dir, corpus, "publish: { to: s3://nightly/idx, endpoint: \""+store.Endpoint+"\" }\n")
	data := filepath.Join(dir, "data")
	out := run(t, "run", "--config", cfg, "--date", "2026-11-19")
	build1 := currentBuild(t, data)
	if !strings.Contains(out, "uploaded index "+build1+" to s3://nightly/idx") {
		t.Errorf("run printed %q, want the upload of %s", out, build1)
	}
	if got := fetched(); got != build1 {
		t.Fatalf("the bucket's CURRENT names %q, want %s", got, build1)
	}

	dead, _ := fileConfig(t, filepath.Join(dir, "dead"), corpus, "publish: { to: s3://nightly/idx, endpoint: \"http://"+testservers.FreeAddr(t)+"\" }\n")
	m, _, _ := testMain(t)
	err = m.Run(context.Background(), []string{"run", "--config", dead, "--date", "2026-11-20"})
	if err == nil || !strings.Contains(err.Error(), "build-index") || !strings.Contains(err.Error(), "nothing was built") ||
		!strings.Contains(err.Error(), "publish.endpoint") {
		t.Fatalf("run with an unreachable store: %v, want build-index to fail before it builds", err)
	}
	if ids, err := index.ListBuilds(filepath.Join(dir, "dead", "data")); err != nil || len(ids) > 0 {
		t.Errorf("builds %v, %v after a run whose store cannot be reached; want none", ids, err)
	}
	if got := fetched(); got != build1 {
		t.Errorf("after a failed upload the bucket's CURRENT names %q, want %s", got, build1)
	}
}

// TestPublishChecksTheStoreFirst: build-index --publish makes one cheap
// request to the store before it builds. Missing or refused credentials,
// a missing bucket and an unreachable store each end it with a one-line
// error that says what to set, and the data folder gains no build.
func TestPublishChecksTheStoreFirst(t *testing.T) {
	store := testservers.StartS3(t)
	const loc = "s3://kwdata-builds/idx"
	createBucket(t, store, "kwdata-builds")
	dir := t.TempDir()
	data := lakeOfOneDate(t, dir)
	run(t, "build-index", "--data", data, "--date", "2026-11-20")
	before := currentBuild(t, data)

	creds := []string{"AWS_ACCESS_KEY_ID", "AWS_PROFILE", "--s3-endpoint"}
	for _, tc := range []struct {
		name, url, endpoint string
		env                 map[string]string
		want                []string
	}{
		{"no credentials", loc, store.Endpoint, map[string]string{"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}, append(creds, "no credentials")},
		{"wrong secret", loc, store.Endpoint, map[string]string{"AWS_SECRET_ACCESS_KEY": "not-the-secret"}, append(creds, "access denied")},
		{"no bucket", "s3://no-such-bucket/idx", store.Endpoint, nil, []string{"no such bucket", "create bucket no-such-bucket", "--s3-endpoint"}},
		{"nothing listens", loc, "http://" + testservers.FreeAddr(t), nil, []string{"check that the store is up", "--s3-endpoint"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, kv := range store.Env() {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			m, out, _ := testMain(t)
			err := m.Run(context.Background(), []string{"build-index", "--data", data, "--date", "2026-11-20", "--publish", tc.url, "--s3-endpoint", tc.endpoint})
			if err == nil {
				t.Fatalf("build-index --publish succeeded; printed %q", out)
			}
			t.Log(err)
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("the error has several lines")
			}
			for _, w := range append(tc.want, "nothing was built") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q", w)
				}
			}
			checkBuilds(t, data, before)
		})
	}
}

// TestFailedUploadLeavesNoBuild: when the upload of a build fails (here a
// store that answers reads but refuses writes), build-index fails, and
// however often it is tried the data folder keeps what it had: no build
// is added and CURRENT stays. Once the store takes writes, one try
// publishes in both places.
func TestFailedUploadLeavesNoBuild(t *testing.T) {
	store := testservers.StartS3(t)
	for _, kv := range store.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	const loc = "s3://kwdata-builds/idx"
	createBucket(t, store, "kwdata-builds")
	dir := t.TempDir()
	data := lakeOfOneDate(t, dir)
	run(t, "build-index", "--data", data, "--date", "2026-11-20")
	before := currentBuild(t, data)

	target, err := url.Parse(store.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	readOnly := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>this key may not write</Message></Error>`)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer readOnly.Close()

	for range 3 {
		m, _, _ := testMain(t)
		err := m.Run(context.Background(), []string{"build-index", "--data", data, "--date", "2026-11-20", "--publish", loc, "--s3-endpoint", readOnly.URL})
		if err == nil || !strings.Contains(err.Error(), "AccessDenied") || !strings.Contains(err.Error(), "nothing was published") {
			t.Fatalf("build-index --publish to a store that refuses writes = %v, want the refusal", err)
		}
		checkBuilds(t, data, before)
	}

	out := run(t, "build-index", "--data", data, "--date", "2026-11-20", "--publish", loc, "--s3-endpoint", store.Endpoint)
	id := currentBuild(t, data)
	if id == before || !strings.Contains(out, "uploaded index "+id+" to "+loc) {
		t.Fatalf("build-index --publish printed %q; CURRENT = %s, want a new build uploaded", out, id)
	}
	// Two builds of one second sort by their random suffix, not by age.
	want := []string{before, id}
	slices.Sort(want)
	if ids, err := index.ListBuilds(data); err != nil || !slices.Equal(ids, want) {
		t.Errorf("builds %v, %v; want %s and %s", ids, err, before, id)
	}
}

// lakeOfOneDate ingests a small sample for 2026-11-20 into dir/data and
// computes its similarity, ready for build-index.
func lakeOfOneDate(tb testing.TB, dir string) string {
	tb.Helper()
	c := newSampleCorpus(tb, dir, 200, 3)
	data := filepath.Join(dir, "data")
	run(tb, "ingest", "--data", data, "--date", "2026-11-20", "--country", "us", "--planner-csv", c.planner, "--serp-jsonl", c.serpFile)
	run(tb, "similarity", "--data", data, "--date", "2026-11-20")
	return data
}

// checkBuilds fails unless data holds exactly one build, current, and no
// unfinished one.
func checkBuilds(tb testing.TB, data, current string) {
	tb.Helper()
	if got := currentBuild(tb, data); got != current {
		tb.Errorf("CURRENT = %s, want %s as before", got, current)
	}
	if ids, err := index.ListBuilds(data); err != nil || !slices.Equal(ids, []string{current}) {
		tb.Errorf("builds %v, %v; want only %s", ids, err, current)
	}
	if left, err := index.Unfinished(data); err != nil || len(left) > 0 {
		tb.Errorf("unfinished builds %v, %v; want none", left, err)
	}
}

func createBucket(tb testing.TB, store *testservers.S3, bucket string) {
	tb.Helper()
	c, err := objstore.New(aws.Config{Credentials: credentials.NewStaticCredentialsProvider(store.AccessKey, store.Secret, "")},
		objstore.Location{Bucket: bucket}, objstore.Options{Endpoint: store.Endpoint})
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.CreateBucket(context.Background()); err != nil {
		tb.Fatal(err)
	}
}
