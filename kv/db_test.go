package kv

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// storeWith opens a store holding kvs, closed when the test ends.
func storeWith(t *testing.T, kvs map[string]string) *DB {
	t.Helper()
	db, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	b := db.NewBatch()
	defer b.Close()
	for k, v := range kvs {
		if err := b.Set([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestScanReverse: a reverse scan through a batch sees the committed keys
// and the batch's own writes and deletes, last first, within the prefix,
// and stops when fn says so.
func TestScanReverse(t *testing.T) {
	t.Parallel()
	db := storeWith(t, map[string]string{"p/a": "p/a", "p/c": "p/c", "p/e": "p/e", "q/a": "q/a", "o/z": "o/z"})
	ctx := context.Background()
	b := db.NewBatch()
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
	err := b.ScanReverse(ctx, []byte("p/"), func(k, _ []byte) error {
		got = append(got, string(k))
		return stop
	})
	if !errors.Is(err, stop) || !slices.Equal(got, []string{"p/d"}) {
		t.Fatalf("stopped scan: %q, %v", got, err)
	}
}

// TestSetLocal: under the local prefix a batch reads its own writes only
// (including empty values and its deletes); elsewhere it reads through to
// the store.
func TestSetLocal(t *testing.T) {
	t.Parallel()
	db := storeWith(t, map[string]string{"g/1": "stored", "q/x": "stored"})
	ctx := context.Background()
	b := db.NewBatch()
	defer b.Close()
	b.SetLocal([]byte("p/"))
	for k, v := range map[string]string{"p/a": "A", "p/empty": "", "p/gone": "G"} {
		if err := b.Set([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Delete([]byte("p/gone")); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"p/a": "A", "p/empty": "", "g/1": "stored"} {
		v, err := b.Get([]byte(k))
		if err != nil || string(v) != want {
			t.Errorf("Get(%s) = %q, %v; want %q", k, v, err, want)
		}
	}
	for _, k := range []string{"p/gone", "p/none"} {
		if _, err := b.Get([]byte(k)); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%s): %v, want ErrNotFound", k, err)
		}
	}
	var got []string
	if err := b.Scan(ctx, []byte("p/"), func(k, _ []byte) error {
		got = append(got, string(k))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"p/a", "p/empty"}; !slices.Equal(got, want) {
		t.Errorf("local scan %q, want %q", got, want)
	}
	got = nil
	if err := b.ScanRange(ctx, []byte("g/"), []byte("r/"), func(k, _ []byte) error {
		got = append(got, string(k))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"g/1", "p/a", "p/empty", "q/x"}; !slices.Equal(got, want) {
		t.Errorf("scan across the local prefix %q, want %q", got, want)
	}
}
