package kv

import (
	"context"
	"errors"

	"github.com/cockroachdb/pebble/v2"
)

// Snapshot is a read-only view of the store as it was at one instant: its
// reads see every write committed before [DB.Snapshot] returned and none
// committed after.
//
// A read that spans several scans or lookups must read one Snapshot.
// Through the DB itself, each Scan is one consistent view (a Pebble
// iterator reads at one sequence number), but two scans are two views: a
// batch that moves a key from one keyspace to another (a version from
// live to history) and commits between them shows the key in both, or in
// neither.
//
// A Snapshot costs a lock and a list insertion to take and to close (well
// under a microsecond); while it is open, compactions keep the versions
// of keys it may read, so close it when the read is done. Reads through
// one Snapshot may run concurrently.
type Snapshot struct {
	s    *pebble.Snapshot
	fail *failure
}

var _ Reader = (*Snapshot)(nil)

// Snapshot returns a view of the store as it is now. Close it after the
// reads.
func (db *DB) Snapshot() *Snapshot {
	return &Snapshot{s: db.p.NewSnapshot(), fail: db.fail}
}

// View runs fn on a Snapshot taken now and closes it after fn returns.
func (db *DB) View(fn func(r *Snapshot) error) error {
	s := db.Snapshot()
	err := fn(s)
	return errors.Join(err, s.Close())
}

// Get returns a copy of the value at key in the snapshot, or ErrNotFound.
func (s *Snapshot) Get(key []byte) ([]byte, error) {
	if s.s == nil {
		return nil, ErrClosed
	}
	// After a failure of the log, what Pebble serves may hold writes
	// that were never acknowledged (see failure).
	if err := s.fail.readErr(); err != nil {
		return nil, err
	}
	return getCopy(s.s, key)
}

// Scan is [DB.Scan] over the snapshot.
func (s *Snapshot) Scan(ctx context.Context, prefix []byte, fn func(k, v []byte) error) error {
	return s.ScanRange(ctx, prefix, PrefixEnd(prefix), fn)
}

// ScanRange is [DB.ScanRange] over the snapshot.
func (s *Snapshot) ScanRange(ctx context.Context, lo, hi []byte, fn func(k, v []byte) error) error {
	if s.s == nil {
		return ErrClosed
	}
	if err := s.fail.readErr(); err != nil {
		return err
	}
	return scan(ctx, s.s.NewIter, lo, hi, fn)
}

// Close releases the snapshot. Reads after Close, and a second Close,
// return ErrClosed.
func (s *Snapshot) Close() error {
	if s.s == nil {
		return ErrClosed
	}
	err := s.s.Close()
	s.s = nil
	return err
}
