package kv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestLocalLogEqualsIndexedBatch runs the same random writes and reads
// through a local batch (its writes under the prefix kept in the local
// log) and through a plain indexed batch, and checks that every read
// answers the same and both commits leave the same store: overwrites,
// deletes, empty values, reads inside, outside and across the prefix,
// forwards and backwards, range deletions, enough interleaved reads to
// move the log into the indexed batch, and commits through the log and
// as an ingested table.
func TestLocalLogEqualsIndexedBatch(t *testing.T) {
	t.Parallel()
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			stored := map[string]string{"g/1": "stored", "q/x": "stored", "p": "outside"}
			ref, db := storeWith(t, stored), storeWith(t, stored)
			ref.ingestMin = -1
			if seed%2 == 0 {
				db.ingestMin = 1 // every large enough batch is ingested
			}
			prefix := []byte("p/")
			rb, lb := ref.NewBatch(), db.NewLocalBatch(prefix, 64)
			defer rb.Close()
			defer lb.Close()
			if seed%3 == 0 { // the other way in
				lb.Close()
				lb = db.NewBatch()
				lb.SetLocal(prefix)
			}
			key := func() []byte {
				switch rng.IntN(10) {
				case 0:
					return []byte(fmt.Sprintf("g/%d", rng.IntN(5)))
				case 1:
					return []byte("p/") // the prefix itself
				}
				// Sub-keyspaces like the engine's, some written in order.
				return []byte(fmt.Sprintf("p/%c/%04d", "abcdv"[rng.IntN(5)], rng.IntN(300)))
			}
			ranges := func() (lo, hi []byte) {
				switch rng.IntN(6) {
				case 0:
					return []byte("g/"), []byte("r/") // across the prefix
				case 1:
					return []byte("q/"), nil // after it
				case 2:
					return nil, []byte("p/") // before it
				}
				a, b := key(), key()
				if strings.Compare(string(a), string(b)) > 0 {
					a, b = b, a
				}
				if !strings.HasPrefix(string(a), "p/") || !strings.HasPrefix(string(b), "p/") {
					a, b = []byte("p/"), []byte("p0")
				}
				return a, b
			}
			ops := 200 + rng.IntN(3000)
			readEvery := 1 + rng.IntN(60)
			for i := range ops {
				switch r := rng.IntN(100); {
				case r < 60:
					k := key()
					v := []byte(strings.Repeat("v", rng.IntN(4)) + fmt.Sprint(i))
					if rng.IntN(10) == 0 {
						v = nil
					}
					both(t, rb.Set(k, v), lb.Set(k, v))
				case r < 75:
					k := key()
					both(t, rb.Delete(k), lb.Delete(k))
				case r == 75 && rng.IntN(20) == 0:
					lo, hi := "p/b/", "p/c/"
					both(t, rb.DeleteRange([]byte(lo), []byte(hi)), lb.DeleteRange([]byte(lo), []byte(hi)))
				}
				if i%readEvery != 0 {
					continue
				}
				k := key()
				rv, rerr := rb.Get(k)
				lv, lerr := lb.Get(k)
				if string(rv) != string(lv) || errors.Is(rerr, ErrNotFound) != errors.Is(lerr, ErrNotFound) {
					t.Fatalf("op %d: Get(%s) = %q, %v; indexed batch %q, %v", i, k, lv, lerr, rv, rerr)
				}
				lo, hi := ranges()
				reverse := rng.IntN(2) == 0
				if got, want := collect(t, lb, lo, hi, reverse), collect(t, rb, lo, hi, reverse); got != want {
					t.Fatalf("op %d: scan [%q, %q) reverse=%v:\n%s\nindexed batch:\n%s", i, lo, hi, reverse, got, want)
				}
			}
			if rb.Len() > 0 != (lb.Len() > 0) || rb.Empty() != lb.Empty() {
				t.Fatalf("Len %d/%d, Empty %v/%v", lb.Len(), rb.Len(), lb.Empty(), rb.Empty())
			}
			both(t, rb.Commit(), lb.Commit())
			if got, want := dumpStore(t, db), dumpStore(t, ref); got != want {
				t.Fatalf("stores differ after commit:\n%.600s\nindexed batch:\n%.600s", got, want)
			}
		})
	}
}

func both(t *testing.T, want, got error) {
	t.Helper()
	if want != nil || got != nil {
		t.Fatalf("indexed batch: %v, local batch: %v", want, got)
	}
}

