package objstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/kwdata/kwdata/index"
	"github.com/kwdata/kwdata/kw"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
)

// incomingPrefix names a build being downloaded under <data>/index/; like
// the index's own staging folders it starts with a dot, so neither a
// store nor ListBuilds takes it for a build.
const incomingPrefix = ".incoming-"

// SyncOptions configures a Syncer.
type SyncOptions struct {
	// Data is the server's data folder; builds land in <data>/index/.
	// Required.
	Data string
	// Logger receives switches and failures. Default: discard.
	Logger *slog.Logger
	// PollInterval is how often CURRENT is checked. Default: 2s.
	PollInterval time.Duration
	// MinRetry is the wait after a failed sync, doubled after each
	// failure in a row up to MaxRetry. Defaults: 2s and 2m.
	MinRetry, MaxRetry time.Duration
	// Keep is how many builds stay in <data>/index/: the served one and
	// the ones it replaced, newest first. Default: 2.
	Keep int
	// Reload, if set, is called once the local CURRENT names a new build
	// (index.Store.Reload): an error means the store refused the build,
	// and the syncer points CURRENT back at the build it replaced.
	Reload func() error
	// Metrics, if set, counts syncs (NewMetrics).
	Metrics *Metrics
}

func (o *SyncOptions) ensureDefaults() error {
	if o.Data == "" {
		return errors.New("cannot sync builds: no data folder given")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 2 * time.Second
	}
	if o.MinRetry <= 0 {
		o.MinRetry = 2 * time.Second
	}
	if o.MaxRetry < o.MinRetry {
		o.MaxRetry = max(2*time.Minute, o.MinRetry)
	}
	if o.Keep < 1 {
		o.Keep = 2
	}
	return nil
}

// Metrics are the syncer's Prometheus metrics.
type Metrics struct {
	ok, failed prometheus.Counter
	bytes      prometheus.Counter
	failing    prometheus.Gauge
	lastOK     prometheus.Gauge
}

// NewMetrics registers the syncer's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	syncs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kwdata_index_syncs_total",
		Help: "Builds fetched from the object store and switched to (result=ok), or attempts that failed and keep the served build (result=failed).",
	}, []string{"result"})
	m := &Metrics{
		ok: syncs.WithLabelValues("ok"), failed: syncs.WithLabelValues("failed"),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kwdata_index_sync_bytes_total",
			Help: "Bytes of build files downloaded from the object store.",
		}),
		failing: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kwdata_index_sync_failing",
			Help: "1 while the last check of the object store failed (unreachable, or a build refused), else 0.",
		}),
		lastOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kwdata_index_sync_last_success_timestamp_seconds",
			Help: "Unix time of the last check of the object store that succeeded.",
		}),
	}
	reg.MustRegister(syncs, m.bytes, m.failing, m.lastOK)
	return m
}

// Syncer keeps a server's data folder on the build published in the
// object store. Each check asks for CURRENT with the ETag it last saw
// (If-None-Match), so an unchanged pointer costs one small request; a new
// build is downloaded to <data>/index/.incoming-<id>, every file checked
// against files.json, renamed into place, and the local CURRENT pointed
// at it. A failure at any step keeps the served build and is retried with
// backoff.
type Syncer struct {
	c    *Client
	opt  SyncOptions
	log  *slog.Logger
	wake chan struct{}

	mu   sync.Mutex // one sync at a time
	etag string     // of the CURRENT last acted on; "" forces a full check
}

// NewSyncer returns a syncer of c's location into opt.Data.
func NewSyncer(c *Client, opt SyncOptions) (*Syncer, error) {
	if err := opt.ensureDefaults(); err != nil {
		return nil, err
	}
	return &Syncer{c: c, opt: opt, log: opt.Logger.With("store", c.loc.String()), wake: make(chan struct{}, 1)}, nil
}

