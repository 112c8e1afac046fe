package access

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kwdata/kwdata/kw"
)

// Key format: a recognisable prefix, then 160 random bits in lower-case
// base32, which survives URLs, shells and double-click selection.
const (
	keyPrefix  = "kwd_"
	keyBodyLen = 32 // 20 random bytes
	keyLen     = len(keyPrefix) + keyBodyLen
	idLen      = 12 // 60 random bits; collisions are checked on create
)

var keyEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// File names under Options.Dir.
const (
	keysFileName  = "keys.json"
	keysLockName  = "keys.lock"
	usageFileName = "usage.json"
	countersName  = "counters"

	keysTempPattern  = ".keys-*.tmp"  // writeKeysFile's temporary files
	usageTempPattern = ".usage-*.tmp" // writeSnapshot's temporary files
)

func newKey() string {
	var b [keyBodyLen * 5 / 8]byte
	rand.Read(b[:]) // never fails (crypto/rand crashes the program instead)
	return keyPrefix + keyEncoding.EncodeToString(b[:])
}

func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return keyEncoding.EncodeToString(b[:])[:idLen]
}

// wellFormed reports whether s has the shape of a key; only a well-formed
// string is ever hashed and looked up.
func wellFormed(s string) bool {
	if len(s) != keyLen || !strings.HasPrefix(s, keyPrefix) {
		return false
	}
	for i := len(keyPrefix); i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}

type keyHash = [sha256.Size]byte

// hashKey is the only form of a key that is stored. A key carries 160
// random bits, so a fast hash is enough: there is no password to guess.
func hashKey(key string) keyHash {
	if len(key) == keyLen { // the hot path: hash from the stack
		var b [keyLen]byte
		copy(b[:], key)
		return sha256.Sum256(b[:])
	}
	return sha256.Sum256([]byte(key))
}

// KeyRecord describes one API key. The key itself is never stored.
type KeyRecord struct {
	// ID names the key for operators (keys list, revoke, set-tier) and in
	// the counters; it is not secret.
	ID string
	// Tier is the tier granted, Registered or Paid; see ActiveTier.
	Tier Tier
	// Email is the owner's address in lower case; may be empty for keys
	// created by an operator.
	Email string
	// Created is when the key was issued.
	Created time.Time
	// PaidUntil is when a paid subscription ends; zero means no end for a
	// Paid key and is always zero for a Registered one.
	PaidUntil time.Time
	// Revoked is when the key was revoked; zero while it is active.
	Revoked time.Time
	// LastUsed is when a lookup was last counted on the key; zero if never
	// (or not known to the process that lists keys).
	LastUsed time.Time
	// Lookups is the number of lookups counted on the key in the current
	// UTC calendar month, at any tier.
	Lookups int64
	// LookupsAsOf is when Lookups and LastUsed were read: the listing
	// time when the counting process lists its own keys, the time of the
	// server's last usage snapshot otherwise, zero if there is none.
	LookupsAsOf time.Time
}

// IsRevoked reports whether the key has been revoked.
func (r KeyRecord) IsRevoked() bool { return !r.Revoked.IsZero() }

// ActiveTier returns the tier the key counts as at now: a Paid key counts
// as Registered once its PaidUntil has passed.
func (r KeyRecord) ActiveTier(now time.Time) Tier {
	if r.Tier == Paid && !r.PaidUntil.IsZero() && !now.Before(r.PaidUntil) {
		return Registered
	}
	return r.Tier
}

// keysFile is the JSON form of the registry.
type keysFile struct {
	Version int       `json:"version"`
	Keys    []fileKey `json:"keys"`
}

type fileKey struct {
	ID        string    `json:"id"`
	SHA256    string    `json:"sha256"`
	Tier      Tier      `json:"tier"`
	Email     string    `json:"email,omitempty"`
	Created   time.Time `json:"created"`
	PaidUntil time.Time `json:"paid_until,omitzero"`
	Revoked   time.Time `json:"revoked,omitzero"`
}

const keysFileVersion = 1

// keySet is one immutable view of the registry.
type keySet struct {
	recs   []KeyRecord
	byHash map[keyHash]int
	stamp  fileStamp
}

// fileStamp identifies one version of the registry file. Writers replace
// the file (a new inode) and keep its modification time increasing, so a
// changed stamp means a changed file.
type fileStamp struct{ info fs.FileInfo }

