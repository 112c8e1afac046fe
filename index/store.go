package index

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/kwdata/kwdata/kw"
)

// StoreOptions configures OpenStore.
type StoreOptions struct {
	// Logger receives swaps, refusals and Pebble's messages. Default: discard.
	Logger *slog.Logger
	// CacheBytes sizes the block cache, shared by the served build and the
	// one being switched to. Default: 256 MiB.
	CacheBytes int64
	// PollInterval is how often CURRENT is checked for a new build.
	// Default: 2s.
	PollInterval time.Duration
	// FS is where the index is read. Default: vfs.Default.
	FS vfs.FS
	// Now is the clock of the retry backoff. Default: time.Now.
	Now func() time.Time
}

// The poller retries a refused build after minRetry, doubling the wait
// after each refusal up to maxRetry. A refusal may be temporary (the LOCK
// held a moment, too many open files), so a retry must come without a new
// publish; a damaged build stays refused but costs one open and one log
// line every few minutes.
const (
	minRetry = 5 * time.Second
	maxRetry = 5 * time.Minute
)

func (o *StoreOptions) ensureDefaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.CacheBytes <= 0 {
		o.CacheBytes = 256 << 20
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 2 * time.Second
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Store serves the published build of an index folder and implements
// kw.Index. It watches CURRENT and switches to a newly published build once
// the build has been opened and verified; lookups in flight finish on the
// build they started on, which is closed when the last of them is done. A
// build that fails verification is refused and the served one stays.
//
// A lookup that cannot read the served build (a table damaged after it was
// verified) fails with kw.ErrIndexDamaged, marks the build damaged (Info
// says so, and why) and wakes the watcher, which checks the published
// build again and serves it afresh once it reads cleanly.
//
// Pebble locks a database directory, so one process at a time serves a
// data folder's index.
type Store struct {
	dir  string
	opt  StoreOptions
	log  *slog.Logger
	dbo  *pebble.Options // template for every build opened; holds the shared cache
	cur  atomic.Pointer[handle]
	open sync.WaitGroup // one count per handle not yet closed

	ctx  context.Context // canceled by Close; bounds the checks of a build
	wake chan struct{}   // a lookup met damage: check the published build now

	checks atomic.Int64 // checks of CURRENT finished, by the poller or Reload

	mu      sync.Mutex    // serializes reloads and Close
	refused string        // build last refused
	backoff time.Duration // wait after the last refusal of refused
	retryAt time.Time     // when the poller next tries refused
	ptrErr  string        // last pointer error logged, so the poller logs each once
	closed  bool
	stop    context.CancelFunc
	watcher sync.WaitGroup

	// onClose, if set, is called after a replaced build's database closes
	// (tests count them).
	onClose func(id string)
}

// handle is one opened build with a reference count. The store holds one
// reference while the build is current; each lookup holds one while it
// reads. The database is closed when the count reaches zero, and a handle
// whose count has reached zero can never be acquired again.
type handle struct {
	id     string
	dbDir  string
	db     *pebble.DB
	info   kw.IndexInfo
	refs   atomic.Int64
	damage atomic.Pointer[string] // why the build cannot be read; nil while it reads cleanly
	closed chan struct{}          // closed once the database is closed
	// failed remembers the keys whose read failed, once the build is
	// damaged. On a checksum mismatch Pebble flips every bit of the block
	// in turn to look for a single flipped bit, milliseconds of CPU a
	// read; a keyword asked for again is answered from here instead.
	failMu sync.Mutex
	failed map[string]error
	// idle holds point-lookup iterators between lookups. DB.Get builds and
	// tears down an iterator stack on every call, which cost as much as the
	// rest of a request; a reused iterator only seeks. All of them are idle
	// once refs reaches zero, and close with the handle.
	mu   sync.Mutex
	idle []*pebble.Iterator
	// explore holds the explorer's columns of the countries asked about
	// (explore.go); explorer is the version of the build's tables.
	explore  exploreCache
	explorer int
}

// maxIdleIters bounds a handle's idle iterators: enough for every
// concurrent lookup on a busy server, each pinning a few blocks.
const maxIdleIters = 64

// get looks key up and decodes its value (found false: no such key).
func (h *handle) get(key []byte) (e kw.Entry, found bool, err error) {
	found, err = h.getValue(key, func(v []byte) error {
		var err error
		e, err = DecodeEntry(v)
		return err
	})
	return e, found, err
}

// getValue looks key up and hands its value to decode, whose error comes
// back as undecodable (found false: no such key). The value is valid only
// during the call.
func (h *handle) getValue(key []byte, decode func(v []byte) error) (found bool, err error) {
	h.mu.Lock()
	var it *pebble.Iterator
	if n := len(h.idle); n > 0 {
		it, h.idle = h.idle[n-1], h.idle[:n-1]
	}
	h.mu.Unlock()
	if it == nil {
		if it, err = h.db.NewIter(nil); err != nil {
			return false, err
		}
	}
	if it.SeekPrefixGE(key) && bytes.Equal(it.Key(), key) {
		found = true
		var v []byte
		if v, err = it.ValueAndErr(); err == nil {
			// decode copies what it keeps, so the iterator may move on.
			if err = decode(v); err != nil {
				err = undecodable{err}
			}
		}
	} else {
		err = it.Error()
	}
	if err != nil {
		// Not pooled: an iterator that met damage closes with its error,
		// which err already holds.
		_ = it.Close()
		return found, err
	}
	h.mu.Lock()
	if len(h.idle) < maxIdleIters {
		h.idle, it = append(h.idle, it), nil
	}
	h.mu.Unlock()
	if it != nil {
		err = it.Close()
	}
	return found, err
}

// maxFailedKeys bounds a damaged handle's memory of failed keys: a
// damaged block holds a few hundred keywords.
const maxFailedKeys = 1 << 14

// failure returns the error a read of key met before, if any.
func (h *handle) failure(key []byte) error {
	h.failMu.Lock()
	defer h.failMu.Unlock()
	return h.failed[string(key)]
}

func (h *handle) rememberFailure(key []byte, err error) {
	h.failMu.Lock()
	defer h.failMu.Unlock()
	if h.failed == nil {
		h.failed = map[string]error{}
	}
	if len(h.failed) < maxFailedKeys {
		h.failed[string(key)] = err
	}
}

// undecodable marks a value that was read (its block's checksum held) but
// does not decode: a fault of the build's contents, not of the disk, which
// reading the build again would not mend.
type undecodable struct{ error }

func (u undecodable) Unwrap() error { return u.error }

// close closes the idle iterators, then the database.
func (h *handle) close() error {
	var err error
	h.mu.Lock()
	for _, it := range h.idle {
		err = errors.Join(err, it.Close())
	}
	h.idle = nil
	h.mu.Unlock()
	return errors.Join(err, h.db.Close())
}

func (h *handle) tryAcquire() bool {
	for {
		n := h.refs.Load()
		if n == 0 {
			return false
		}
		if h.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// OpenStore opens the build <data>/index/CURRENT names, if any, and watches
// the pointer until ctx is done or the store is closed. It succeeds with no
// build published, or with only a damaged one (logged): Lookup then returns
// kw.ErrNoIndex until a good build is published.
func OpenStore(ctx context.Context, data string, opt StoreOptions) (*Store, error) {
	if data == "" {
		return nil, errors.New("cannot open index store: no data folder given")
	}
	opt.ensureDefaults()
	log := opt.Logger
	dbo := dbOptions(opt.FS, pebbleLogger{log: log.With("component", "pebble"), fatal: panicFatal})
	dbo.ReadOnly = true
	dbo.ErrorIfNotExists = true
	dbo.Cache = pebble.NewCache(opt.CacheBytes)
	// Pebble reports a corrupt block on every read of it; the store logs
	// damage once a build (Store.damaged), naming the file.
	dbo.EventListener = &pebble.EventListener{DataCorruption: func(pebble.DataCorruptionInfo) {}}
	wctx, cancel := context.WithCancel(ctx)
	s := &Store{dir: kw.IndexDir(data), opt: opt, log: log, dbo: dbo, ctx: wctx, stop: cancel, wake: make(chan struct{}, 1)}
	log.Info("watching the index", "dir", s.dir, "cache_mib", opt.CacheBytes>>20, "poll", opt.PollInterval)
	if err := s.reload(false); err != nil {
		log.Error("no index served until a good build is published", "err", err)
	}
	s.watcher.Add(1)
	go s.watch(wctx)
	return s, nil
}

func (s *Store) watch(ctx context.Context) {
	defer s.watcher.Done()
	t := time.NewTicker(s.opt.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// reload logs its own refusals.
			_ = s.reload(false)
		case <-s.wake:
			_ = s.reload(false)
		}
	}
}

// Reload checks CURRENT now (on SIGHUP, say) and switches to the build it
// names if that is not the one served, or serves it afresh if it is the
// served one and a lookup found it damaged but it now reads cleanly. It
// returns an error if the build is refused; the served build then stays. Unlike the poller, which waits out
// the backoff of a build it refused, Reload retries it at once.
func (s *Store) Reload() error { return s.reload(true) }

// Checks returns how many checks of CURRENT have finished (each poll and
// each Reload), whatever they found: a caller that waits for the poller
// to have looked waits for this to grow.
func (s *Store) Checks() int64 { return s.checks.Load() }

func (s *Store) reload(force bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.checks.Add(1)
	if s.closed {
		return errors.New("cannot reload index: the store is closed")
	}
	id, err := readPointer(s.opt.FS, s.dir)
	if err != nil {
		if force || err.Error() != s.ptrErr {
			s.log.Error("cannot read index pointer; keeping the served build", "err", err)
		}
		s.ptrErr = err.Error()
		return err
	}
	s.ptrErr = ""
	cur := s.cur.Load()
	if id == "" || (cur != nil && cur.id == id && cur.damage.Load() == nil) {
		return nil
	}
	now := s.opt.Now()
	if !force && id == s.refused && now.Before(s.retryAt) {
		return nil
	}
	var h *handle
	if cur != nil && cur.id == id {
		h, err = s.reopen(cur)
	} else {
		h, err = s.openBuild(id)
	}
	if err != nil {
		if s.ctx.Err() != nil {
			return fmt.Errorf("cannot switch to index build %s: %w", id, err)
		}
		if id == s.refused {
			s.backoff = min(2*s.backoff, maxRetry)
		} else {
			s.refused, s.backoff = id, minRetry
		}
		s.retryAt = now.Add(s.backoff)
		served := ""
		if cur := s.cur.Load(); cur != nil {
			served = cur.id
		}
		s.log.Error("refused index build", "build", id, "serving", served, "retry_in", s.backoff, "err", err)
		return fmt.Errorf("cannot switch to index build %s: %w", id, err)
	}
	s.refused, s.backoff = "", 0
	old := s.cur.Swap(h)
	if old != nil {
		s.release(old)
	}
	return nil
}

// reopen serves the build cur again after a lookup found it damaged. Its
// tables are checked first, with cur still serving what it can read; a
// build still damaged stays as it is, its damage now naming the table.
// Once they read cleanly (restored files, or a read error that passed),
// cur is closed, since Pebble locks the directory, and the build opened
// and verified afresh; lookups meanwhile answer kw.ErrNoIndex.
func (s *Store) reopen(cur *handle) (*handle, error) {
	fs := s.opt.FS
	tables, err := tablesOf(fs, cur.dbDir, cur.db)
	if err == nil {
		_, err = checkTables(s.ctx, fs, tables, s.dbo.MakeReaderOptions())
	}
	if err != nil {
		if s.ctx.Err() == nil {
			cur.damage.Store(ptr(s.describe(err)))
		}
		return nil, fmt.Errorf("served build is still damaged: %w", err)
	}
	s.log.Info("damaged index build reads cleanly again; opening it afresh", "build", cur.id)
	if s.cur.CompareAndSwap(cur, nil) {
		s.release(cur)
	}
	<-cur.closed
	return s.openBuild(cur.id)
}

func ptr[T any](v T) *T { return &v }

func keysOf(countries map[string]int) int {
	n := 0
	for _, c := range countries {
		n += c
	}
	return n
}

// openBuild opens a build read-only and verifies it: the manifest is read
// and of a known format, Pebble opens the database (checking every table's
// size), every block of every table matches its checksum, and every probe
// key of the manifest is found and decodes.
func (s *Store) openBuild(id string) (*handle, error) {
	start := time.Now()
	if !validBuildID(id) {
		return nil, fmt.Errorf("%q is not a build id", id)
	}
	fs := s.opt.FS
	buildDir := fs.PathJoin(s.dir, id)
	m, err := readManifest(fs, buildDir, id)
	if err != nil {
		return nil, err
	}
	dbDir := fs.PathJoin(buildDir, dbDirName)
	db, err := pebble.Open(dbDir, s.dbo)
	if err != nil {
		return nil, fmt.Errorf("cannot open database %s: %w", dbDir, err)
	}
	checked, err := s.verify(dbDir, db, &m)
	if err != nil {
		db.Close()
		return nil, err
	}
	s.log.Info("serving index build", "build", id, "date", m.DataDate, "keys", keysOf(m.Countries),
		"checked_bytes", checked, "took", time.Since(start).Round(time.Millisecond))
	h := &handle{id: id, dbDir: dbDir, db: db, closed: make(chan struct{}), explorer: m.Explore, info: kw.IndexInfo{
		Version:   id,
		DataDate:  m.DataDate,
		BuiltAt:   m.BuiltAt,
		Countries: m.Countries,
		Examples:  m.Examples,
	}}
	if h.info.Countries == nil {
		h.info.Countries = map[string]int{}
	}
	h.refs.Store(1)
	s.open.Add(1)
	return h, nil
}

// verify checks an opened build and returns the table bytes it read.
// Pebble's Open has already compared the size of every table with the size
// its MANIFEST recorded (a truncated or missing table fails there);
// checkTables reads every block; the probes look up the first and last key
// of every table and country through the database.
func (s *Store) verify(dbDir string, db *pebble.DB, m *Manifest) (int64, error) {
	tables, err := tablesOf(s.opt.FS, dbDir, db)
	if err != nil {
		return 0, err
	}
	if m.Keys > 0 && len(tables) == 0 {
		return 0, fmt.Errorf("database %s has no tables but the manifest lists %d keys", dbDir, m.Keys)
	}
	checked, err := checkTables(s.ctx, s.opt.FS, tables, s.dbo.MakeReaderOptions())
	if err != nil {
		return checked, err
	}
	var key []byte
	for _, p := range m.Probes {
		var ok bool
		if key, ok = appendKey(key[:0], p.Country, p.Keyword); !ok {
			return checked, fmt.Errorf("manifest probe %s %q is not a key", p.Country, p.Keyword)
		}
		v, closer, err := db.Get(key)
		if err != nil {
			return checked, fmt.Errorf("cannot read probe %s %q: %w", p.Country, p.Keyword, err)
		}
		_, err = DecodeEntry(v)
		closer.Close()
		if err != nil {
			return checked, fmt.Errorf("cannot decode probe %s %q: %w", p.Country, p.Keyword, err)
		}
	}
	return checked, nil
}

// acquire returns the current handle with a reference taken, or nil. A
// handle swapped out and released between the load and the increment
// refuses the reference; the loop then sees the new one.
func (s *Store) acquire() *handle {
	for {
		h := s.cur.Load()
		if h == nil {
			return nil
		}
		if h.tryAcquire() {
			return h
		}
	}
}

// release drops a reference; the last one closes the database, off the
// caller's path so that a lookup never pays for a close.
func (s *Store) release(h *handle) {
	if h.refs.Add(-1) != 0 {
		return
	}
	go func() {
		defer s.open.Done()
		if err := h.close(); err != nil {
			s.log.Warn("cannot close replaced index build", "build", h.id, "err", err)
		}
		close(h.closed)
		if s.onClose != nil {
			s.onClose(h.id)
		}
	}()
}

// keyPool recycles lookup keys; maxPooledKey keeps a rare huge keyword
// from pinning its buffer.
var keyPool = sync.Pool{New: func() any { b := make([]byte, 0, 128); return &b }}

const maxPooledKey = 1024

// Lookup returns the entry of a normalized keyword in a country (either
// case), kw.ErrNotFound, kw.ErrNoIndex while no build is served, or an
// error wrapping kw.ErrIndexDamaged when the served build cannot be read
// for it.
func (s *Store) Lookup(ctx context.Context, country, keyword string) (kw.Entry, error) {
	if err := ctx.Err(); err != nil {
		return kw.Entry{}, err
	}
	h := s.acquire()
	if h == nil {
		return kw.Entry{}, kw.ErrNoIndex
	}
	defer s.release(h)
	kp := keyPool.Get().(*[]byte)
	key, ok := appendKey((*kp)[:0], country, keyword)
	defer func() {
		if cap(key) <= maxPooledKey {
			*kp = key
			keyPool.Put(kp)
		}
	}()
	if !ok {
		return kw.Entry{}, kw.ErrNotFound
	}
	if h.damage.Load() != nil {
		if err := h.failure(key); err != nil {
			return kw.Entry{}, err
		}
	}
	e, found, err := h.get(key)
	if _, ok := err.(undecodable); ok {
		return kw.Entry{}, fmt.Errorf("cannot decode %s %q in index build %s: %w", country, keyword, h.id, err)
	}
	if err != nil {
		// The build is immutable and was verified whole: a read that fails
		// now means a file changed or cannot be read under the server.
		s.damaged(h, err)
		err = fmt.Errorf("cannot read %s %q from index build %s: %w: %s", country, keyword, h.id, kw.ErrIndexDamaged, s.describe(err))
		h.rememberFailure(key, err)
		return kw.Entry{}, err
	}
	if !found {
		return kw.Entry{}, kw.ErrNotFound
	}
	e.Keyword = keyword
	e.Country = strings.ToUpper(country)
	// The date travels with the entry: Info may already describe a newer
	// build by the time the answer is written.
	e.DataDate = h.info.DataDate
	if e.Intent == "" {
		e.Intent = keyword
	}
	return e, nil
}

// IntentGroup returns the intent group a normalized leader leads in a
// country (either case): one point read, like Lookup, of the group the
// build computed. A build older than format version 3 has none
// (kw.ErrNotFound).
func (s *Store) IntentGroup(ctx context.Context, country, leader string) (kw.IntentGroup, error) {
	var g kw.IntentGroup
	if err := ctx.Err(); err != nil {
		return g, err
	}
	h := s.acquire()
	if h == nil {
		return g, kw.ErrNoIndex
	}
	defer s.release(h)
	key, ok := appendGroupKey(make([]byte, 0, 4+len(leader)), country, leader)
	if !ok {
		return g, kw.ErrNotFound
	}
	if h.damage.Load() != nil {
		if err := h.failure(key); err != nil {
			return g, err
		}
	}
	found, err := h.getValue(key, func(v []byte) error {
		var err error
		g, err = DecodeGroup(v)
		return err
	})
	if _, ok := err.(undecodable); ok {
		return kw.IntentGroup{}, fmt.Errorf("cannot decode the intent group of %s %q in index build %s: %w", country, leader, h.id, err)
	}
	if err != nil {
		s.damaged(h, err)
		err = fmt.Errorf("cannot read the intent group of %s %q from index build %s: %w: %s", country, leader, h.id, kw.ErrIndexDamaged, s.describe(err))
		h.rememberFailure(key, err)
		return kw.IntentGroup{}, err
	}
	if !found {
		return kw.IntentGroup{}, kw.ErrNotFound
	}
	g.Leader, g.Country, g.DataDate = leader, strings.ToUpper(country), h.info.DataDate
	return g, nil
}

// damaged marks h damaged by a failed read, once: it logs the build and
// the file (when Pebble names it) and wakes the watcher to check the
// published build again.
func (s *Store) damaged(h *handle, err error) {
	if h.damage.Load() != nil {
		return
	}
	file := ""
	if info := pebble.ExtractDataCorruptionInfo(err); info != nil {
		file = info.Path
	}
	why := s.describe(err)
	if file != "" {
		why = s.describe(errors.New(file)) + ": " + why
	}
	if !h.damage.CompareAndSwap(nil, &why) {
		return
	}
	s.log.Error("served index build cannot be read; answering index_unavailable where it fails and checking the published build",
		"build", h.id, "file", file, "err", why)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// describe words err for Info's Damaged and the log: paths relative to the
// index folder (the answer of /readyz need not show the server's file
// system), without the line Pebble adds to carry a corruption's details.
func (s *Store) describe(err error) string {
	msg := strings.ReplaceAll(err.Error(), "\n<corruption detail carrier>", "")
	return strings.ReplaceAll(msg, s.dir+string(os.PathSeparator), "")
}

// Info describes the served build; ok is false while none is. The
// Countries map is shared and must not be modified.
func (s *Store) Info() (kw.IndexInfo, bool) {
	h := s.cur.Load()
	if h == nil {
		return kw.IndexInfo{}, false
	}
	info := h.info
	if d := h.damage.Load(); d != nil {
		info.Damaged = *d
	}
	return info, true
}

// Close stops watching, waits for lookups in flight to finish and closes
// every build the store opened. Lookups after Close return kw.ErrNoIndex.
func (s *Store) Close() error {
	s.stop() // ends a check of a build in progress, which holds mu
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.stop()
	old := s.cur.Swap(nil)
	s.mu.Unlock()
	s.watcher.Wait()
	if old != nil {
		s.release(old)
	}
	s.open.Wait()
	s.dbo.Cache.Unref()
	return nil
}