// Trigger asks a running syncer to check now (SIGHUP), ignoring any
// backoff.
func (s *Syncer) Trigger() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run checks at once, then every PollInterval and on Trigger, until ctx
// is done. After a failure it waits MinRetry, doubling up to MaxRetry,
// before the next check (Trigger does not wait).
func (s *Syncer) Run(ctx context.Context) {
	wait := time.Duration(0)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.wake:
			t.Stop()
		}
		if _, err := s.Sync(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			wait = s.backoff(wait)
			s.log.Error("cannot sync the index from the object store; keeping the served build", "retry_in", wait, "err", err)
		} else {
			wait = 0
		}
		t.Reset(max(wait, s.opt.PollInterval))
	}
}

// backoff returns the wait after a failure that followed a wait of prev
// (0 after a success): MinRetry, then doubling up to MaxRetry.
func (s *Syncer) backoff(prev time.Duration) time.Duration {
	return min(max(2*prev, s.opt.MinRetry), s.opt.MaxRetry)
}

// Sync checks CURRENT once and, if it names a build the data folder does
// not serve, fetches, verifies and switches to it. It returns the build id
// switched to ("" when nothing changed).
func (s *Syncer) Sync(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, err := s.sync(ctx)
	if m := s.opt.Metrics; m != nil {
		if err != nil {
			m.failed.Inc()
			m.failing.Set(1)
		} else {
			if id != "" {
				m.ok.Inc()
			}
			m.failing.Set(0)
			m.lastOK.Set(float64(time.Now().Unix()))
		}
	}
	return id, err
}

func (s *Syncer) sync(ctx context.Context) (string, error) {
	id, etag, changed, err := s.pointer(ctx)
	if err != nil || !changed {
		return "", err
	}
	served, err := index.Published(s.opt.Data)
	if err != nil {
		return "", err
	}
	if id == served {
		s.etag = etag
		return "", nil
	}
	dir := kw.IndexDir(s.opt.Data)
	final := filepath.Join(dir, id)
	if _, err := index.ReadManifest(s.opt.Data, id); err != nil {
		// Not here yet, or left incomplete: fetch it whole.
		if err := removeBuild(dir, id); err != nil {
			return "", fmt.Errorf("cannot remove the incomplete build %s: %w", final, err)
		}
		start := time.Now()
		n, err := s.fetch(ctx, dir, id)
		if err != nil {
			return "", fmt.Errorf("cannot fetch build %s: %w", id, err)
		}
		secs := time.Since(start).Seconds()
		s.log.Info("fetched index build", "build", id, "bytes", n, "seconds", fmt.Sprintf("%.2f", secs),
			"mib_per_s", fmt.Sprintf("%.1f", float64(n)/(1<<20)/max(secs, 1e-3)))
	}
	if err := index.SetCurrent(s.opt.Data, id); err != nil {
		return "", err
	}
	if s.opt.Reload != nil {
		if err := s.opt.Reload(); err != nil {
			// The store refused the build and keeps serving the old one;
			// so must CURRENT, or a restart would serve nothing. The
			// build is removed: the next try fetches it afresh.
			if served != "" {
				if perr := index.SetCurrent(s.opt.Data, served); perr != nil {
					err = errors.Join(err, perr)
				}
			}
			if rerr := removeBuild(dir, id); rerr != nil {
				err = errors.Join(err, rerr)
			}
			return "", fmt.Errorf("refused build %s: %w", id, err)
		}
	}
	s.etag = etag
	s.log.Info("switched to index build from the object store", "build", id, "replaced", served)
	s.prune(dir, id, served)
	return id, nil
}

