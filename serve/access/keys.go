package access

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
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
	keysFileName  = "keys.json" // the registry before accounts moved into Pebble; migrated once
	usageFileName = "usage.json"
	countersName  = "counters"
	accountsName  = "accounts"
	adminSockName = "admin.sock"

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
	// NoKeyShown is true for an account made by signing in, whose key
	// was never shown to anyone: the account page offers to create one
	// (RotateAccountKey).
	NoKeyShown bool
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

// Layout of the account database, <Dir>/accounts. Only the hash of a key
// is a database key; the key itself is never written anywhere.
const (
	hashPrefix  = "k/" // k/<32-byte SHA-256 of the key> -> JSON storedKey
	idPrefix    = "i/" // i/<id> -> the 32-byte hash of the id's current key
	emailPrefix = "e/" // e/<FoldEmail(email)> -> id of the mailbox's active key
	seqKey      = "m/seq"
	migratedKey = "m/migrated" // when keys.json was imported
)

// storedKey is the value under k/<hash>.
type storedKey struct {
	ID        string    `json:"id"`
	Seq       uint64    `json:"seq"` // creation order, for listing
	Tier      Tier      `json:"tier"`
	Email     string    `json:"email,omitempty"`
	Created   time.Time `json:"created"`
	PaidUntil time.Time `json:"paid_until,omitzero"`
	Revoked   time.Time `json:"revoked,omitzero"`

	// Billing (see BillingChange).
	Customer          string    `json:"customer,omitempty"`
	Subscription      string    `json:"subscription,omitempty"`
	Status            string    `json:"status,omitempty"`
	CancelAtPeriodEnd bool      `json:"cancel_at_period_end,omitempty"`
	PaymentFailed     time.Time `json:"payment_failed,omitzero"`

	// NoKeyShown: made by signing in; its key was never shown.
	NoKeyShown bool `json:"no_key_shown,omitempty"`
}

func (k storedKey) record() KeyRecord {
	return KeyRecord{ID: k.ID, Tier: k.Tier, Email: k.Email, Created: k.Created, PaidUntil: k.PaidUntil, Revoked: k.Revoked,
		NoKeyShown: k.NoKeyShown}
}

// nCacheShards spreads the key cache over independent locks.
const nCacheShards = 32

type cacheShard struct {
	mu sync.RWMutex
	m  map[keyHash]KeyRecord
	_  [40]byte // keep neighbouring shards' locks off one cache line
}

// Keys is the account registry, the Pebble database <Dir>/accounts. One
// process holds the database: the server (through Open) or, when no server
// runs, the command line (through OpenKeys). A command line that finds a
// server holding it sends its changes through the server's admin socket
// instead, so they take effect on the server the moment they are made.
type Keys struct {
	dir string
	now func() time.Time
	log *slog.Logger

	db     *pebble.DB // nil when remote is set
	remote string     // the admin socket of the server holding the database

	mu  sync.Mutex // serializes writers
	seq uint64     // last sequence number given; under mu

	// cache holds the records of keys seen since open. This process is
	// the only writer, and every write updates the cache, so it is never
	// stale; a miss reads the database.
	cache [nCacheShards]cacheShard

	// fill sets the usage fields of listed records; nil reads the server's
	// usage snapshot.
	fill func(recs []KeyRecord)
}

