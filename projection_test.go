package memor_test

import (
	"bytes"
	"context"
	"errors"
	"iter"
	"slices"
	"testing"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/internal/enginetest"
)

type rawRecord struct{ k, v []byte }

func dumpUser(t *testing.T, e *memor.Engine, user string) ([]rawRecord, uint64) {
	t.Helper()
	var out []rawRecord
	seq, err := e.DumpUser(context.Background(), user, func(k, v []byte) error {
		out = append(out, rawRecord{bytes.Clone(k), bytes.Clone(v)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, seq
}

func seqOf(rs []rawRecord) iter.Seq2[[]byte, []byte] {
	return func(yield func([]byte, []byte) bool) {
		for _, r := range rs {
			if !yield(r.k, r.v) {
				return
			}
		}
	}
}

// TestRestoreUserEqualsSource: a user's records dumped from one store and
// restored into another give the same memory, byte for byte the same
// records, and later writes go on from there; Evict leaves nothing of
// the user and keeps the others.
func TestRestoreUserEqualsSource(t *testing.T) {
	ctx := context.Background()
	src, err := memor.Open(t.TempDir(), memor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for _, text := range []string{"I live in Paris.", "I play the violin.", "I moved to Lyon last week.", "I no longer play the violin."} {
		if _, err := src.Add(ctx, "u", text, memor.Sync()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := src.Add(ctx, "other", "I live in Oslo.", memor.Sync()); err != nil {
		t.Fatal(err)
	}
	recs, seq := dumpUser(t, src, "u")
	if seq != 4 || len(recs) == 0 {
		t.Fatalf("dump: seq %d, %d records", seq, len(recs))
	}
	dst, err := memor.Open(t.TempDir(), memor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if err := dst.RestoreUser(ctx, "u", seqOf(recs)); err != nil {
		t.Fatal(err)
	}
	enginetest.SameMemory(t, dst, src, "u")
	again, _ := dumpUser(t, dst, "u")
	if !slices.EqualFunc(again, recs, func(a, b rawRecord) bool { return bytes.Equal(a.k, b.k) && bytes.Equal(a.v, b.v) }) {
		t.Fatal("the restored records differ from the dumped ones")
	}
	// Writes go on from the restored position, and equal a store fed
	// the same episodes (the restored one's export imported).
	if _, err := dst.Add(ctx, "u", "I live in Nice now.", memor.Sync()); err != nil {
		t.Fatal(err)
	}
	if f, err := dst.Freshness(ctx, "u"); err != nil || f.Latest != 5 || f.Pending != 0 {
		t.Fatalf("after a write on the restored user: %+v, %v", f, err)
	}
	ref, err := memor.Open(t.TempDir(), memor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	var buf bytes.Buffer
	if _, err := dst.Export(ctx, &buf, "u"); err != nil {
		t.Fatal(err)
	}
	if _, err := ref.Import(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	enginetest.SameMemory(t, dst, ref, "u")

	// Restored over a user the store holds (at another position): the
	// store's copy is replaced, not merged.
	if err := dst.RestoreUser(ctx, "u", seqOf(recs)); err != nil {
		t.Fatal(err)
	}
	enginetest.SameMemory(t, dst, src, "u")
	if f, err := dst.Freshness(ctx, "u"); err != nil || f.Latest != 4 {
		t.Fatalf("restored over a later copy: %+v, %v", f, err)
	}

	// Another user's key, or no counters: nothing written.
	foreign := append(slices.Clone(recs), dump2(t, src, "other")...)
	if err := dst.RestoreUser(ctx, "u2", seqOf(foreign)); !errors.Is(err, memor.ErrBadProjection) {
		t.Fatalf("restore of another user's records: %v, want ErrBadProjection", err)
	}
	if us, _ := dst.Users(ctx); slices.Contains(us, "u2") {
		t.Fatal("a refused restore wrote the user")
	}

	if err := src.Evict(ctx, "u", "never-stored"); err != nil {
		t.Fatal(err)
	}
	if us, _ := src.Users(ctx); !slices.Equal(us, []string{"other"}) {
		t.Fatalf("after Evict the store lists %v", us)
	}
}

func dump2(t *testing.T, e *memor.Engine, user string) []rawRecord {
	rs, _ := dumpUser(t, e, user)
	return rs
}
