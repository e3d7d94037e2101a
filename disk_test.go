package memor_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memor-db/memor"
)

// mountTmpfs mounts a tmpfs of size (such as "20m") on a new folder and
// returns it; the test is skipped unless it runs as root on Linux.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs (a full disk for real)")
	}
	if _, err := exec.LookPath("mount"); err != nil {
		t.Skip("no mount command")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (%v: %s)", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

// fillDisk writes a file into dir until the file system has about keep
// bytes left and returns its path.
func fillDisk(t *testing.T, dir string, keep int64) string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for n := free - keep; n > 0; n -= int64(len(buf)) {
		if _, err := f.Write(buf[:min(int64(len(buf)), n)]); err != nil {
			break
		}
	}
	f.Close()
	return path
}

// within runs f, failing the test if it panics or takes longer than d.
func within(t *testing.T, d time.Duration, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("PANIC: %v", r)
			}
		}()
		done <- f()
	}()
	select {
	case err := <-done:
		if err != nil && strings.HasPrefix(err.Error(), "PANIC") {
			t.Fatalf("%s panicked: %v", what, err)
		}
		return err
	case <-time.After(d):
		t.Fatalf("%s still running after %v", what, d)
		return nil
	}
}

// TestFullDisk fills a real (tmpfs) disk during writes through the
// library: every write either succeeds or fails with ErrStorage, none
// panics or hangs; once one failed, every later write fails promptly with
// ErrStorage, even after space is freed; Freshness never counts an episode
// that was not acknowledged; Close returns; and the reopened store passes
// Check and holds every acknowledged episode.
func TestFullDisk(t *testing.T) {
	t.Parallel()
	dir := mountTmpfs(t, "20m")
	store := filepath.Join(dir, "store")
	ctx := context.Background()
	e, err := memor.Open(store, memor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	filler := fillDisk(t, dir, 3<<20)
	text := strings.Repeat("I live in Paris and my sister Ana works at the museum. ", 900) // ~50 KB
	acked := 0
	var failure error
	start := time.Now()
	for i := 0; failure == nil && time.Since(start) < 30*time.Second; i++ {
		var err error
		switch i % 3 {
		case 0:
			err = within(t, 10*time.Second, "Add", func() error {
				_, err := e.Add(ctx, "u", fmt.Sprintf("%d %s", i, text))
				return err
			})
		case 1:
			err = within(t, 10*time.Second, "Add Sync", func() error {
				_, err := e.Add(ctx, "u", fmt.Sprintf("%d %s", i, text), memor.Sync())
				return err
			})
		case 2:
			err = within(t, 10*time.Second, "Assert", func() error {
				_, err := e.Assert(ctx, "u", memor.FactInput{Subject: "user", Predicate: "note", Object: fmt.Sprintf("%d %s", i, text[:2000])})
				return err
			})
		}
		switch {
		case err == nil:
			acked++
		case errors.Is(err, memor.ErrStorage):
			failure = err
		default:
			t.Fatalf("write %d: %v, want nil or ErrStorage", i, err)
		}
	}
	if failure == nil {
		t.Fatalf("%d writes of 50 KB on a 3 MB disk all succeeded", acked)
	}
	t.Logf("%d writes acknowledged, then: %v", acked, failure)
	if !strings.Contains(failure.Error(), "no space left") {
		t.Errorf("the error does not name its cause: %v", failure)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// Space is back; the store still refuses writes, promptly.
	for i := range 3 {
		t0 := time.Now()
		err := within(t, 5*time.Second, "Add after the failure", func() error {
			_, err := e.Add(ctx, "u", "I moved to Rome.", memor.Sync())
			return err
		})
		if !errors.Is(err, memor.ErrStorage) {
			t.Errorf("write %d after the failure: %v, want ErrStorage", i, err)
		}
		if d := time.Since(t0); d > time.Second {
			t.Errorf("write %d after the failure took %v", i, d)
		}
	}
	err = within(t, 5*time.Second, "Freshness", func() error {
		f, err := e.Freshness(ctx, "u")
		if err == nil && f.Latest > uint64(acked) {
			return fmt.Errorf("freshness counts %d episodes, %d were acknowledged", f.Latest, acked)
		}
		return err
	})
	if err != nil && !errors.Is(err, memor.ErrStorage) {
		t.Error(err)
	}
	if err := within(t, 10*time.Second, "Close", e.Close); err != nil && !errors.Is(err, memor.ErrStorage) {
		t.Errorf("Close: %v", err)
	}
	// Opening needs room too: on a full disk it is ErrStorage, not a
	// damaged store.
	filler = fillDisk(t, dir, 0)
	if e, err := memor.Open(store, memor.Options{}); err == nil {
		e.Close()
		t.Log("Open on a full disk succeeded")
	} else if !errors.Is(err, memor.ErrStorage) || errors.Is(err, memor.ErrCorrupt) {
		t.Errorf("Open on a full disk: %v, want ErrStorage", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// The abandoned Open finishes once there is room, and lets go of the
	// store.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		e, err = memor.Open(store, memor.Options{})
		if !errors.Is(err, memor.ErrLocked) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("reopen with space: %v", err)
	}
	defer e.Close()
	if err := e.Check(ctx); err != nil {
		t.Errorf("Check after reopen: %v", err)
	}
	eps, err := e.Episodes(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	// The write that failed may have reached the file before its sync
	// failed: it may or may not be there, whole. Nothing after it is.
	if len(eps) < acked || len(eps) > acked+1 {
		t.Errorf("%d episodes after reopen, %d acknowledged", len(eps), acked)
	}
	if _, err := e.Add(ctx, "u", "I moved to Rome.", memor.Sync()); err != nil {
		t.Errorf("write after reopen: %v", err)
	}
}
