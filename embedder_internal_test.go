package memor

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/memor-db/memor/embed"
)

// TestEmbedderRecordedOnLegacyStore: a store written before fingerprints
// were kept opens as before and records the embedder it is opened with.
func TestEmbedderRecordedOnLegacyStore(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "db")
	ctx := context.Background()
	e, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Add(ctx, "ana", "I live in Lisbon.", Sync()); err != nil {
		t.Fatal(err)
	}
	b := e.db.NewBatch()
	if err := b.Delete(embedderKey); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if _, ok, err := e.storedFingerprint(embedderKey); ok || err != nil {
		t.Fatalf("fingerprint still there: %v %v", ok, err)
	}
	e.Close()

	e, err = Open(dir, Options{})
	if err != nil {
		t.Fatalf("legacy store: %v", err)
	}
	f, err := e.StoreEmbedder(ctx)
	e.Close()
	if err != nil || f != (embed.Fingerprint{Name: "hash", Dim: embed.DefaultHashDim}) {
		t.Fatalf("recorded %+v, %v", f, err)
	}
}