func collect(t *testing.T, b *Batch, lo, hi []byte, reverse bool) string {
	t.Helper()
	var sb strings.Builder
	fn := func(k, v []byte) error {
		fmt.Fprintf(&sb, "%q=%q\n", k, v)
		return nil
	}
	var err error
	switch {
	case reverse && hi != nil && string(PrefixEnd(lo)) == string(hi):
		err = b.ScanReverse(context.Background(), lo, fn)
	case reverse:
		err = b.scanDir(context.Background(), lo, hi, true, fn)
	default:
		err = b.ScanRange(context.Background(), lo, hi, fn)
	}
	if err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

// TestLocalLogWritesDuringScan: a write from inside a scan's callback (the
// engine rewrites a claim it just read) neither disturbs the scan nor is
// lost.
func TestLocalLogWritesDuringScan(t *testing.T) {
	t.Parallel()
	db := storeWith(t, nil)
	b := db.NewLocalBatch([]byte("p/"), 0)
	defer b.Close()
	for i := range 100 {
		if err := b.Set([]byte(fmt.Sprintf("p/%03d", i)), []byte("a")); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	err := b.Scan(context.Background(), []byte("p/"), func(k, v []byte) error {
		n++
		if string(v) != "a" {
			return fmt.Errorf("%s = %q", k, v)
		}
		return b.Set(append([]byte(nil), k...), []byte("b"))
	})
	if err != nil || n != 100 {
		t.Fatalf("scan saw %d keys: %v", n, err)
	}
	if err := b.Scan(context.Background(), []byte("p/"), func(k, v []byte) error {
		if string(v) != "b" {
			return fmt.Errorf("%s = %q after the rewrite", k, v)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkLocalBatch is a new user's import as the engine writes it (ten
// keys per fact in ten sub-keyspaces, a few reads) committed as a table,
// through the local log and through Pebble's indexed batch.
func BenchmarkLocalBatch(b *testing.B) {
	const facts = 1000
	val := []byte(strings.Repeat("x", 150))
	for _, mode := range []string{"log", "indexed"} {
		b.Run("mode="+mode, func(b *testing.B) {
			db, err := Open(b.TempDir(), Options{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			b.ReportAllocs()
			u := 0
			for b.Loop() {
				u++
				root := UserRoot(fmt.Sprintf("user-%d", u))
				var bt *Batch
				if mode == "log" {
					bt = db.NewLocalBatch(root, facts*1800)
				} else {
					bt = db.NewBatchSized(facts * 1800)
					bt.local = root
				}
				for i := range facts {
					for s, sub := range []Sub{SubClaim, SubFactIndex, SubLog, SubLive, SubDoc, SubBM25, SubVector, SubTemporal, SubGraph, SubGraph} {
						k := append(append([]byte(nil), root...), byte(sub))
						switch s {
						case 0, 1, 3: // slot or hash order
							k = AppendUint32(k, uint32(i*2654435761))
						default:
							k = AppendUint32(k, uint32(i*2+s/9))
						}
						if err := bt.Set(k, val); err != nil {
							b.Fatal(err)
						}
					}
					if i%200 == 0 {
						_, _ = bt.Get(append(append([]byte(nil), root...), byte(SubLive)))
					}
				}
				if err := bt.Commit(); err != nil {
					b.Fatal(err)
				}
				bt.Close()
			}
			b.ReportMetric(float64(facts)*float64(b.N)/b.Elapsed().Seconds(), "facts/s")
		})
	}
}

// TestLocalLogLastWriteWins: thousands of writes to a few keys in random
// order, read back only at the end (one sort of the whole log), leave each
// key's last value, in a read and in the committed store.
func TestLocalLogLastWriteWins(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	db := storeWith(t, nil)
	db.ingestMin = 1
	b := db.NewLocalBatch([]byte("p/"), 0)
	defer b.Close()
	last := map[string]string{}
	for i := range 5000 {
		k := fmt.Sprintf("p/%02d", rng.IntN(40))
		if i%3 == 0 { // keys that are prefixes of one another, sharing long stretches
			k = "p/x" + strings.Repeat("y", rng.IntN(60)) + strings.Repeat("z", rng.IntN(2))
		}
		v := fmt.Sprint(i)
		if err := b.Set([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		last[k] = v
	}
	for k, want := range last {
		if v, err := b.Get([]byte(k)); err != nil || string(v) != want {
			t.Fatalf("Get(%s) = %q, %v; want %q", k, v, err, want)
		}
	}
	var order, want []string
	if err := b.Scan(context.Background(), []byte("p/"), func(k, _ []byte) error {
		order = append(order, string(k))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for k := range last {
		want = append(want, k)
	}
	slices.Sort(want)
	if !slices.Equal(order, want) {
		t.Fatalf("scan order %q, want %q", order, want)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	for k, want := range last {
		if v, err := db.Get([]byte(k)); err != nil || string(v) != want {
			t.Fatalf("stored %s = %q, %v; want %q", k, v, err, want)
		}
	}
	if db.IngestedTables() != 1 {
		t.Fatalf("%d tables ingested, want 1", db.IngestedTables())
	}
}