func (a fileStamp) same(b fileStamp) bool {
	if a.info == nil || b.info == nil {
		return a.info == nil && b.info == nil
	}
	return os.SameFile(a.info, b.info) && a.info.ModTime().Equal(b.info.ModTime()) && a.info.Size() == b.info.Size()
}

func newKeySet(f *keysFile, stamp fileStamp) (*keySet, error) {
	ks := &keySet{recs: make([]KeyRecord, 0, len(f.Keys)), byHash: make(map[keyHash]int, len(f.Keys)), stamp: stamp}
	for _, k := range f.Keys {
		var h keyHash
		if b, err := hex.DecodeString(k.SHA256); err != nil || len(b) != len(h) {
			return nil, fmt.Errorf("key %s has a malformed sha256", k.ID)
		} else {
			copy(h[:], b)
		}
		if _, dup := ks.byHash[h]; dup {
			return nil, fmt.Errorf("key %s duplicates the hash of another key", k.ID)
		}
		ks.byHash[h] = len(ks.recs)
		ks.recs = append(ks.recs, KeyRecord{
			ID: k.ID, Tier: k.Tier, Email: k.Email, Created: k.Created,
			PaidUntil: k.PaidUntil, Revoked: k.Revoked,
		})
	}
	return ks, nil
}

// Keys is the API key registry, <Dir>/keys.json. It can be opened by any
// number of processes at once; writes are serialized by a file lock. The
// command line uses it through OpenKeys; a Store embeds one.
type Keys struct {
	dir  string
	now  func() time.Time
	log  *slog.Logger
	poll time.Duration

	mu        sync.Mutex // serializes writers and reloads in this process
	set       atomic.Pointer[keySet]
	epoch     time.Time    // when the registry was opened; lastCheck counts from it on the monotonic clock
	lastCheck atomic.Int64 // nanos after epoch when the latest finished look at the file began
	lookMu    sync.Mutex   // one unknown-key look at a time; see lookSince
	looks     atomic.Int64 // looks at the file so far, which the tests bound

	failMu     sync.Mutex // guards the two below; see report
	failing    bool       // the last look at the file failed
	failLogged time.Time  // when that failure was last logged

	// fill sets the usage fields of listed records; nil reads the server's
	// usage snapshot.
	fill func(recs []KeyRecord)
}

// OpenKeys opens the key registry under opt.Dir without the counter
// database, for processes (the command line) that manage keys while a
// server may be running. Lookups in ListKeys come from the server's usage
// snapshot.
func OpenKeys(opt Options) (*Keys, error) {
	opt.fill()
	if opt.Dir == "" {
		return nil, errors.New("cannot open access store: no folder given")
	}
	if err := os.MkdirAll(opt.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("cannot create access folder %s: %w", opt.Dir, err)
	}
	k := &Keys{dir: opt.Dir, now: opt.Now, log: opt.Logger, poll: opt.KeysPollInterval, epoch: time.Now()}
	if err := k.removeStaleTemps(); err != nil {
		return nil, err
	}
	if err := k.reload(); err != nil {
		return nil, err
	}
	return k, nil
}

// removeStaleTemps deletes the temporary files of registry writers that
// died before their rename (kill -9 during `kwdata keys create`): they
// hold key hashes and emails, and nothing else would ever remove them.
// Writers hold the registry lock for the whole life of their temporary
// file, so one found under the lock is certainly abandoned.
func (k *Keys) removeStaleTemps() error {
	unlock, err := lockFile(filepath.Join(k.dir, keysLockName))
	if err != nil {
		return fmt.Errorf("cannot lock key registry: %w", err)
	}
	defer unlock()
	stale, err := filepath.Glob(filepath.Join(k.dir, keysTempPattern))
	if err != nil {
		return fmt.Errorf("cannot list leftover registry files: %w", err)
	}
	for _, name := range stale {
		if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cannot remove leftover registry file %s: %w", name, err)
		}
	}
	if len(stale) > 0 {
		k.log.Info("removed temporary files of interrupted key registry writes", "dir", k.dir, "files", len(stale))
	}
	return nil
}

// Close releases the registry. It holds no open files between calls, so
// Close only exists for symmetry with Store.
func (k *Keys) Close() error { return nil }

func (k *Keys) path() string { return filepath.Join(k.dir, keysFileName) }

// reload reads the registry file if it changed since the last read.
func (k *Keys) reload() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.reloadLocked()
}

