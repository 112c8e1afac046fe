package access

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Store counts lookups against the access tiers and manages API keys. The
// server opens one with Open and holds it for its lifetime; it owns the
// counter and account databases, so only one process can have a Store on
// a folder at a time (others use OpenKeys, which reaches it through its
// admin socket).
type Store struct {
	opt   Options
	log   *slog.Logger
	keys  *Keys
	db    *pebble.DB
	admin *adminServer
	seed  maphash.Seed

	shards [nShards]shard

	flushMu   sync.Mutex // one flush at a time
	sweptDay  int32      // day of the last expiry sweep; under flushMu
	snapMonth int32      // month of the last usage snapshot; under flushMu

	usageMu sync.Mutex
	usage   map[string]*keyUsage // flushed usage per key id

	done   chan struct{}
	wg     sync.WaitGroup
	closed atomic.Bool

	dirInfo    os.FileInfo           // the access folder as opened; see checkFolder
	folderErr  atomic.Pointer[error] // why the folder is unusable; nil while it is fine
	folderLogs time.Time             // when folderErr was last logged; flushLoop only
	watched    atomic.Int64          // folder checks done; tests wait on it
}

// keyUsage is what the counter database holds about one key.
type keyUsage struct {
	month    int32 // window of reg and paid
	reg      int64 // registered lookups in month
	paid     int64 // paid lookups in month
	lastUsed int64 // unix nanos
}

// Open opens the store under opt.Dir: the account database (importing a
// keys.json of an older kwdata), and the counter database, which it loads
// and keeps flushing every FlushInterval until Close; and it answers
// `kwdata keys` on the admin socket. It fails if another process has
// either database open.
func Open(opt Options) (s *Store, err error) {
	opt.fill()
	if opt.Dir == "" {
		return nil, errors.New("cannot open access store: no folder given")
	}
	if err := os.MkdirAll(opt.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("cannot create access folder %s: %w", opt.Dir, err)
	}
	var k *Keys
	sock := filepath.Join(opt.Dir, adminSockName)
	for deadline := time.Now().Add(localWait); ; time.Sleep(20 * time.Millisecond) {
		if adminAnswers(sock) {
			return nil, fmt.Errorf("cannot open access store %s: a kwdata server is already running on this folder (it answers on %s)", opt.Dir, sock)
		}
		// A `kwdata keys` command may hold the database for a moment.
		if k, err = openLocalKeys(opt); err == nil || !isLocked(err) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			k.Close()
		}
	}()
	s = &Store{
		opt:   opt,
		log:   opt.Logger,
		keys:  k,
		seed:  maphash.MakeSeed(),
		usage: make(map[string]*keyUsage),
		done:  make(chan struct{}),
	}
	for i := range s.shards {
		s.shards[i].m = make(map[ckey]*counter)
	}
	k.fill = s.fillLive
	if s.dirInfo, err = os.Stat(opt.Dir); err != nil {
		return nil, fmt.Errorf("cannot open access folder: %w", err)
	}
	if s.db, err = openCounters(filepath.Join(opt.Dir, countersName), opt); err != nil {
		return nil, err
	}
	if err := s.load(); err != nil {
		s.db.Close()
		return nil, err
	}
	// This process holds the counter database, so no other writes
	// snapshots: a temporary one left here is from a crash.
	if stale, _ := filepath.Glob(filepath.Join(opt.Dir, usageTempPattern)); len(stale) > 0 {
		for _, name := range stale {
			os.Remove(name)
		}
	}
	if err := s.writeSnapshot(); err != nil {
		s.log.Warn("cannot write usage snapshot", "err", err)
	}
	s.expireAccounts(opt.Now())
	if s.admin, err = s.listenAdmin(); err != nil {
		// Serving matters more than the command line: without the
		// socket (a folder path too long for one, say), kwdata keys
		// says the database is held, and the server runs on.
		s.log.Error("kwdata keys cannot reach this server; manage keys with the server stopped", "err", err)
	}
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.flushLoop() }()
	return s, nil
}

