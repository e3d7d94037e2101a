// Package temporal is memor's bitemporal interval index: for one user it
// answers "which fact versions are visible at (validAt, knownAt)" as a
// roaring bitmap of doc IDs that the engine can AND with other candidate
// sets (BM25 postings, vector hits, graph reach).
//
// # Visibility
//
// Each version carries an [Interval] on two axes (DESIGN §2). A version is
// visible at (validAt, knownAt) iff
//
//	RecordedAt ≤ knownAt < ExpiredAt  and  ValidFrom ≤ validAt < ValidTo
//
// where a zero ValidTo or ExpiredAt means +∞ (still true, still believed) and
// a zero ValidFrom or RecordedAt means −∞. An interval whose end is not after
// its start is empty and never visible.
//
// # How queries are answered
//
// Each axis is a set of half-open spans; the versions "alive" at instant t
// are the stabbing set of t. The index keeps, per axis, the span starts and
// ends sorted by instant and a roaring-bitmap snapshot of the stabbing set
// every ~1024 events. A stab at t clones (or ANDs against) the nearest
// snapshot at or before t and replays the few events between that snapshot
// and t, so its cost does not grow with the number of versions outside the
// gap. [Index.Visible] is the transaction-time stab ANDed with the valid-time
// stab. [Index.Current] starts from the exact set of versions whose
// ExpiredAt is open, maintained on every write, and ANDs it with the
// valid-time stab.
//
// The snapshot structure is immutable once built. Writes go to a small
// delta (checked by brute force at query time) and mark the superseded base
// entries stale; the structure is rebuilt by the first query that finds the
// delta larger than 1/32 of the index (and than 256 docs), so bulk writes
// without queries never pay for a rebuild. A rebuild merges the sorted
// events of the old structure (minus the stale docs) with the sorted delta
// in linear time and re-sweeps the snapshots.
//
// # Image
//
// [Index.AppendImage] serialises the index in its built form (the docs'
// intervals, each axis's spans in order and its snapshots) and
// [LoadImage] reads it back without sorting or sweeping: the index a
// [Load] of the same records builds. See image.go for the layout.
//
// # Key layout
//
// All keys start with the prefix given to [New] or [Load]
// (kv.UserKey(user, kv.SubTemporal) in the engine):
//
//	prefix uint32(doc)  →  0x01 int64(ValidFrom) int64(ValidTo) int64(RecordedAt) int64(ExpiredAt)
//
// Integers are big-endian (kv.AppendUint32, kv.AppendInt64). Instants are
// Unix nanoseconds; a zero start is stored as math.MinInt64 and a zero (open)
// end as math.MaxInt64. The leading 0x01 is the value format version; it is
// part of the file format, do not change it.
//
// # Invariants
//
//  1. Every doc held in memory has exactly one key under the prefix, and the
//     value decodes to the same interval ([Index.Check] verifies this).
//  2. The open set holds exactly the docs whose ExpiredAt is open.
//  3. Every doc is either in the snapshot structure with its current
//     interval and not stale, or in the delta.
//
// # Memory
//
// [Index.Bytes] accounts for the heap the index holds, for the engine's
// index cache: an atomic load, kept current by each write (exactly for
// the pages, the delta and the buffers, by estimate for the roaring sets)
// and walked afresh by every load and rebuild, and by a write once the
// estimates since the last walk pass a quarter of it. An index loaded
// from an image holds the image while its snapshots are the image's
// (until the first rebuild). See account.go.
//
// # Concurrency
//
// An [Index] is safe for concurrent use. Returned bitmaps are fresh copies
// owned by the caller.
package temporal