func (k *Keys) reloadLocked() error {
	// Stored when the look is over, so that whoever reads a lastCheck
	// also finds the view it produced (see lookSince).
	start := k.since()
	defer k.lastCheck.Store(start)
	k.looks.Add(1)
	cur := k.set.Load()
	if cur != nil {
		info, err := os.Stat(k.path())
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cannot stat key registry: %w", err)
		}
		if cur.stamp.same(fileStamp{info}) {
			return nil
		}
	}
	f, stamp, err := readKeysFile(k.path())
	if errors.Is(err, fs.ErrNotExist) && (cur == nil || cur.stamp.info == nil) {
		// No registry was ever read here: a new installation, no keys yet.
		f, stamp, err = &keysFile{Version: keysFileVersion}, fileStamp{}, nil
	}
	if err != nil {
		// A registry that was read once and is now missing was moved or
		// deleted, not emptied: writers replace it whole. Refusing every
		// key for it would be worse than keeping the last good view.
		return err
	}
	ks, err := newKeySet(f, stamp)
	if err != nil {
		return fmt.Errorf("cannot load key registry %s: %w", k.path(), err)
	}
	k.set.Store(ks)
	return nil
}

// refresh looks at the registry file if the last look is older than gap;
// a failure keeps the current view and is logged (see report).
func (k *Keys) refresh(gap time.Duration) {
	if k.since()-k.lastCheck.Load() < int64(gap) {
		return
	}
	k.report(k.reload())
}

// failLogGap is the least time between two log lines about one spell of
// an unreadable registry: the server looks at it four times a second.
const failLogGap = time.Minute

// report logs the outcome of a look at the registry file: a failure
// (missing, unreadable, damaged) at Error, at most once per failLogGap
// while it lasts, and its end once.
func (k *Keys) report(err error) {
	k.failMu.Lock()
	defer k.failMu.Unlock()
	if err == nil {
		if k.failing {
			k.failing = false
			k.log.Info("key registry readable again", "path", k.path(), "keys", len(k.set.Load().recs))
		}
		return
	}
	now := time.Now()
	if k.failing && now.Sub(k.failLogged) < failLogGap {
		return
	}
	k.failing, k.failLogged = true, now
	k.log.Error("cannot read the key registry; keeping the keys last read until it is readable again (logged at most once a minute)",
		"path", k.path(), "keys", len(k.set.Load().recs), "err", err)
}

// watch refreshes the view every poll interval until done is closed.
func (k *Keys) watch(done <-chan struct{}) {
	t := time.NewTicker(k.poll)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			k.refresh(k.poll / 2)
		}
	}
}

// since is the time since the registry was opened, in nanoseconds, on the
// monotonic clock: a wall clock set back would stall lookSince.
func (k *Keys) since() int64 { return int64(time.Since(k.epoch)) }

// unknownKeyGap is the least time between two looks at the registry file
// caused by unknown keys.
const unknownKeyGap = 100 * time.Millisecond

// lookup returns the record of a well-formed key. A key it does not know
// may have been created by another process a moment ago, so lookup first
// makes sure the file has been looked at since the request arrived (see
// lookSince); a key created before its first request therefore works on
// that request. Known keys never touch the file or a lock.
func (k *Keys) lookup(key string) (KeyRecord, bool) {
	h := hashKey(key)
	ks := k.set.Load()
	i, ok := ks.byHash[h]
	if !ok {
		k.lookSince(k.since())
		ks = k.set.Load()
		i, ok = ks.byHash[h]
	}
	if !ok {
		return KeyRecord{}, false
	}
	return ks.recs[i], true
}

// lookSince returns once a look at the registry file that began at or after
// t (see since) is over, looking itself when none has. It looks at
// most once per unknownKeyGap: made-up keys are what a client guessing keys
// sends, and each look stats the file and may wait behind a writer's disk
// sync. So a flood of unknown keys costs at most ten looks a second, and
// each of its requests waits at most about two gaps, on lookMu, which
// nothing on the path of a known key takes.
func (k *Keys) lookSince(t int64) {
	k.lookMu.Lock()
	defer k.lookMu.Unlock()
	for {
		last := k.lastCheck.Load()
		if last >= t {
			return
		}
		wait := time.Duration(last + int64(unknownKeyGap) - k.since())
		if wait <= 0 {
			break
		}
		time.Sleep(wait)
	}
	k.report(k.reload())
}

