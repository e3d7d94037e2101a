package kv

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// syncedName is a sidecar holding a sequence number below which every
// write of the store is known to be durable: the store's sequence number
// at the last Close (with the size of its MANIFEST then, see durable),
// or, while it is open, that of the last synced commit,
// recorded in the background at most once per [syncedEvery] (so it costs
// two syncs a second under load, none per commit; a commit already costs
// one). Open refuses a store that recovers to a lower sequence number (see
// checkReadOnly): Pebble takes a damaged record in its last write-ahead
// log for the torn end of the log and drops every record after it, and
// this is how memor notices.
//
// It does not see the loss of writes made in the last syncedEvery before a
// crash (or since Open, for a store that has not been written since).
const syncedName = "MEMOR_SYNCED"

// syncedEvery is how often an open store records its synced sequence
// number (when it has changed).
const syncedEvery = time.Second

// syncedSeq tracks and records the synced sequence number of an open DB.
type syncedSeq struct {
	fs    vfs.FS
	dir   string
	every time.Duration
	log   quietLogger
	max   atomic.Uint64
	wake  chan struct{}
	stop  chan struct{}
	done  chan struct{}
}

func startSynced(fs vfs.FS, dir string, every time.Duration, log quietLogger) *syncedSeq {
	s := &syncedSeq{fs: fs, dir: dir, every: every, log: log,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

// advance notes that every write below seq is durable.
func (s *syncedSeq) advance(seq uint64) {
	for {
		cur := s.max.Load()
		if seq <= cur {
			return
		}
		if s.max.CompareAndSwap(cur, seq) {
			break
		}
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *syncedSeq) run() {
	defer close(s.done)
	var written uint64
	for {
		select {
		case <-s.stop:
			return
		case <-s.wake:
		}
		if v := s.max.Load(); v > written {
			if err := writeSynced(s.fs, s.dir, durable{seq: v}); err != nil {
				s.log.Errorf("%v", err)
			} else {
				written = v
			}
		}
		select {
		case <-s.stop:
			return
		case <-time.After(s.every):
		}
	}
}

// close stops the recording; a write in progress finishes first.
func (s *syncedSeq) close() {
	close(s.stop)
	<-s.done
}

// durable is what the synced sidecar records.
type durable struct {
	// seq: every write below it is durable.
	seq uint64
	// manifest and size: the current MANIFEST and its size, recorded by
	// Close (Pebble appends to a MANIFEST while the store is open and
	// starts a new one at every open, so a closed store's MANIFEST must be
	// this long). Empty while the store is open.
	manifest string
	size     int64
}

// readSynced reads the synced sidecar; ok is false if there is none. A
// damaged one is ErrCorrupt.
func readSynced(fs vfs.FS, dir string) (d durable, ok bool, err error) {
	f, err := fs.Open(fs.PathJoin(dir, syncedName))
	if errors.Is(err, os.ErrNotExist) {
		return d, false, nil
	}
	if err != nil {
		return d, false, fmt.Errorf("kv: read %s: %w", syncedName, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 512))
	if err != nil {
		return d, false, fmt.Errorf("kv: read %s: %w", syncedName, err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	bad := len(lines) < 2 || len(lines) > 3 || lines[len(lines)-1] != ""
	if !bad {
		_, err := fmt.Sscanf(lines[0], "memor synced to sequence %d\n", &d.seq)
		bad = err != nil
	}
	if !bad && len(lines) == 3 {
		_, err := fmt.Sscanf(lines[1], "manifest %s %d\n", &d.manifest, &d.size)
		bad = err != nil || !strings.HasPrefix(d.manifest, "MANIFEST-") || d.size <= 0
	}
	if bad {
		return durable{}, false, fmt.Errorf("%w: %s: %q", ErrCorrupt, syncedName, b)
	}
	return d, true, nil
}

// writeSynced records d in the synced sidecar, durably: written to a
// temporary file, synced, renamed over the sidecar, the folder synced.
func writeSynced(fs vfs.FS, dir string, d durable) error {
	tmp := fs.PathJoin(dir, syncedName+".tmp")
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("kv: write %s: %w", syncedName, err)
	}
	text := fmt.Sprintf("memor synced to sequence %d\n", d.seq)
	if d.manifest != "" {
		text += fmt.Sprintf("manifest %s %d\n", d.manifest, d.size)
	}
	_, err = io.WriteString(f, text)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, fs.PathJoin(dir, syncedName))
	}
	if err == nil {
		err = syncDir(fs, dir)
	}
	if err != nil {
		return fmt.Errorf("kv: write %s: %w", syncedName, err)
	}
	return nil
}

// closedDurable is what a store closed at sequence number seq records:
// seq, and its current MANIFEST and size.
func closedDurable(fs vfs.FS, dir string, seq uint64) (durable, error) {
	d := durable{seq: seq}
	desc, err := pebble.Peek(dir, fs)
	if err != nil {
		return d, fmt.Errorf("kv: %w", err)
	}
	if !desc.Exists {
		return d, nil
	}
	fi, err := fs.Stat(desc.ManifestFilename)
	if err != nil {
		return d, fmt.Errorf("kv: %w", err)
	}
	d.manifest, d.size = fs.PathBase(desc.ManifestFilename), fi.Size()
	return d, nil
}

func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
