// Package kv owns memor's use of Pebble: the byte layout of every key, batches
// that commit atomically, bounded iteration, and the on-disk format version.
//
// # Key layout
//
// Every key starts with a one-byte keyspace tag. The tags below are part of
// the file format; do not change or reuse them.
//
//	'M' name                          global metadata (format version, clock,
//	                                  the format an upgrade started from)
//	'U' esc(user)                     user registry (formats 1–2; users are now
//	                                  found by their keys, see [DB.Users])
//	'J' esc(predicate)                cached judge verdicts (formats 1–4; now
//	                                  per user, under [SubJudge])
//	'u' esc(user) sub ...             everything owned by one user
//
// Nothing derived from what a user said is stored outside the user's
// keyspace (a judge verdict names a predicate an extractor made from the
// user's words), so that Forget's one range deletion removes all of it and
// one user's data never decides another's.
//
// Inside a user's keyspace the next byte is a sub-tag ([Sub]) naming what
// follows. The engine and the index packages own the layout after the
// sub-tag; they build it with the Append helpers of this package. The
// root package's layout.go documents every root key and record byte by
// byte, the index packages their own keys in their doc.go.
//
// # Component encoding
//
// Variable-length components (user IDs, subjects, predicates, objects) are
// escaped so that the encoding is order-preserving and prefix-free: every
// 0x00 byte becomes 0x00 0xFF and the component ends with 0x00 0x01. So the
// encoded form of user "a" is never a prefix of the encoded form of "ab", "a/"
// or "a\x00", for any bytes at all, and one user's prefix scan can never
// reach another user's keys. Integers are fixed-width big-endian; instants
// are int64 Unix nanoseconds with the sign bit flipped so that they sort in
// time order ([AppendTime]).
//
// # Invariants
//
//  1. A user's data lives only under [UserRoot](user); Forget is one
//     range deletion of [PrefixEnd] bounds.
//  2. A [Batch] or a [Table] commits all of its writes or none of them.
//     A [Table] (the bulk loader's output: a new user's large first write)
//     is write-only: it keeps its writes in an append-only log, sorted once
//     at commit, and commits as one sorted table ingested straight into
//     the bottom level: atomic and durable like a synced commit, without
//     the log, the memtable, the flush or any compaction. A large batch
//     that only writes under a prefix the store holds nothing under (see
//     [Batch.SetLocal]) commits the same way.
//  3. Opening a store whose format version is newer than [FormatVersion]
//     fails with [ErrFormatTooNew] and writes nothing; opening an older
//     one raises its number and, in the same commit, records the old one
//     until the engine calls [DB.FinishUpgrade] ([DB.UpgradedFrom]).
//  4. Opening a store that existed (its format sidecar or any of Pebble's
//     files is in the folder) but is damaged so that it would read as
//     empty or as less than it held — a MANIFEST that is missing, short or
//     fails a checksum, missing markers or tables, no format version, or a
//     recovery that ends below the writes recorded as durable — fails
//     with [ErrCorrupt] and changes no file: the check runs before Pebble
//     opens the folder for writing.
//  5. A write the file system fails is [ErrStorage], never a panic. A
//     failure inside Pebble (the log, a flush, the MANIFEST) is latched:
//     every later write returns it at once, and after a failure of the
//     log every read too, until the store is reopened (see failure in
//     fail.go for what Pebble does that makes this necessary).
//  6. With [Options.Encryption], no file Pebble writes holds a plain byte
//     of a key or value: each is encrypted under its own key, sealed
//     under the KEK in its header ([Encryption]); a store opened without
//     its KEK fails with [ErrEncrypted] or [ErrWrongKEK] before Pebble
//     reads a file.
//
// # Concurrency
//
// A [DB] is safe for concurrent use. A [Batch] is not: one goroutine builds
// and commits it. Each Scan of a DB reads one consistent view; a read
// that spans several scans or lookups reads a [Snapshot] ([DB.Snapshot],
// [DB.View]), which DB, Batch and Snapshot all serve as a [Reader].
package kv