// load reads the counters of the current and previous windows into memory
// and deletes expired day windows. Only this process writes the database,
// so a counter absent from memory is zero.
func (s *Store) load() error {
	now := s.opt.Now()
	day, month := kindAnon.window(now), kindKey.window(now)
	s.sweptDay, s.snapMonth = day, month
	it, err := s.db.NewIter(nil)
	if err != nil {
		return fmt.Errorf("cannot read counters: %w", err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("cannot read counters: %w", err)
		}
		n, ok := decodeInt(v)
		if !ok {
			return fmt.Errorf("cannot read counter %q: value is %d bytes, not 8", it.Key(), len(v))
		}
		if id, ok := cutUsed(it.Key()); ok {
			s.usageOf(id).lastUsed = n
			continue
		}
		k, ok := parseDBKey(it.Key())
		if !ok {
			s.log.Warn("skipping unreadable counter", "key", string(it.Key()))
			continue
		}
		if k.window < k.kind.window(now)-1 {
			continue // expired; day windows are deleted below
		}
		c := &counter{key: k, used: n}
		s.shard(k).m[k] = c
		if (k.kind == kindKey || k.kind == kindPaid) && k.window == month {
			u := s.usageOf(k.id)
			u.month = month
			if k.kind == kindKey {
				u.reg = n
			} else {
				u.paid = n
			}
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("cannot read counters: %w", err)
	}
	b := s.db.NewBatch()
	defer b.Close()
	s.deleteExpired(b, day)
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("cannot delete expired counters: %w", err)
	}
	return nil
}

func cutUsed(key []byte) (string, bool) {
	if len(key) > len(usedPrefix) && string(key[:len(usedPrefix)]) == usedPrefix {
		return string(key[len(usedPrefix):]), true
	}
	return "", false
}

// usageOf returns the usage entry of a key id, creating it. Callers hold
// usageMu or run before the store is shared.
func (s *Store) usageOf(id string) *keyUsage {
	u := s.usage[id]
	if u == nil {
		u = &keyUsage{}
		s.usage[id] = u
	}
	return u
}

// deleteExpired removes day windows older than yesterday. Months are kept:
// one counter per key and month is small, and it is the usage history.
func (s *Store) deleteExpired(b *pebble.Batch, day int32) {
	for _, kd := range []kind{kindAnon, kindReg, kindRegNet, kindSignin, kindClient} {
		p := kd.prefix()
		_ = b.DeleteRange([]byte(p), []byte(p+kd.windowName(day-1)), nil)
	}
}

func (s *Store) flushLoop() {
	t := time.NewTicker(s.opt.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			s.watchFolder()
			if err := s.flush(); err != nil {
				s.log.Error("cannot flush counters; will retry", "err", err)
			}
		}
	}
}

// folderLogGap is the least time between two log lines about a missing
// access folder; the check runs every FlushInterval.
const folderLogGap = time.Minute

// checkFolder reports an error when the access folder this Store opened
// is no longer in place: deleted (with the whole data folder, say) or
// replaced by another. The counter database then writes into deleted
// files, so counts would be lost at exit without a word.
func (s *Store) checkFolder() error {
	info, err := os.Stat(s.opt.Dir)
	if err == nil && os.SameFile(info, s.dirInfo) {
		return nil
	}
	if err == nil {
		err = errors.New("another folder has taken its place")
	}
	return fmt.Errorf("access folder %s is not the one opened (%w): lookups are counted in memory only and lost at exit; restore the data folder and restart the server", s.opt.Dir, err)
}

// watchFolder records what checkFolder finds, for Ready, and logs it at
// most once per folderLogGap while it lasts.
func (s *Store) watchFolder() {
	defer s.watched.Add(1)
	err := s.checkFolder()
	if err == nil {
		if s.folderErr.Swap(nil) != nil {
			s.log.Info("access folder is back in place", "dir", s.opt.Dir)
		}
		return
	}
	s.folderErr.Store(&err)
	if now := time.Now(); now.Sub(s.folderLogs) >= folderLogGap {
		s.folderLogs = now
		s.log.Error("access folder is gone; the server is not ready (logged at most once a minute)", "err", err)
	}
}

