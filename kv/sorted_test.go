package kv

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestTableEqualsBatch runs the same random writes through a Table and
// through an indexed batch, and checks that both commits leave the same
// store: overwrites, deletes (of keys written and never written), empty
// values, keys that are prefixes of one another, sub-keyspaces written in
// order and out of it, committed through the log and as an ingested table.
func TestTableEqualsBatch(t *testing.T) {
	t.Parallel()
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			stored := map[string]string{"g/1": "stored", "q/x": "stored", "p": "outside"}
			ref, db := storeWith(t, stored), storeWith(t, stored)
			ref.ingestMin = -1
			if seed%2 == 0 {
				db.ingestMin = 1 // every table is ingested
			}
			rb, tb := ref.NewBatch(), db.NewTable([]byte("p/"), 64)
			defer rb.Close()
			defer tb.Close()
			key := func() []byte {
				switch rng.IntN(10) {
				case 0:
					return []byte("p/") // the prefix itself
				case 1:
					return []byte("p/x" + strings.Repeat("y", rng.IntN(40)))
				}
				return []byte(fmt.Sprintf("p/%c/%04d", "abcdv"[rng.IntN(5)], rng.IntN(300)))
			}
			ops := rng.IntN(3000)
			for i := range ops {
				k := key()
				if rng.IntN(4) == 0 {
					both(t, rb.Delete(k), tb.Delete(k))
					continue
				}
				v := []byte(strings.Repeat("v", rng.IntN(4)) + fmt.Sprint(i))
				if rng.IntN(10) == 0 {
					v = nil
				}
				both(t, rb.Set(k, v), tb.Set(k, v))
			}
			both(t, rb.Commit(), tb.Commit())
			if got, want := dumpStore(t, db), dumpStore(t, ref); got != want {
				t.Fatalf("stores differ after commit:\n%.600s\nindexed batch:\n%.600s", got, want)
			}
			if seed%2 == 0 && db.IngestedTables() > 1 {
				t.Fatalf("%d tables ingested for one commit", db.IngestedTables())
			}
		})
	}
}

func both(t *testing.T, want, got error) {
	t.Helper()
	if want != nil || got != nil {
		t.Fatalf("indexed batch: %v, table: %v", want, got)
	}
}

// TestTableLastWriteWins: thousands of writes to a few keys in random
// order leave each key's last value, ingested as one table.
func TestTableLastWriteWins(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	db := storeWith(t, nil)
	db.ingestMin = 1
	b := db.NewTable([]byte("p/"), 0)
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

// TestTableOutsidePrefix: a write outside the table's prefix fails, and so
// does the commit, which writes nothing.
func TestTableOutsidePrefix(t *testing.T) {
	t.Parallel()
	db := storeWith(t, nil)
	b := db.NewTable([]byte("p/"), 0)
	defer b.Close()
	if err := b.Set([]byte("p/a"), []byte("A")); err != nil {
		t.Fatal(err)
	}
	if err := b.Set([]byte("q/a"), []byte("A")); err == nil {
		t.Fatal("a write outside the prefix was taken")
	}
	if err := b.Commit(); err == nil {
		t.Fatal("a table with a write outside its prefix committed")
	}
	if _, err := db.Get([]byte("p/a")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a failed commit wrote: %v", err)
	}
}

// TestTableDeletedOnly: a table whose every write was deleted again
// commits nothing, ingested or not.
func TestTableDeletedOnly(t *testing.T) {
	t.Parallel()
	for _, min := range []int{1, -1} {
		db := storeWith(t, map[string]string{"q": "stored"})
		db.ingestMin = min
		b := db.NewTable([]byte("p/"), 0)
		for _, k := range []string{"p/a", "p/b"} {
			if err := b.Set([]byte(k), []byte("v")); err != nil {
				t.Fatal(err)
			}
			if err := b.Delete([]byte(k)); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
		b.Close()
		if got := dumpStore(t, db); strings.Contains(got, `"p/`) {
			t.Fatalf("ingestMin %d: store %s", min, got)
		}
		if db.IngestedTables() != 0 {
			t.Fatalf("ingestMin %d: an empty table was ingested", min)
		}
	}
}
