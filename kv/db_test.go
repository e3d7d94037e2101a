package kv

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// TestScanReverse: a reverse scan through a batch sees the committed keys
// and the batch's own writes and deletes, last first, within the prefix,
// and stops when fn says so.
func TestScanReverse(t *testing.T) {
	db, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	b := db.NewBatch()
	for _, k := range []string{"p/a", "p/c", "p/e", "q/a", "o/z"} {
		if err := b.Set([]byte(k), []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	b.Close()
	b = db.NewBatch()
	defer b.Close()
	if err := b.Set([]byte("p/d"), []byte("p/d")); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete([]byte("p/e")); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := b.ScanReverse(ctx, []byte("p/"), func(k, _ []byte) error {
		got = append(got, string(k))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"p/d", "p/c", "p/a"}; !slices.Equal(got, want) {
		t.Fatalf("reverse scan %q, want %q", got, want)
	}
	stop := errors.New("stop")
	got = nil
	err = b.ScanReverse(ctx, []byte("p/"), func(k, _ []byte) error {
		got = append(got, string(k))
		return stop
	})
	if !errors.Is(err, stop) || !slices.Equal(got, []string{"p/d"}) {
		t.Fatalf("stopped scan: %q, %v", got, err)
	}
}