func readKeysFile(path string) (*keysFile, fileStamp, error) {
	f := &keysFile{Version: keysFileVersion}
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fileStamp{}, fmt.Errorf("key registry %s is missing: %w", path, err)
	}
	if err != nil {
		return nil, fileStamp{}, fmt.Errorf("cannot open key registry: %w", err)
	}
	defer fh.Close()
	// Stat the open file, so the stamp belongs to the bytes read even if
	// the file is replaced meanwhile.
	info, err := fh.Stat()
	if err != nil {
		return nil, fileStamp{}, fmt.Errorf("cannot stat key registry: %w", err)
	}
	data, err := io.ReadAll(fh)
	if err != nil {
		return nil, fileStamp{}, fmt.Errorf("cannot read key registry %s: %w", path, err)
	}
	// An empty file is damage, never an empty registry: writers replace
	// the file whole, and treating it as empty would refuse every key.
	if err := json.Unmarshal(data, f); err != nil {
		return nil, fileStamp{}, fmt.Errorf("cannot parse key registry %s: %w", path, err)
	}
	if f.Version != keysFileVersion {
		return nil, fileStamp{}, fmt.Errorf("key registry %s has version %d; this kwdata reads version %d", path, f.Version, keysFileVersion)
	}
	return f, fileStamp{info}, nil
}

// writeKeysFile replaces the registry atomically and durably: a reader sees
// the old file or the new one, and a crash leaves one of them.
func writeKeysFile(dir string, f *keysFile, prev fileStamp) error {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("cannot encode key registry: %w", err)
	}
	data = append(data, '\n')
	tmp, err := os.CreateTemp(dir, keysTempPattern)
	if err != nil {
		return fmt.Errorf("cannot write key registry: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("cannot write key registry: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("cannot sync key registry: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("cannot write key registry: %w", err)
	}
	// Keep modification times strictly increasing even when two writes
	// fall in one tick of the file system clock, so watchers see a change.
	if prev.info != nil {
		if info, err := os.Stat(tmp.Name()); err == nil && !info.ModTime().After(prev.info.ModTime()) {
			m := prev.info.ModTime().Add(time.Millisecond)
			if err := os.Chtimes(tmp.Name(), m, m); err != nil {
				return fmt.Errorf("cannot stamp key registry: %w", err)
			}
		}
	}
	path := filepath.Join(dir, keysFileName)
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("cannot replace key registry: %w", err)
	}
	return kw.SyncDir(dir)
}

// update applies fn to the registry under the file lock and publishes the
// result to this process at once.
func (k *Keys) update(ctx context.Context, fn func(f *keysFile, now time.Time) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	unlock, err := lockFile(filepath.Join(k.dir, keysLockName))
	if err != nil {
		return fmt.Errorf("cannot lock key registry: %w", err)
	}
	defer unlock()
	f, stamp, err := readKeysFile(k.path())
	if errors.Is(err, fs.ErrNotExist) {
		if cur := k.set.Load(); cur != nil && cur.stamp.info != nil {
			// Writing now would make a registry of one key and drop
			// every key this process still knows.
			return fmt.Errorf("%w; restore it before changing keys (this process still knows the %d keys it last read)", err, len(cur.recs))
		}
		f, stamp, err = &keysFile{Version: keysFileVersion}, fileStamp{}, nil
	}
	if err != nil {
		return err
	}
	if err := fn(f, k.now().UTC()); err != nil {
		return err
	}
	if err := writeKeysFile(k.dir, f, stamp); err != nil {
		return err
	}
	info, err := os.Stat(k.path())
	if err != nil {
		return fmt.Errorf("cannot stat key registry: %w", err)
	}
	ks, err := newKeySet(f, fileStamp{info})
	if err != nil {
		return fmt.Errorf("cannot load key registry: %w", err)
	}
	k.set.Store(ks)
	k.lastCheck.Store(k.since())
	return nil
}

func checkGrant(tier Tier, paidUntil time.Time) error {
	switch tier {
	case Registered:
		if !paidUntil.IsZero() {
			return errors.New("paid-until applies only to the paid tier")
		}
	case Paid:
	default:
		return fmt.Errorf("cannot issue a key of tier %q; use registered or paid", tier)
	}
	return nil
}