// pointer reads CURRENT unless its ETag is the one last acted on.
func (s *Syncer) pointer(ctx context.Context) (id, etag string, changed bool, err error) {
	in := &s3.GetObjectInput{Bucket: aws.String(s.c.loc.Bucket), Key: aws.String(s.c.loc.key(pointerObject))}
	if s.etag != "" {
		in.IfNoneMatch = aws.String(s.etag)
	}
	req := s.c.start(ctx)
	defer req.end()
	out, err := s.c.s3.GetObject(req.ctx, in)
	if err = req.err(err); err != nil {
		var re *smithyhttp.ResponseError
		if errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotModified {
			return "", s.etag, false, nil
		}
		var none *types.NoSuchKey
		if errors.As(err, &none) {
			// Nothing published yet: not a failure of this server. A
			// missing bucket (NoSuchBucket) is one, and is reported.
			return "", "", false, nil
		}
		return "", "", false, fmt.Errorf("cannot read %s/CURRENT: %w", s.c.loc, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(req.reader(out.Body), 256))
	if err = req.err(err); err != nil {
		return "", "", false, fmt.Errorf("cannot read %s/CURRENT: %w", s.c.loc, err)
	}
	etag = aws.ToString(out.ETag)
	if etag != "" && etag == s.etag {
		return "", etag, false, nil // a store that ignores If-None-Match
	}
	id = strings.TrimSpace(string(b))
	if !index.ValidBuildID(id) {
		return "", "", false, fmt.Errorf("%s/CURRENT holds %q, not a build id (YYYYMMDDTHHMMSSZ-xxxxxx); publish a build with kwdata build-index --publish", s.c.loc, id)
	}
	return id, etag, true, nil
}

// fetch downloads build id into dir/.incoming-<id>, checks every file
// against files.json, and renames it to dir/<id>. It returns the bytes
// downloaded. On any failure the incoming folder is removed.
func (s *Syncer) fetch(ctx context.Context, dir, id string) (n int64, err error) {
	list, err := s.c.fileList(ctx, id)
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("cannot create %s: %w", dir, err)
	}
	if err := checkRoom(dir, list); err != nil {
		return 0, err
	}
	in := filepath.Join(dir, incomingPrefix+id)
	if err := os.RemoveAll(in); err != nil {
		return 0, fmt.Errorf("cannot clear %s: %w", in, err)
	}
	defer func() {
		if err != nil {
			if rerr := os.RemoveAll(in); rerr != nil {
				s.log.Error("cannot remove a failed download", "dir", in, "err", rerr)
			}
		}
	}()
	if err := os.MkdirAll(in, 0o755); err != nil {
		return 0, fmt.Errorf("cannot create %s: %w", in, err)
	}
	dirs := map[string]bool{in: true}
	for _, f := range list.Files {
		d := filepath.Dir(filepath.Join(in, filepath.FromSlash(f.Name)))
		if !dirs[d] {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return 0, fmt.Errorf("cannot create %s: %w", d, err)
			}
			dirs[d] = true
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.c.workers)
	for _, f := range list.Files {
		g.Go(func() error {
			return s.c.download(gctx, id, f, filepath.Join(in, filepath.FromSlash(f.Name)))
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	for _, f := range list.Files {
		n += f.Size
	}
	if m := s.opt.Metrics; m != nil {
		m.bytes.Add(float64(n))
	}
	for d := range dirs {
		if err := syncDir(d); err != nil {
			return 0, err
		}
	}
	final := filepath.Join(dir, id)
	if err := os.Rename(in, final); err != nil {
		return 0, fmt.Errorf("cannot rename %s to %s: %w", in, final, err)
	}
	return n, syncDir(dir)
}

// fileList reads and checks files.json of build id.
func (c *Client) fileList(ctx context.Context, id string) (*FileList, error) {
	key := c.loc.key(buildsDir, id, filesObject)
	req := c.start(ctx)
	defer req.end()
	out, err := c.s3.GetObject(req.ctx, &s3.GetObjectInput{Bucket: aws.String(c.loc.Bucket), Key: aws.String(key)})
	if err = req.err(err); err != nil {
		return nil, fmt.Errorf("cannot read the file list %s: %w", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(req.reader(out.Body), maxFileList+1))
	if err = req.err(err); err != nil {
		return nil, fmt.Errorf("cannot read the file list %s: %w", key, err)
	}
	if len(b) > maxFileList {
		return nil, fmt.Errorf("file list %s is larger than %d bytes", key, maxFileList)
	}
	var list FileList
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("cannot parse the file list %s: %w", key, err)
	}
	if err := list.check(id); err != nil {
		return nil, err
	}
	return &list, nil
}

// download writes one file of build id to name and checks its size and
// SHA-256 against f.
func (c *Client) download(ctx context.Context, id string, f File, name string) error {
	key := c.loc.key(buildsDir, id, f.Name)
	req := c.start(ctx)
	defer req.end()
	out, err := c.s3.GetObject(req.ctx, &s3.GetObjectInput{Bucket: aws.String(c.loc.Bucket), Key: aws.String(key)})
	if err = req.err(err); err != nil {
		return fmt.Errorf("cannot download %s: %w", key, err)
	}
	defer out.Body.Close()
	w, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("cannot create %s: %w", name, err)
	}
	h := sha256.New()
	// One byte past the listed size shows an object that is too long.
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(req.reader(out.Body), f.Size+1))
	err = req.err(err)
	if err == nil {
		err = w.Sync()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cannot download %s to %s: %w", key, name, err)
	}
	if n != f.Size {
		return fmt.Errorf("%s has %d bytes, files.json lists %d", key, n, f.Size)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != f.SHA256 {
		return fmt.Errorf("%s has SHA-256 %s, files.json lists %s: the object is damaged", key, sum, f.SHA256)
	}
	return nil
}

// prune removes the builds of dir beyond the Keep newest that include
// the served one and the one it replaced, and downloads left by a crash.
// The store may still be finishing lookups on the replaced build, which
// is why it stays.
func (s *Syncer) prune(dir, served, replaced string) {
	builds, err := index.ListBuilds(s.opt.Data)
	if err != nil {
		s.log.Error("cannot list local builds to prune them", "err", err)
		return
	}
	keep := map[string]bool{served: true}
	if replaced != "" && s.opt.Keep > 1 {
		keep[replaced] = true
	}
	for i := len(builds) - 1; i >= 0 && len(keep) < s.opt.Keep; i-- {
		keep[builds[i]] = true
	}
	for _, b := range builds {
		if !keep[b] {
			if err := os.RemoveAll(filepath.Join(dir, b)); err != nil {
				s.log.Error("cannot remove an old build", "build", b, "err", err)
			} else {
				s.log.Info("removed old index build", "build", b)
			}
		}
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range names {
		if strings.HasPrefix(e.Name(), incomingPrefix) {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				s.log.Error("cannot remove a left-over download", "dir", e.Name(), "err", err)
			}
		}
	}
}

// removeBuild removes the build id of the index folder dir. It refuses
// any name that is not a build id, so that a name from the store can
// never remove a pointer file or anything else the build list does not
// own.
func removeBuild(dir, id string) error {
	if !index.ValidBuildID(id) {
		return fmt.Errorf("refusing to remove %q from %s: not a build id", id, dir)
	}
	return os.RemoveAll(filepath.Join(dir, id))
}

// checkRoom refuses a build whose files add up to more bytes than the
// disk of dir has free, before anything is downloaded: files.json comes
// from the store, and a download that fills the disk would stop the
// served build's writes too. A disk whose free space cannot be read is
// not checked.
func checkRoom(dir string, list *FileList) error {
	free, ok := freeBytes(dir)
	if !ok {
		return nil
	}
	var total uint64
	for _, f := range list.Files {
		total += uint64(f.Size) // at most free plus one int64: no wrap
		if total > free {
			return fmt.Errorf("build %s declares at least %d bytes, but %s has %d bytes free; free space on that disk or check files.json in the store",
				list.BuildID, total, dir, free)
		}
	}
	return nil
}

// syncDir makes the entries of a directory durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("cannot open directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cannot sync directory %s: %w", dir, err)
	}
	return nil
}