// Ready returns an error while the Store cannot keep its counts: its
// folder was deleted or replaced under it. A server reports itself not
// ready then, so that a load balancer sends clients elsewhere.
func (s *Store) Ready() error {
	if s.closed.Load() {
		return ErrClosed
	}
	if p := s.folderErr.Load(); p != nil {
		return *p
	}
	return nil
}

// flushed is one counter's state as written by a flush.
type flushed struct {
	c        *counter
	used     int64
	lastUsed int64
}

// flush writes every counter changed since the last flush in one synced
// batch. Shard locks are held only to copy the changes out, never across
// the write; a failed write puts the changes back for the next flush.
func (s *Store) flush() error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	now := s.opt.Now()
	var items []flushed
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for _, c := range sh.dirty {
			items = append(items, flushed{c, c.used, c.lastUsed})
			c.dirty = false
		}
		clear(sh.dirty)
		sh.dirty = sh.dirty[:0]
		sh.mu.Unlock()
	}
	day, month := kindAnon.window(now), kindKey.window(now)
	sweep := day != s.sweptDay
	if len(items) == 0 && !sweep && month == s.snapMonth {
		return nil
	}

	b := s.db.NewBatch()
	defer b.Close()
	lastUsed := map[string]int64{}
	keysChanged := false
	for _, it := range items {
		if err := b.Set(dbKey(it.c.key), encodeInt(it.used), nil); err != nil {
			s.redirty(items)
			return fmt.Errorf("cannot batch counters: %w", err)
		}
		if id := it.c.key.id; id != "" {
			keysChanged = true
			lastUsed[id] = max(lastUsed[id], it.lastUsed)
		}
	}
	s.usageMu.Lock()
	for id, t := range lastUsed {
		lastUsed[id] = max(t, s.usageOf(id).lastUsed)
	}
	s.usageMu.Unlock()
	for id, t := range lastUsed {
		_ = b.Set([]byte(usedPrefix+id), encodeInt(t), nil)
	}
	if sweep {
		s.deleteExpired(b, day)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		s.redirty(items)
		return fmt.Errorf("cannot write counters: %w", err)
	}

	s.usageMu.Lock()
	for _, it := range items {
		k := it.c.key
		if k.id == "" {
			continue
		}
		u := s.usageOf(k.id)
		u.lastUsed = max(u.lastUsed, it.lastUsed)
		if k.window != month {
			continue
		}
		if u.month != month {
			u.month, u.reg, u.paid = month, 0, 0
		}
		if k.kind == kindKey {
			u.reg = it.used
		} else {
			u.paid = it.used
		}
	}
	s.usageMu.Unlock()
	if sweep {
		s.evict(now)
		s.expireAccounts(now)
		s.sweptDay = day
	}
	if keysChanged || month != s.snapMonth {
		s.snapMonth = month
		if err := s.writeSnapshot(); err != nil {
			s.log.Warn("cannot write usage snapshot", "err", err)
		}
	}
	return nil
}

// expireAccounts deletes the entries of the account database whose
// lifetime has ended at now (see accountExpiry): pending sign-up codes,
// applied billing event ids, sessions and OAuth entries. It runs at Open
// and once a UTC day.
func (k *Keys) expireAccounts(ctx context.Context, now time.Time) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	b := k.db.NewBatch()
	defer b.Close()
	n := 0
	for _, prefix := range expiringPrefixes {
		upper := []byte(prefix)
		upper[len(upper)-1]++
		it, err := k.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: []byte(prefix), UpperBound: upper})
		if err != nil {
			return 0, fmt.Errorf("cannot read the account database: %w", err)
		}
		for ok := it.First(); ok; ok = it.Next() {
			v, err := it.ValueAndErr()
			if err != nil {
				it.Close()
				return 0, fmt.Errorf("cannot read the account database: %w", err)
			}
			if at, ok := accountExpiry(string(it.Key()), v); ok && !now.Before(at) {
				_ = b.Delete(bytes.Clone(it.Key()), nil)
				n++
			}
		}
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			return 0, fmt.Errorf("cannot read the account database: %w", err)
		}
	}
	if n == 0 {
		return 0, nil
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return 0, fmt.Errorf("cannot delete expired account entries (codes, billing event ids, sessions, OAuth grants): %w", err)
	}
	return n, nil
}