// OpenKeys opens the account registry under opt.Dir for processes (the
// command line) that manage keys while a server may be running: through
// the server's admin socket when one answers there, else by opening the
// database itself. Lookups in ListKeys are live through a server and come
// from its last usage snapshot otherwise.
func OpenKeys(opt Options) (*Keys, error) {
	opt.fill()
	if opt.Dir == "" {
		return nil, errors.New("cannot open access store: no folder given")
	}
	if err := os.MkdirAll(opt.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("cannot create access folder %s: %w", opt.Dir, err)
	}
	sock := filepath.Join(opt.Dir, adminSockName)
	// Another command line may hold the database for a moment; wait for
	// it rather than fail, as the file lock of the JSON registry did.
	deadline := time.Now().Add(localWait)
	for {
		if adminAnswers(sock) {
			return &Keys{dir: opt.Dir, now: opt.Now, log: opt.Logger, remote: sock}, nil
		}
		k, err := openLocalKeys(opt)
		if err == nil || !isLocked(err) || time.Now().After(deadline) {
			return k, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// localWait is how long OpenKeys waits for another command line to
// release the account database.
const localWait = 10 * time.Second

// isLocked reports whether an open failed because another process (or
// another handle in this one) holds the database.
func isLocked(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) || strings.Contains(err.Error(), "lock held by")
}

// openLocalKeys opens the account database itself, importing a keys.json
// left by an older kwdata.
func openLocalKeys(opt Options) (*Keys, error) {
	db, err := openDB(filepath.Join(opt.Dir, accountsName), "accounts", "account database", opt)
	if err != nil {
		return nil, err
	}
	k := &Keys{dir: opt.Dir, now: opt.Now, log: opt.Logger, db: db}
	for i := range k.cache {
		k.cache[i].m = make(map[keyHash]KeyRecord)
	}
	if v, closer, err := db.Get([]byte(seqKey)); err == nil {
		k.seq, _ = decodeUint(v)
		closer.Close()
	} else if !errors.Is(err, pebble.ErrNotFound) {
		db.Close()
		return nil, fmt.Errorf("cannot read account database: %w", err)
	}
	if err := k.migrate(); err != nil {
		db.Close()
		return nil, err
	}
	return k, nil
}

// Close releases the account database (nothing when remote).
func (k *Keys) Close() error {
	if k.db == nil {
		return nil
	}
	if err := k.db.Close(); err != nil {
		return fmt.Errorf("cannot close account database: %w", err)
	}
	return nil
}

func encodeUint(v uint64) []byte { return encodeInt(int64(v)) }

func decodeUint(b []byte) (uint64, bool) {
	v, ok := decodeInt(b)
	return uint64(v), ok
}

func hashDBKey(h keyHash) []byte { return append([]byte(hashPrefix), h[:]...) }

func (k *Keys) shardOf(h keyHash) *cacheShard { return &k.cache[h[0]%nCacheShards] }

// remember puts what a writer just committed into the cache.
func (k *Keys) remember(h keyHash, rec KeyRecord) {
	sh := k.shardOf(h)
	sh.mu.Lock()
	sh.m[h] = rec
	sh.mu.Unlock()
}

// forget drops a key that no longer exists (the old key of a rotation).
func (k *Keys) forget(h keyHash) {
	sh := k.shardOf(h)
	sh.mu.Lock()
	delete(sh.m, h)
	sh.mu.Unlock()
}

// lookup returns the record of a well-formed key. A key seen before is
// answered from memory; another costs one database read, which a Bloom
// filter makes cheap for made-up keys.
func (k *Keys) lookup(key string) (KeyRecord, bool) {
	h := hashKey(key)
	sh := k.shardOf(h)
	sh.mu.RLock()
	rec, ok := sh.m[h]
	sh.mu.RUnlock()
	if ok {
		return rec, true
	}
	sk, ok, err := k.get(h)
	if err != nil {
		k.log.Error("cannot read account database", "err", err)
		return KeyRecord{}, false
	}
	if !ok {
		return KeyRecord{}, false
	}
	// A writer that committed after the read above has already put its
	// record here; never overwrite it with the older one.
	sh.mu.Lock()
	if cur, ok := sh.m[h]; ok {
		rec = cur
	} else {
		rec = sk.record()
		sh.m[h] = rec
	}
	sh.mu.Unlock()
	return rec, true
}

// get reads the stored record of a key hash.
func (k *Keys) get(h keyHash) (storedKey, bool, error) {
	var sk storedKey
	v, closer, err := k.db.Get(hashDBKey(h))
	if errors.Is(err, pebble.ErrNotFound) {
		return sk, false, nil
	}
	if err != nil {
		return sk, false, err
	}
	defer closer.Close()
	if err := json.Unmarshal(v, &sk); err != nil {
		return sk, false, fmt.Errorf("cannot decode account %x: %w", h[:4], err)
	}
	return sk, true, nil
}

func (k *Keys) getString(key string) (string, bool, error) { return getString(k.db, key) }

// getString reads a string value from the database or a batch; ok is false
// when the key is absent.
func getString(r pebble.Reader, key string) (v string, ok bool, err error) {
	b, closer, err := r.Get([]byte(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	defer closer.Close()
	return string(b), true, nil
}

// kvTx is the storage one account transaction runs on: byte values by
// key in the layout of the account database (see hashPrefix), each read
// seeing the transaction's own writes, all writes applied at once or not
// at all. The embedded store's is a Pebble batch (pebbleTx), the Redis
// store's an optimistic transaction (redisTx), so that the account rules
// (sign-up, rotation, billing) are written once for both.
type kvTx interface {
	get(key string) ([]byte, bool, error)
	set(key string, v []byte) error
	del(key string) error
	// keyChanged notes that the record of h was written (sk) or deleted
	// (nil), for the caches of the servers.
	keyChanged(h keyHash, sk *storedKey)
	// nextSeq gives the creation order of a new key.
	nextSeq() (uint64, error)
}

// txn is one write to the account database: the rules of accounts on top
// of a kvTx.
type txn struct {
	kv  kvTx
	now time.Time
}

func (t *txn) put(h keyHash, sk storedKey) error {
	v, err := json.Marshal(sk)
	if err != nil {
		return err
	}
	if err := t.kv.set(string(hashDBKey(h)), v); err != nil {
		return err
	}
	if err := t.kv.set(idPrefix+sk.ID, h[:]); err != nil {
		return err
	}
	t.kv.keyChanged(h, &sk)
	return nil
}

// pebbleTx is the embedded store's kvTx: an indexed batch, committed in
// one synced write, and the cache changes that follow it.
type pebbleTx struct {
	k     *Keys
	b     *pebble.Batch
	after []func()
}

func (p *pebbleTx) get(key string) ([]byte, bool, error) {
	v, closer, err := p.b.Get([]byte(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer closer.Close()
	return bytes.Clone(v), true, nil
}

func (p *pebbleTx) set(key string, v []byte) error { return p.b.Set([]byte(key), v, nil) }

func (p *pebbleTx) del(key string) error { return p.b.Delete([]byte(key), nil) }

func (p *pebbleTx) keyChanged(h keyHash, sk *storedKey) {
	if sk == nil {
		p.after = append(p.after, func() { p.k.forget(h) })
		return
	}
	rec := sk.record()
	p.after = append(p.after, func() { p.k.remember(h, rec) })
}

// nextSeq counts under the writer lock; update restores the count when
// the batch is not committed.
func (p *pebbleTx) nextSeq() (uint64, error) {
	p.k.seq++
	return p.k.seq, nil
}

// update runs fn with a batch under the writer lock and commits it
// durably before returning; a failure commits nothing.
func (k *Keys) update(ctx context.Context, fn func(t *txn) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	p := &pebbleTx{k: k, b: k.db.NewIndexedBatch()}
	defer p.b.Close()
	t := &txn{kv: p, now: k.now().UTC()}
	seq := k.seq
	if err := fn(t); err != nil {
		k.seq = seq
		return err
	}
	if k.seq != seq {
		_ = p.b.Set([]byte(seqKey), encodeUint(k.seq), nil)
	}
	if err := p.b.Commit(pebble.Sync); err != nil {
		k.seq = seq
		return fmt.Errorf("cannot write account database: %w", err)
	}
	for _, f := range p.after {
		f()
	}
	return nil
}

// errReadOnly is what a write in a view returns: a bug, never a
// client's fault.
var errReadOnly = errors.New("cannot write the account database in a read-only view")

// readTx is the kvTx of a view: reads of the committed database, no
// writes.
type readTx struct{ r pebble.Reader }

func (x readTx) get(key string) ([]byte, bool, error) {
	v, closer, err := x.r.Get([]byte(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("cannot read the account database: %w", err)
	}
	defer closer.Close()
	return bytes.Clone(v), true, nil
}

func (readTx) set(string, []byte) error       { return errReadOnly }
func (readTx) del(string) error               { return errReadOnly }
func (readTx) keyChanged(keyHash, *storedKey) {}
func (readTx) nextSeq() (uint64, error)       { return 0, errReadOnly }

// view runs fn on the committed database, without the writer lock: the
// read path of sessions and grants, which must not queue behind writes.
func (k *Keys) view(ctx context.Context, fn func(t *txn) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return fn(&txn{kv: readTx{k.db}, now: k.now().UTC()})
}

// getString reads key through the transaction, so a txn sees its own
// writes.
func (t *txn) getString(key string) (string, bool, error) {
	v, ok, err := t.kv.get(key)
	return string(v), ok, err
}

func (t *txn) get(h keyHash) (storedKey, bool, error) {
	var sk storedKey
	v, ok, err := t.kv.get(string(hashDBKey(h)))
	if err != nil || !ok {
		return sk, false, err
	}
	if err := json.Unmarshal(v, &sk); err != nil {
		return sk, false, fmt.Errorf("cannot decode account %x: %w", h[:4], err)
	}
	return sk, true, nil
}

// newAccount stores a new key h with a fresh id; holdMailbox makes it the
// active key of its email's mailbox.
func (t *txn) newAccount(h keyHash, tier Tier, email string, paidUntil time.Time, holdMailbox bool) (storedKey, error) {
	id := newID()
	for {
		_, dup, err := t.getString(idPrefix + id)
		if err != nil {
			return storedKey{}, err
		}
		if !dup {
			break
		}
		id = newID()
	}
	if email != "" && holdMailbox {
		if err := t.kv.set(emailPrefix+FoldEmail(email), []byte(id)); err != nil {
			return storedKey{}, err
		}
	}
	seq, err := t.kv.nextSeq()
	if err != nil {
		return storedKey{}, err
	}
	sk := storedKey{ID: id, Seq: seq, Tier: tier, Email: email, Created: t.now}
	if tier == Paid && !paidUntil.IsZero() {
		sk.PaidUntil = paidUntil.UTC()
	}
	return sk, t.put(h, sk)
}

// rekey moves the account of key old to key h: same id, tier,
// subscription and counters (which count on the id), and old stops
// working. The new key is shown to its holder, so the account has one
// (NoKeyShown false).
func (t *txn) rekey(old, h keyHash, sk storedKey) error {
	sk.NoKeyShown = false
	if err := t.kv.del(string(hashDBKey(old))); err != nil {
		return err
	}
	t.kv.keyChanged(old, nil)
	return t.put(h, sk)
}

// find returns the hash and record of the key named by an id or by the
// key itself.
func (t *txn) find(idOrKey string) (keyHash, storedKey, error) {
	var h keyHash
	if wellFormed(idOrKey) {
		h = hashKey(idOrKey)
	} else if v, ok, err := t.getString(idPrefix + idOrKey); err != nil {
		return h, storedKey{}, err
	} else if ok && len(v) == len(h) {
		copy(h[:], v)
	} else {
		return h, storedKey{}, fmt.Errorf("%w: %q; list them with kwdata keys list", ErrKeyNotFound, idOrKey)
	}
	sk, ok, err := t.get(h)
	if err != nil {
		return h, sk, err
	}
	if !ok {
		return h, sk, fmt.Errorf("%w: %q; list them with kwdata keys list", ErrKeyNotFound, idOrKey)
	}
	return h, sk, nil
}

// activeOf returns the id of the active key of a mailbox, if any.
func (t *txn) activeOf(mailbox string) (string, bool, error) {
	return t.getString(emailPrefix + mailbox)
}

// revoke marks sk revoked and frees its mailbox.
func (t *txn) revoke(h keyHash, sk storedKey) error {
	if !sk.Revoked.IsZero() {
		return nil
	}
	sk.Revoked = t.now
	if sk.Email != "" {
		mb := FoldEmail(sk.Email)
		if id, ok, err := t.activeOf(mb); err != nil {
			return err
		} else if ok && id == sk.ID {
			if err := t.kv.del(emailPrefix + mb); err != nil {
				return err
			}
		}
	}
	return t.put(h, sk)
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
// the only time the key is ever visible. email may be empty; an email whose
// mailbox (see FoldEmail) already holds an active key is refused with
// ErrEmailTaken, as registration refuses it, so the operator and the
// endpoint keep one key per mailbox. paidUntil is for Paid only; zero
// means no end.
func (k *Keys) CreateKey(ctx context.Context, tier Tier, email string, paidUntil time.Time) (string, KeyRecord, error) {
	if k.remote != "" {
		resp, err := k.call(ctx, adminRequest{Op: "create", Tier: tier, Email: email, PaidUntil: paidUntil})
		if err != nil {
			return "", KeyRecord{}, err
		}
		return resp.Key, *resp.Record, nil
	}
	return k.create(ctx, tier, email, paidUntil, email != "")
}

func (k *Keys) create(ctx context.Context, tier Tier, email string, paidUntil time.Time, oneKeyPerEmail bool) (string, KeyRecord, error) {
	return createKey(ctx, k, tier, email, paidUntil, oneKeyPerEmail)
}

// updater runs account transactions: Keys (and the Store holding them)
// on Pebble, the RedisStore on Redis.
type updater interface {
	update(ctx context.Context, fn func(t *txn) error) error
}

func createKey(ctx context.Context, u updater, tier Tier, email string, paidUntil time.Time, oneKeyPerEmail bool) (string, KeyRecord, error) {
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
	err := u.update(ctx, func(t *txn) error {
		mb := FoldEmail(email)
		taken := false
		if email != "" {
			var err error
			if _, taken, err = t.activeOf(mb); err != nil {
				return err
			}
			if taken && oneKeyPerEmail {
				return ErrEmailTaken
			}
		}
		sk, err := t.newAccount(h, tier, email, paidUntil, !taken)
		rec = sk.record()
		return err
	})
	if err != nil {
		if errors.Is(err, ErrEmailTaken) {
			return "", KeyRecord{}, err
		}
		return "", KeyRecord{}, fmt.Errorf("cannot create key: %w", err)
	}
	return key, rec, nil
}

// RevokeKey revokes the key with the given id (or the key itself); a
// running server refuses it from the moment this returns. Revoking a
// revoked key does nothing.
func (k *Keys) RevokeKey(ctx context.Context, idOrKey string) error {
	if k.remote != "" {
		_, err := k.call(ctx, adminRequest{Op: "revoke", IDOrKey: idOrKey})
		return err
	}
	return revokeKey(ctx, k, idOrKey)
}

func revokeKey(ctx context.Context, u updater, idOrKey string) error {
	return u.update(ctx, func(t *txn) error {
		h, sk, err := t.find(idOrKey)
		if err != nil {
			return err
		}
		return t.revoke(h, sk)
	})
}

// SetTier changes the tier of an active key (by id or the key itself).
// paidUntil is for Paid only; zero means no end.
func (k *Keys) SetTier(ctx context.Context, idOrKey string, tier Tier, paidUntil time.Time) error {
	if err := checkGrant(tier, paidUntil); err != nil {
		return err
	}
	if k.remote != "" {
		_, err := k.call(ctx, adminRequest{Op: "set-tier", IDOrKey: idOrKey, Tier: tier, PaidUntil: paidUntil})
		return err
	}
	return setTier(ctx, k, idOrKey, tier, paidUntil)
}

func setTier(ctx context.Context, u updater, idOrKey string, tier Tier, paidUntil time.Time) error {
	return u.update(ctx, func(t *txn) error {
		h, sk, err := t.find(idOrKey)
		if err != nil {
			return err
		}
		if !sk.Revoked.IsZero() {
			return fmt.Errorf("key %s is revoked; create a new one", sk.ID)
		}
		sk.Tier = tier
		sk.PaidUntil = time.Time{}
		if !paidUntil.IsZero() {
			sk.PaidUntil = paidUntil.UTC()
		}
		return t.put(h, sk)
	})
}

// ListKeys returns every key, revoked ones included, oldest first, with
// lookups this month: live from a server, else from its usage snapshot
// (see LookupsAsOf).
func (k *Keys) ListKeys(ctx context.Context) ([]KeyRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if k.remote != "" {
		resp, err := k.call(ctx, adminRequest{Op: "list"})
		if err != nil {
			return nil, err
		}
		return resp.Records, nil
	}
	type listed struct {
		seq uint64
		rec KeyRecord
	}
	var all []listed
	it, err := k.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: []byte(hashPrefix), UpperBound: []byte("k0")})
	if err != nil {
		return nil, fmt.Errorf("cannot list accounts: %w", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		if len(all)%4096 == 0 && ctx.Err() != nil {
			it.Close()
			return nil, ctx.Err()
		}
		var sk storedKey
		v, err := it.ValueAndErr()
		if err == nil {
			err = json.Unmarshal(v, &sk)
		}
		if err != nil {
			it.Close()
			return nil, fmt.Errorf("cannot read account %x: %w", bytes.TrimPrefix(it.Key(), []byte(hashPrefix))[:4], err)
		}
		all = append(all, listed{sk.Seq, sk.record()})
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return nil, fmt.Errorf("cannot list accounts: %w", err)
	}
	slices.SortFunc(all, func(a, b listed) int { return cmp.Compare(a.seq, b.seq) })
	recs := make([]KeyRecord, len(all))
	for i, l := range all {
		recs[i] = l.rec
	}
	if k.fill != nil {
		k.fill(recs)
	} else {
		k.fillFromSnapshot(recs)
	}
	return recs, nil
}