// CreateKey issues a key of tier Registered or Paid and returns it; this is
// the only time the key is ever visible. email may be empty; an email that
// already holds an active key is refused with ErrEmailTaken, as Register
// refuses it, so the operator and the endpoint keep one key per email.
// paidUntil is for Paid only; zero means no end.
func (k *Keys) CreateKey(ctx context.Context, tier Tier, email string, paidUntil time.Time) (string, KeyRecord, error) {
	return k.create(ctx, tier, email, paidUntil, email != "")
}

func (k *Keys) create(ctx context.Context, tier Tier, email string, paidUntil time.Time, oneKeyPerEmail bool) (string, KeyRecord, error) {
	if err := checkGrant(tier, paidUntil); err != nil {
		return "", KeyRecord{}, err
	}
	if email != "" {
		var err error
		if email, err = NormalizeEmail(email); err != nil {
			return "", KeyRecord{}, err
		}
	}
	key := newKey()
	h := hashKey(key)
	var rec KeyRecord
	err := k.update(ctx, func(f *keysFile, now time.Time) error {
		if oneKeyPerEmail && slices.ContainsFunc(f.Keys, func(e fileKey) bool { return e.Email == email && e.Revoked.IsZero() }) {
			return ErrEmailTaken
		}
		id := newID()
		for slices.ContainsFunc(f.Keys, func(e fileKey) bool { return e.ID == id }) {
			id = newID()
		}
		fk := fileKey{ID: id, SHA256: hex.EncodeToString(h[:]), Tier: tier, Email: email, Created: now}
		if tier == Paid && !paidUntil.IsZero() {
			fk.PaidUntil = paidUntil.UTC()
		}
		f.Keys = append(f.Keys, fk)
		rec = KeyRecord{ID: fk.ID, Tier: fk.Tier, Email: fk.Email, Created: fk.Created, PaidUntil: fk.PaidUntil}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrEmailTaken) {
			return "", KeyRecord{}, err
		}
		return "", KeyRecord{}, fmt.Errorf("cannot create key: %w", err)
	}
	return key, rec, nil
}

// find returns the index of the key named by an id or by the key itself.
func find(f *keysFile, idOrKey string) (int, error) {
	match := func(e fileKey) bool { return e.ID == idOrKey }
	if wellFormed(idOrKey) {
		h := hashKey(idOrKey)
		want := hex.EncodeToString(h[:])
		match = func(e fileKey) bool { return e.SHA256 == want }
	}
	if i := slices.IndexFunc(f.Keys, match); i >= 0 {
		return i, nil
	}
	return -1, fmt.Errorf("%w: %q; list them with kwdata keys list", ErrKeyNotFound, idOrKey)
}

// RevokeKey revokes the key with the given id (or the key itself). A
// running server refuses it within KeysPollInterval. Revoking a revoked key
// does nothing.
func (k *Keys) RevokeKey(ctx context.Context, idOrKey string) error {
	return k.update(ctx, func(f *keysFile, now time.Time) error {
		i, err := find(f, idOrKey)
		if err != nil {
			return err
		}
		if f.Keys[i].Revoked.IsZero() {
			f.Keys[i].Revoked = now
		}
		return nil
	})
}

// SetTier changes the tier of an active key (by id or the key itself).
// paidUntil is for Paid only; zero means no end.
func (k *Keys) SetTier(ctx context.Context, idOrKey string, tier Tier, paidUntil time.Time) error {
	if err := checkGrant(tier, paidUntil); err != nil {
		return err
	}
	return k.update(ctx, func(f *keysFile, now time.Time) error {
		i, err := find(f, idOrKey)
		if err != nil {
			return err
		}
		if !f.Keys[i].Revoked.IsZero() {
			return fmt.Errorf("key %s is revoked; create a new one", f.Keys[i].ID)
		}
		f.Keys[i].Tier = tier
		f.Keys[i].PaidUntil = time.Time{}
		if !paidUntil.IsZero() {
			f.Keys[i].PaidUntil = paidUntil.UTC()
		}
		return nil
	})
}

// ListKeys returns every key, revoked ones included, oldest first, with
// lookups this month from the server's usage snapshot (see LookupsAsOf).
func (k *Keys) ListKeys(ctx context.Context) ([]KeyRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := k.reload(); err != nil {
		return nil, err
	}
	recs := slices.Clone(k.set.Load().recs)
	if k.fill != nil {
		k.fill(recs)
	} else {
		k.fillFromSnapshot(recs)
	}
	return recs, nil
}