// expireAccounts runs Keys.expireAccounts and logs what it did.
func (s *Store) expireAccounts(now time.Time) {
	n, err := s.keys.expireAccounts(context.Background(), now)
	if err != nil {
		s.log.Error("cannot delete expired account entries; will retry tomorrow", "err", err)
		return
	}
	if n > 0 {
		s.log.Info("deleted expired account entries (codes, billing event ids, sessions, OAuth grants)", "entries", n)
	}
}

// redirty marks the counters of a failed flush as changed again.
func (s *Store) redirty(items []flushed) {
	for _, it := range items {
		sh := s.shard(it.c.key)
		sh.mu.Lock()
		if !it.c.dirty {
			it.c.dirty = true
			sh.dirty = append(sh.dirty, it.c)
		}
		sh.mu.Unlock()
	}
}

// evict drops from memory the counters of windows before the previous one
// that are flushed and have nothing reserved. The previous window stays so
// that a wall clock stepping back a little still finds its counts.
func (s *Store) evict(now time.Time) {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for k, c := range sh.m {
			if k.window < k.kind.window(now)-1 && c.reserved == 0 && !c.dirty {
				delete(sh.m, k)
			}
		}
		sh.mu.Unlock()
	}
}

// Close stops the flusher, writes every counted lookup to disk and closes
// the counter database. Stop serving requests first: a lookup committed
// after Close is not saved.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	if s.admin != nil {
		s.admin.close()
	}
	close(s.done)
	s.wg.Wait()
	err := s.flush()
	if err == nil {
		if serr := s.writeSnapshot(); serr != nil {
			s.log.Warn("cannot write usage snapshot", "err", serr)
		}
	}
	if cerr := s.db.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("cannot close counter database: %w", cerr)
	}
	return errors.Join(err, s.keys.Close())
}

// Register issues a registered key to email for a client at address client:
// ErrInvalidEmail for an address that is not plain name@domain,
// ErrEmailTaken if the email has an active key, and a *QuotaError wrapping
// ErrTooManyRegistrations past RegistrationsPerAddressPerDay successful
// registrations from one address (IPv6 by /64) or
// RegistrationsPerNetworkPerDay from one IPv6 /48 in a UTC day.
func (s *Store) Register(ctx context.Context, email string, client netip.Addr) (string, KeyRecord, error) {
	if s.closed.Load() {
		return "", KeyRecord{}, ErrClosed
	}
	email, err := NormalizeEmail(email)
	if err != nil {
		return "", KeyRecord{}, err
	}
	res, err := s.reserveRegistration(ctx, client)
	if err != nil {
		return "", KeyRecord{}, err
	}
	defer res.cancel()
	key, rec, err := s.keys.create(ctx, Registered, email, time.Time{}, true)
	if err != nil {
		return "", KeyRecord{}, err
	}
	res.commit()
	return key, rec, nil
}

// CreateKey issues a key; see Keys.CreateKey. It works at once.
func (s *Store) CreateKey(ctx context.Context, tier Tier, email string, paidUntil time.Time) (string, KeyRecord, error) {
	return s.keys.CreateKey(ctx, tier, email, paidUntil)
}

// RevokeKey revokes a key; see Keys.RevokeKey. This Store refuses it at
// once.
func (s *Store) RevokeKey(ctx context.Context, idOrKey string) error {
	return s.keys.RevokeKey(ctx, idOrKey)
}

