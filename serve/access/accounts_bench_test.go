package access

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// benchAccounts is how many accounts BenchmarkAccounts fills the store
// with; KWDATA_BENCH_ACCOUNTS overrides it.
func benchAccounts(b *testing.B) int {
	if v := os.Getenv("KWDATA_BENCH_ACCOUNTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("KWDATA_BENCH_ACCOUNTS=%q: %v", v, err)
		}
		return n
	}
	return 1_000_000
}

// fillAccounts writes n registered accounts straight into the account
// database of dir in large batches (registering them one by one would
// take an hour of syncs) and returns some of their keys.
func fillAccounts(b *testing.B, dir string, n int) []string {
	b.Helper()
	opt := Options{Dir: dir}
	opt.fill()
	k, err := openLocalKeys(opt)
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	var sample []string
	batch := k.db.NewBatch()
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		key := newKey()
		if i%(n/1000+1) == 0 {
			sample = append(sample, key)
		}
		h := hashKey(key)
		id := fmt.Sprintf("b%011d", i)
		email := fmt.Sprintf("user%d@example.com", i)
		v, _ := json.Marshal(storedKey{ID: id, Seq: uint64(i + 1), Tier: Registered, Email: email, Created: created})
		batch.Set(hashDBKey(h), v, nil)
		batch.Set([]byte(idPrefix+id), h[:], nil)
		batch.Set([]byte(emailPrefix+email), []byte(id), nil)
		if batch.Len() > 64<<20 {
			if err := batch.Commit(pebble.NoSync); err != nil {
				b.Fatal(err)
			}
			batch = k.db.NewBatch()
		}
	}
	batch.Set([]byte(seqKey), encodeUint(uint64(n)), nil)
	if err := batch.Commit(pebble.Sync); err != nil {
		b.Fatal(err)
	}
	return sample
}

// latencies reports the median and 99th percentile of ds.
func latencies(b *testing.B, ds []time.Duration) {
	slices.Sort(ds)
	if len(ds) == 0 {
		return
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(ds[len(ds)/2]), "p50-ms")
	b.ReportMetric(ms(ds[min(len(ds)-1, len(ds)*99/100)]), "p99-ms")
}

// BenchmarkAccounts measures the account database at 1M accounts:
// registration and sign-up verification latency (one synced write each;
// median and p99), key lookup
// from memory and from the database, and, in the same run, the JSON
// registry it replaces: its lookup (a map of every key's hash) and the
// whole-file rewrite every registration cost it.
func BenchmarkAccounts(b *testing.B) {
	n := benchAccounts(b)
	dir := b.TempDir()
	start := time.Now()
	sample := fillAccounts(b, dir, n)
	b.Logf("filled %d accounts in %s", n, time.Since(start).Round(time.Millisecond))
	clk := newClock(b, "2026-11-22T12:00:00Z")
	s := openStore(b, dir, clk, func(o *Options) { o.RegistrationsPerAddressPerDay = 1 << 60 })
	client := netip.MustParseAddr("192.0.2.1")

	b.Run("register", func(b *testing.B) {
		ds := make([]time.Duration, 0, b.N)
		for i := range b.N {
			t0 := time.Now()
			if _, _, err := s.Register(ctx, fmt.Sprintf("new%d-%d@example.org", b.N, i), client); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(t0))
		}
		latencies(b, ds)
	})
	b.Run("verify", func(b *testing.B) {
		// Sign-up as it runs: a code, then its verification, which
		// issues the key; only the verification is timed.
		ds := make([]time.Duration, 0, b.N)
		for i := range b.N {
			email := fmt.Sprintf("verify%d-%d@example.org", b.N, i)
			su, err := s.StartSignup(ctx, email, client)
			if err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			if _, _, err := s.VerifySignup(ctx, email, su.Code); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(t0))
		}
		latencies(b, ds)
	})
	b.Run("register-parallel", func(b *testing.B) {
		var next atomic.Int64
		ds := make(chan time.Duration, b.N+64)
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				t0 := time.Now()
				if _, _, err := s.Register(ctx, fmt.Sprintf("par%d-%d@example.org", b.N, next.Add(1)), client); err != nil {
					b.Error(err)
					return
				}
				ds <- time.Since(t0)
			}
		})
		close(ds)
		var all []time.Duration
		for d := range ds {
			all = append(all, d)
		}
		latencies(b, all)
	})
	b.Run("lookup-cached", func(b *testing.B) {
		for _, k := range sample {
			s.keys.lookup(k)
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if _, ok := s.keys.lookup(sample[i%len(sample)]); !ok {
					b.Error("a sample key is unknown")
					return
				}
				i++
			}
		})
	})
	b.Run("lookup-database", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			h := hashKey(sample[i%len(sample)])
			if _, ok, err := s.keys.get(h); !ok || err != nil {
				b.Fatal("a sample key is unknown", err)
			}
		}
	})
	b.Run("lookup-unknown", func(b *testing.B) {
		keys := make([]string, 1024)
		for i := range keys {
			keys[i] = newKey()
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if _, ok := s.keys.lookup(keys[i%len(keys)]); ok {
					b.Error("a made-up key is known")
					return
				}
				i++
			}
		})
	})

	// The JSON registry, as it was: every key's hash in one map, the
	// whole file rewritten on every change.
	var legacy legacyKeysFile
	legacy.Version = 1
	byHash := make(map[keyHash]KeyRecord, n)
	for i := range n {
		key := newKey()
		if i < len(sample) {
			key = sample[i]
		}
		h := hashKey(key)
		byHash[h] = KeyRecord{ID: fmt.Sprintf("b%011d", i), Tier: Registered}
		e := &legacy.Keys
		*e = append(*e, struct {
			ID        string    `json:"id"`
			SHA256    string    `json:"sha256"`
			Tier      Tier      `json:"tier"`
			Email     string    `json:"email,omitempty"`
			Created   time.Time `json:"created"`
			PaidUntil time.Time `json:"paid_until,omitzero"`
			Revoked   time.Time `json:"revoked,omitzero"`
		}{ID: fmt.Sprintf("b%011d", i), SHA256: hex.EncodeToString(h[:]), Tier: Registered, Email: fmt.Sprintf("user%d@example.com", i), Created: time.Now()})
	}
	b.Run("json-lookup", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if _, ok := byHash[hashKey(sample[i%len(sample)])]; !ok {
					b.Error("a sample key is unknown")
					return
				}
				i++
			}
		})
	})
	b.Run("json-register", func(b *testing.B) {
		ds := make([]time.Duration, 0, b.N)
		for range b.N {
			t0 := time.Now()
			data, err := json.MarshalIndent(&legacy, "", "  ")
			if err != nil {
				b.Fatal(err)
			}
			path := filepath.Join(dir, "keys.json.bench")
			f, err := os.Create(path + ".tmp")
			if err != nil {
				b.Fatal(err)
			}
			f.Write(data)
			f.Sync()
			f.Close()
			os.Rename(path+".tmp", path)
			ds = append(ds, time.Since(t0))
			b.SetBytes(int64(len(data)))
		}
		latencies(b, ds)
	})
}
