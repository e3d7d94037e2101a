package kv

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// syncedName is a sidecar holding a sequence number below which every
// write of the store is known to be durable: the store's sequence number
// at the last Close, or, while it is open, that of the last synced commit,
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
			if err := writeSynced(s.fs, s.dir, v); err != nil {
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

// readSynced reads the synced sidecar; ok is false if there is none. A
// damaged one is ErrCorrupt.
func readSynced(fs vfs.FS, dir string) (seq uint64, ok bool, err error) {
	f, err := fs.Open(fs.PathJoin(dir, syncedName))
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("kv: read %s: %w", syncedName, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return 0, false, fmt.Errorf("kv: read %s: %w", syncedName, err)
	}
	if _, err := fmt.Sscanf(string(b), "memor synced to sequence %d\n", &seq); err != nil {
		return 0, false, fmt.Errorf("%w: %s: %q", ErrCorrupt, syncedName, b)
	}
	return seq, true, nil
}

// writeSynced records seq in the synced sidecar, durably: written to a
// temporary file, synced, renamed over the sidecar, the folder synced.
func writeSynced(fs vfs.FS, dir string, seq uint64) error {
	tmp := fs.PathJoin(dir, syncedName+".tmp")
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("kv: write %s: %w", syncedName, err)
	}
	_, err = fmt.Fprintf(f, "memor synced to sequence %d\n", seq)
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