// SetTier changes a key's tier; see Keys.SetTier.
func (s *Store) SetTier(ctx context.Context, idOrKey string, tier Tier, paidUntil time.Time) error {
	return s.keys.SetTier(ctx, idOrKey, tier, paidUntil)
}

// ListKeys returns every key with its live lookups this month.
func (s *Store) ListKeys(ctx context.Context) ([]KeyRecord, error) {
	return s.keys.ListKeys(ctx)
}

// fillLive sets the usage fields from the in-memory counters.
func (s *Store) fillLive(recs []KeyRecord) {
	now := s.opt.Now()
	month := kindKey.window(now)
	for i := range recs {
		id := recs[i].ID
		var n, last int64
		for _, kd := range []kind{kindKey, kindPaid} {
			k := ckey{kind: kd, window: month, id: id}
			sh := s.shard(k)
			sh.mu.Lock()
			if c := sh.m[k]; c != nil {
				n += c.used
				last = max(last, c.lastUsed)
			}
			sh.mu.Unlock()
		}
		s.usageMu.Lock()
		if u := s.usage[id]; u != nil {
			last = max(last, u.lastUsed)
		}
		s.usageMu.Unlock()
		recs[i].Lookups, recs[i].LookupsAsOf = n, now.UTC()
		if last > 0 {
			recs[i].LastUsed = time.Unix(0, last).UTC()
		}
	}
}

// usageSnapshot is <Dir>/usage.json: per-key usage as of the last flush,
// for processes that cannot open the counter database.
type usageSnapshot struct {
	Written time.Time             `json:"written"`
	Month   string                `json:"month"`
	Keys    map[string]usageEntry `json:"keys"`
}

type usageEntry struct {
	Lookups  int64     `json:"lookups"`
	LastUsed time.Time `json:"last_used,omitzero"`
}

// writeSnapshot replaces the usage snapshot. It is derived data, rebuilt
// on every Open, so it is renamed into place without a sync.
func (s *Store) writeSnapshot() error {
	now := s.opt.Now().UTC()
	month := kindKey.window(now)
	snap := usageSnapshot{Written: now, Month: kindKey.windowName(month), Keys: map[string]usageEntry{}}
	s.usageMu.Lock()
	for id, u := range s.usage {
		e := usageEntry{}
		if u.month == month {
			e.Lookups = u.reg + u.paid
		}
		if u.lastUsed > 0 {
			e.LastUsed = time.Unix(0, u.lastUsed).UTC()
		}
		snap.Keys[id] = e
	}
	s.usageMu.Unlock()
	data, err := json.Marshal(snap)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.opt.Dir, usageTempPattern)
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(data)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(s.opt.Dir, usageFileName))
}

// fillFromSnapshot sets the usage fields from the server's snapshot, if
// there is one.
func (k *Keys) fillFromSnapshot(recs []KeyRecord) {
	data, err := os.ReadFile(filepath.Join(k.dir, usageFileName))
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			k.log.Warn("cannot read usage snapshot", "err", err)
		}
		return
	}
	var snap usageSnapshot
	if err := json.Unmarshal(data, &snap); err != nil {
		k.log.Warn("cannot parse usage snapshot", "err", err)
		return
	}
	current := snap.Month == kindKey.windowName(kindKey.window(k.now()))
	for i := range recs {
		e, ok := snap.Keys[recs[i].ID]
		recs[i].LookupsAsOf = snap.Written
		if !ok {
			continue
		}
		if current {
			recs[i].Lookups = e.Lookups
		}
		recs[i].LastUsed = e.LastUsed
	}
}

// pebbleLogger routes Pebble's messages into slog; its routine
// information goes to Debug.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) { p.l.Debug(fmt.Sprintf(format, args...)) }

func (p pebbleLogger) Errorf(format string, args ...any) { p.l.Error(fmt.Sprintf(format, args...)) }

// Fatalf is called on an invariant violation; Pebble expects it not to
// return.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg)
	panic("pebble: " + msg)
}
