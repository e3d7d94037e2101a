package kv

import (
	"context"
	"errors"
	"testing"
)

// moveKey commits one batch moving key k from prefix from/ to prefix to/.
func moveKey(t *testing.T, db *DB, from, to, k string) {
	t.Helper()
	b := db.NewBatch()
	defer b.Close()
	if err := b.Delete([]byte(from + k)); err != nil {
		t.Fatal(err)
	}
	if err := b.Set([]byte(to+k), []byte(k)); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
}

// scanAll lists the keys of r under each prefix, one scan per prefix,
// calling between after the first scan.
func scanAll(t *testing.T, r Reader, between func(), prefixes ...string) []string {
	t.Helper()
	var out []string
	for i, p := range prefixes {
		if i == 1 {
			between()
		}
		err := r.Scan(context.Background(), []byte(p), func(k, _ []byte) error {
			out = append(out, string(k))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestSnapshotIsOneView: two scans of the store around a commit that moves
// a key between their prefixes see the key twice; two scans of a snapshot
// taken before the commit see it once, where it was, and Get agrees.
func TestSnapshotIsOneView(t *testing.T) {
	t.Parallel()
	db := storeWith(t, map[string]string{"live/a": "a", "live/b": "b"})
	got := scanAll(t, db, func() { moveKey(t, db, "live/", "hist/", "a") }, "live/", "hist/")
	if len(got) != 3 {
		t.Fatalf("two scans of the store: %q; the test means to show the move seen twice", got)
	}

	s := db.Snapshot()
	got = scanAll(t, s, func() { moveKey(t, db, "live/", "hist/", "b") }, "live/", "hist/")
	if want := []string{"live/b", "hist/a"}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("two scans of one snapshot: %q, want %q", got, want)
	}
	if v, err := s.Get([]byte("live/b")); err != nil || string(v) != "b" {
		t.Errorf("snapshot Get(live/b) = %q, %v; want the value before the move", v, err)
	}
	if _, err := s.Get([]byte("hist/b")); !errors.Is(err, ErrNotFound) {
		t.Errorf("snapshot Get(hist/b) = %v, want ErrNotFound", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get([]byte("live/b")); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close: %v, want ErrClosed", err)
	}
	if err := s.Scan(context.Background(), []byte("live/"), func(_, _ []byte) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Scan after Close: %v, want ErrClosed", err)
	}
	if err := s.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}

	// View closes its snapshot (Pebble's Close reports a leaked one) and
	// returns fn's error.
	stop := errors.New("stop")
	if err := db.View(func(r *Snapshot) error {
		if _, err := r.Get([]byte("hist/b")); err != nil {
			return err
		}
		return stop
	}); !errors.Is(err, stop) {
		t.Errorf("View: %v, want fn's error", err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("Close after View: %v", err)
	}
}
