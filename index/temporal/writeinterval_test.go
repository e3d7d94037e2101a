package temporal

import (
	"errors"
	"testing"
	"time"

	"github.com/memor-db/memor/internal/golden"
	"github.com/memor-db/memor/kv/kvtest"
)

// TestWriteIntervalEqualsPut: WriteInterval writes, byte for byte, what Put
// writes, for open and closed intervals, and refuses what Put refuses.
func TestWriteIntervalEqualsPut(t *testing.T) {
	prefix := []byte("u/t")
	t0 := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	ivs := []Interval{
		{ValidFrom: t0, RecordedAt: t0},
		{ValidFrom: t0, ValidTo: t0.Add(time.Hour), RecordedAt: t0.Add(time.Minute), ExpiredAt: t0.Add(2 * time.Minute)},
		{RecordedAt: t0},
		{ValidFrom: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), RecordedAt: t0},
	}
	got, want := &golden.Recorder{W: kvtest.Map{}}, &golden.Recorder{W: kvtest.Map{}}
	ix := New(prefix)
	for i, iv := range ivs {
		errPut := ix.Put(want, uint32(i), iv)
		errWrite := WriteInterval(got, prefix, uint32(i), iv)
		if (errPut == nil) != (errWrite == nil) {
			t.Fatalf("interval %d: Put %v, WriteInterval %v", i, errPut, errWrite)
		}
	}
	if got.Log() != want.Log() {
		t.Fatalf("WriteInterval wrote\n%s\nPut wrote\n%s", got.Log(), want.Log())
	}
	if err := WriteInterval(nil, prefix, 1, ivs[0]); !errors.Is(err, ErrNilWriter) {
		t.Fatalf("nil writer: %v", err)
	}
}
