package kv

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// FormatVersion is the on-disk format this build writes. Bump it (and add a
// migration to [Open]) whenever the meaning of stored bytes changes.
//
//	1: the engine's records (claims, versions, decisions, episodes) in JSON.
//	2: records in binary (JSON ones still read); vectors in float16.
//	3: users are found by their keys; the registry ('U' keys) is no
//	   longer written (an older build would miss new users in Prune).
//	4: a mostly-zero vector is stored sparse (index/hnsw), which an
//	   older build cannot decode.
//	5: judge verdicts are kept per user ('u' user 'j' predicate); the
//	   engine moves the global 'J' keys of earlier formats at Open (an
//	   older build would ask the judge again and write global keys). And
//	   0 ns (1970-01-01T00:00:00Z) is an instant like any other; older
//	   builds folded a claim at it as "open" or "the zero time", so the
//	   engine rebuilds, once, every user of an older store whose claims
//	   hold it (see [DB.UpgradedFrom]).
//	6: an episode record may carry its speaker (a flag in the byte after
//	   its ops), which an older build reads as corruption. Nothing to
//	   migrate: records without a speaker are unchanged.
//	7: accept episodes (kind 4, trailer flag 4) and accepted claims (claim
//	   flag 4), and the decision reason "accepted" (Engine.Accept), which
//	   an older build reads as corruption. Nothing to migrate.
//	8: a store may be encrypted ([Options.Encryption]): then every file
//	   Pebble writes starts with a header holding its sealed key and is
//	   ciphertext after it (crypt.go), and MEMOR_FORMAT says "encrypted";
//	   an older build, which would read the ciphertext as corruption,
//	   refuses the number instead. Nothing to migrate: a plain store's
//	   files, keys and records are those of format 7.
//	9: an episode record may carry the idempotency key it was added
//	   under (trailer flag 8), and 'u' user 'k' key names that episode,
//	   which an older build reads as corruption (the flag) or does not
//	   know (the key). Nothing to migrate: records without a key are
//	   unchanged.
//	10: a user may have an index image ('u' user 'p', see image.go),
//	   valid only because every write under the keyspaces it copies
//	   deletes its head (image.go here); an older build would write
//	   without deleting it and leave a stale copy for this one to load.
//	   Nothing to migrate: a store without images is read as before.
//	11: an image holds BM25 as the index's own image (postings by term,
//	   index/bm25/image.go) instead of a copy of its records, under an
//	   image head of version 2. Nothing to migrate: a head of version 1
//	   is refused as outdated, and the next load replaces the image.
//	12: an episode's document map value may hold the episode's At and
//	   RecordedAt (flag 8 after its seq), so that a load does not read
//	   every episode for them; an older build would take them for the
//	   IDs of facts it stands on. Nothing to migrate: a value without
//	   the flag is read as before (the load reads the episode).
//	13: an image holds the vectors, intervals and graph as their
//	   indexes' own images too (index/hnsw, index/temporal and graph
//	   image.go), under an image head of version 5. Nothing to migrate: a head of
//	   another version is refused as outdated, and the next load
//	   replaces the image.
//	14: an image holds the document map as its in-memory arena too
//	   (docimage.go in the root package), under an image head of version
//	   6; a head may also be a claim (0x00 then a number) set while the
//	   image is built, which an older build would refuse as outdated
//	   (harmless) but which an older build's writes delete like a head.
//	   Nothing to migrate: a head of another version is refused as
//	   outdated, and the next load replaces the image.
//	15: an episode's document map value may hold the episode's speaker
//	   (flag 16 after its seq, the speaker after the times), so that a
//	   query ranks episodes without reading them and reads only those
//	   it serves; an older build would take it for the IDs of facts the
//	   episode stands on. Nothing to migrate: a value without the flag
//	   is read as before (the query reads the episode).
//	16: the image of a vector index with a graph holds its vectors as
//	   the index holds them (a sparse vector's non-zero components, as
//	   without a graph, where they were all dense), under an image head
//	   of version 7. Nothing to migrate: a head of another version is
//	   refused as outdated, and the next load replaces the image.
const FormatVersion uint32 = 16

// Errors returned by this package; match them with errors.Is.
var (
	ErrNotFound      = errors.New("kv: not found")
	ErrFormatTooNew  = errors.New("kv: store was written by a newer memor (format version too new)")
	ErrCorrupt       = errors.New("kv: store is corrupt")
	ErrClosed        = errors.New("kv: store is closed")
	ErrReadOnlyStore = errors.New("kv: store folder is not writable")
	ErrLocked        = errors.New("kv: store is in use by another process")
	// ErrStorage: the file system failed a write (a full disk, an I/O
	// error), so a write could not be made durable. It wraps the cause.
	ErrStorage = errors.New("kv: storage failed")
)

var formatKey = []byte{TagMeta, 'f', 'o', 'r', 'm', 'a', 't'}

// upgradeKey holds the format a store had before Open raised it, until
// the engine has finished upgrading what the raise alone does not
// ([DB.FinishUpgrade]).
var upgradeKey = []byte{TagMeta, 'u', 'p', 'g', 'r', 'a', 'd', 'e'}

// Options configures Open.
type Options struct {
	// NoSync makes commits return before the write-ahead log is synced.
	// Faster for bulk import; a crash may lose the last writes.
	NoSync bool
	// CacheSize is the block cache size in bytes (default 64 MiB).
	CacheSize int64
	// Logger receives Pebble's log lines at debug level; nil discards them.
	Logger *slog.Logger
	// IngestMinBytes is the size from which a [Table], or a batch under
	// a prefix empty in the store (see [Batch.SetLocal]), commits as an
	// ingested table; 0 means
	// [DefaultIngestMinBytes], a negative value never.
	IngestMinBytes int
	// syncedEvery overrides [syncedEvery] (tests).
	syncedEvery time.Duration
	// FS is the file system Pebble writes through; nil means the
	// operating system's (vfs.Default). Tests inject failures with it.
	// The folder itself (its creation, the format sidecar) is always
	// handled through the operating system.
	FS vfs.FS
	// Encryption, if set, encrypts every file of a new store, and is
	// needed to open one (see [Encryption]). Nil: the files are plain, as
	// in every store created without it. A store is encrypted from its
	// creation or never: ErrEncrypted, ErrNotEncrypted and ErrWrongKEK
	// refuse a mismatch.
	Encryption *Encryption
}

// DB is a Pebble store with memor's format. Safe for concurrent use.
type DB struct {
	p *pebble.DB
	// po and cacheSize reopen Pebble (rewriteManifestIfDirty).
	po        *pebble.Options
	cacheSize int64
	noSync    bool
	syncs     *syncCounts
	// Ingested tables (see Batch.commitAsTable).
	dir       string
	fs        vfs.FS
	tableOpts sstable.WriterOptions
	tables    atomic.Uint64 // names table files
	ingested  atomic.Uint64
	ingestMin int
	// synced records the synced sequence number (see syncedName).
	synced *syncedSeq
	// fail latches the first storage failure (see failure).
	fail *failure
	// writers run writes (see DB.write).
	writers *writers
	// encrypted: the store's files are (see Encryption).
	encrypted bool
}

// Open opens (creating if needed) the store in dir and checks its format.
func Open(dir string, o Options) (*DB, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("kv: create %s: %w", dir, err)
	}
	if err := probeWritable(dir); err != nil {
		return nil, err
	}
	fail := newFailure(o.Logger)
	lg := quietLogger{o.Logger, fail}
	counts := &syncCounts{}
	base := o.FS
	if base == nil {
		base = vfs.Default
	}
	var crypt *cryptFS
	if o.Encryption == nil && encryptAll {
		o.Encryption = &Encryption{KEK: testAllKEK}
	}
	if o.Encryption != nil {
		var err error
		if crypt, err = newCryptFS(base, o.Encryption); err != nil {
			return nil, err
		}
		base = crypt
	}
	po := &pebble.Options{
		Logger: lg,
		// Write-ahead logs are never recycled: a recycled log keeps the
		// bytes of deleted users until it is overwritten (see Scrub).
		FS: noRecycleFS{syncCountingFS{failFS{base, fail}, counts}},
		EventListener: &pebble.EventListener{
			// Pebble's default listener calls Fatalf; a corrupt table is an
			// error for the read that found it, not a crash.
			DataCorruption: func(info pebble.DataCorruptionInfo) {
				lg.Errorf("data corruption in %s: %v", info.Path, info.Details)
			},
			// A failed flush is retried forever, and writes wait for it
			// once the memtables are full: refuse them instead.
			FlushEnd: func(info pebble.FlushInfo) {
				if flushFailed(info.Err) {
					fail.set(fmt.Errorf("flush: %w", info.Err), false)
				}
			},
			BackgroundError: func(err error) {
				if fail.get() != nil {
					lg.Infof("background error: %v", err) // the failure is logged once
					return
				}
				lg.Errorf("background error: %v", err)
			},
		},
	}
	// Bloom filters on every level: most reads are point lookups (a
	// user's counters, a document's version, a claim) whose key is in one
	// level, and without a filter each Get searches every level's index
	// for it.
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	if o.CacheSize <= 0 {
		o.CacheSize = 64 << 20
	}
	c := pebble.NewCache(o.CacheSize)
	defer c.Unref()
	po.Cache = c
	// The format sidecar is read before Pebble touches the folder: a store
	// from a newer memor is refused with nothing written.
	fresh, noSidecar, err := checkSidecar(dir, crypt != nil)
	if err != nil {
		return nil, err
	}
	if crypt != nil {
		if err := crypt.checkHeaders(dir, noSidecar); err != nil {
			return nil, err
		}
	}
	po.EnsureDefaults()
	// A store that existed must read as it was before Pebble may write
	// or delete a file in it (see checkExisting).
	existed, err := checkExisting(dir, po.FS, po, fresh)
	if err != nil {
		return nil, err
	}
	po.ErrorIfNotExists = existed
	p, err := openPebble(dir, po)
	if err != nil {
		return nil, err
	}
	// Only now, holding Pebble's lock: another process with the store
	// open may be about to ingest its table files.
	if err := removeStaleTables(dir); err != nil {
		_ = p.Close()
		return nil, err
	}
	if o.IngestMinBytes == 0 {
		o.IngestMinBytes = DefaultIngestMinBytes
	}
	db := &DB{p: p, po: po, cacheSize: o.CacheSize, noSync: o.NoSync, syncs: counts, dir: dir, fs: po.FS,
		tableOpts: sstableWriterOptions(po, p), ingestMin: o.IngestMinBytes, fail: fail, writers: newWriters(),
		encrypted: crypt != nil}
	if err := db.checkFormat(); err != nil {
		_ = p.Close()
		return nil, err
	}
	// A process that scrubbed and then crashed before Close left a MANIFEST
	// that may name deleted data.
	if err := db.rewriteManifestIfDirty(); err != nil {
		if db.p != nil {
			_ = db.p.Close()
		}
		return nil, err
	}
	if err := writeSidecar(dir, db.encrypted); err != nil {
		_ = db.p.Close() // p itself, unless the rewrite reopened it
		return nil, err
	}
	if crypt != nil && crypt.prev != nil {
		if err := db.rotate(crypt); err != nil {
			if db.p != nil {
				_ = db.p.Close()
			}
			return nil, err
		}
	}
	if err := fail.get(); err != nil { // a write of Open's failed
		_ = db.Close()
		return nil, err
	}
	fail.opened.Store(true)
	if o.syncedEvery <= 0 {
		o.syncedEvery = syncedEvery
	}
	db.synced = startSynced(db.fs, dir, o.syncedEvery, lg)
	return db, nil
}

// sidecarName is a one-line file beside Pebble's files naming the memor
// format, readable without opening the store.
const sidecarName = "MEMOR_FORMAT"

// sidecarEncrypted is the sidecar's second line in an encrypted store.
const sidecarEncrypted = "encrypted"

// checkSidecar checks the format, and that the store is encrypted if and
// only if encrypted. A new encrypted store gets its sidecar now, before
// Pebble writes a file (fresh reports it): a plain Open of it then fails
// with ErrEncrypted. missing: the store has Pebble's files and no sidecar
// (a store of format 1, or a damaged one), whose files alone tell whether
// it is encrypted.
func checkSidecar(dir string, encrypted bool) (fresh, missing bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, sidecarName))
	if os.IsNotExist(err) {
		if !encrypted {
			return false, false, nil
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			return false, false, fmt.Errorf("kv: read %s: %w", dir, err)
		}
		if slices.ContainsFunc(ents, func(e os.DirEntry) bool { return hasPebbleData(e.Name()) }) {
			return false, true, nil
		}
		return true, false, writeSidecar(dir, true)
	}
	if err != nil {
		return false, false, fmt.Errorf("kv: read %s: %w", sidecarName, err)
	}
	var v uint32
	if _, err := fmt.Sscanf(string(b), "memor format %d", &v); err != nil {
		return false, false, fmt.Errorf("%w: %s: %q", ErrCorrupt, sidecarName, b)
	}
	if v > FormatVersion {
		return false, false, fmt.Errorf("%w: store has format %d, this build reads up to %d", ErrFormatTooNew, v, FormatVersion)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	isEnc := len(lines) > 1 && lines[1] == sidecarEncrypted
	switch {
	case isEnc && !encrypted:
		return false, false, fmt.Errorf("%w: %s", ErrEncrypted, dir)
	case !isEnc && encrypted:
		return false, false, fmt.Errorf("%w: %s", ErrNotEncrypted, dir)
	case isEnc:
		// A first Open that stopped after writing the sidecar: nothing
		// was stored.
		ents, err := os.ReadDir(dir)
		if err != nil {
			return false, false, fmt.Errorf("kv: read %s: %w", dir, err)
		}
		return !slices.ContainsFunc(ents, func(e os.DirEntry) bool { return hasPebbleData(e.Name()) }), false, nil
	}
	return false, false, nil
}

func sidecarText(v uint32, encrypted bool) string {
	if encrypted {
		return fmt.Sprintf("memor format %d\n%s\n", v, sidecarEncrypted)
	}
	return fmt.Sprintf("memor format %d\n", v)
}

func writeSidecar(dir string, encrypted bool) error {
	want := sidecarText(FormatVersion, encrypted)
	if b, err := os.ReadFile(filepath.Join(dir, sidecarName)); err == nil && string(b) == want {
		return nil
	}
	tmp := filepath.Join(dir, sidecarName+".tmp")
	if err := os.WriteFile(tmp, []byte(want), 0o644); err != nil {
		return fmt.Errorf("kv: write %s: %w", sidecarName, err)
	}
	return os.Rename(tmp, filepath.Join(dir, sidecarName))
}

// wrapErr marks Pebble's corruption errors with ErrCorrupt. A damaged
// table block names its file: Pebble joins the cause with a detail
// carrier whose text ("<corruption detail carrier>") says nothing to a
// person, so the message is the file and the cause instead.
func wrapErr(op string, err error) error {
	if info := pebble.ExtractDataCorruptionInfo(err); info != nil && info.Details != nil {
		return fmt.Errorf("%w: %s: file %s is damaged: %v", ErrCorrupt, op, info.Path, info.Details)
	}
	if pebble.IsCorruptionError(err) || errors.Is(err, pebble.ErrCorruption) {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, op, err)
	}
	return fmt.Errorf("kv: %s: %w", op, err)
}

// openPebble opens Pebble, turning its panics on corrupt files into errors.
func openPebble(dir string, po *pebble.Options) (p *pebble.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("%w: %v", ErrCorrupt, r)
		}
	}()
	p, err = openWatched(dir, po)
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) ||
		(err != nil && strings.Contains(err.Error(), "lock held by current process")) {
		return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
	}
	if errors.Is(err, ErrStorage) || ioError(err) {
		return nil, fmt.Errorf("%w: open %s: %w", ErrStorage, dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %v", ErrCorrupt, dir, err)
	}
	return p, nil
}

func probeWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".memor-probe-*")
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrReadOnlyStore, dir, err)
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}

func (db *DB) checkFormat() error {
	v, err := db.Get(formatKey)
	switch {
	case errors.Is(err, ErrNotFound):
		empty, err := db.isEmpty()
		if err != nil {
			return err
		}
		if !empty {
			return fmt.Errorf("%w: data present but no format version", ErrCorrupt)
		}
		return db.p.Set(formatKey, binary.BigEndian.AppendUint32(nil, FormatVersion), pebble.Sync)
	case err != nil:
		return err
	}
	if len(v) != 4 {
		return fmt.Errorf("%w: format version is %d bytes", ErrCorrupt, len(v))
	}
	got := binary.BigEndian.Uint32(v)
	if got > FormatVersion {
		return fmt.Errorf("%w: store has format %d, this build reads up to %d", ErrFormatTooNew, got, FormatVersion)
	}
	if got < FormatVersion {
		// Formats 1 to 5 differ in how records are encoded (the
		// engine's in JSON, then binary; vectors dense, then sparse when
		// mostly zero), in the user registry, in where judge verdicts
		// are kept (the engine moves them at Open, see
		// memor.upgradeJudgeVerdicts) and in what the engine must redo
		// (format 5), and this build reads them all: the store is
		// upgraded in place by raising its number, so that an older
		// build, which cannot read what is written from now on, refuses
		// it. The old number is kept, in the same commit, for the engine
		// to finish its part (UpgradedFrom); a crash before it has
		// leaves the key for the next Open.
		b := db.p.NewBatch()
		defer b.Close()
		from := got
		if v, err := db.Get(upgradeKey); err == nil && len(v) == 4 && binary.BigEndian.Uint32(v) < from {
			from = binary.BigEndian.Uint32(v)
		} else if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if err := b.Set(upgradeKey, binary.BigEndian.AppendUint32(nil, from), nil); err != nil {
			return err
		}
		if err := b.Set(formatKey, binary.BigEndian.AppendUint32(nil, FormatVersion), nil); err != nil {
			return err
		}
		return b.Commit(pebble.Sync)
	}
	return nil
}

// UpgradedFrom returns the format this store had before an Open of this
// build raised it, while the engine has not called FinishUpgrade; 0 when
// there is nothing left to upgrade.
func (db *DB) UpgradedFrom() (uint32, error) {
	v, err := db.Get(upgradeKey)
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(v) != 4 {
		return 0, fmt.Errorf("%w: upgrade marker is %d bytes", ErrCorrupt, len(v))
	}
	return binary.BigEndian.Uint32(v), nil
}

// FinishUpgrade records that the engine has upgraded what the store's
// older format needed: UpgradedFrom returns 0 from now on.
func (db *DB) FinishUpgrade() error {
	if err := db.p.Delete(upgradeKey, pebble.Sync); err != nil {
		return wrapErr("finish upgrade", err)
	}
	return nil
}

func (db *DB) isEmpty() (bool, error) {
	it, err := db.p.NewIter(nil)
	if err != nil {
		return false, err
	}
	defer it.Close()
	return !it.First(), it.Error()
}

// SetFormatVersionForTest overwrites the stored format version (key and
// sidecar). Tests use it to fake a store written by a newer build.
func (db *DB) SetFormatVersionForTest(dir string, v uint32) error {
	if err := os.WriteFile(filepath.Join(dir, sidecarName), []byte(sidecarText(v, db.encrypted)), 0o644); err != nil {
		return err
	}
	return db.p.Set(formatKey, binary.BigEndian.AppendUint32(nil, v), pebble.Sync)
}

// Close flushes and closes the store.
//
// If Scrub ran since the store was opened, Close also rewrites Pebble's
// MANIFEST (see Scrub): it opens the store twice more, which takes a few
// milliseconds per thousand table files.
func (db *DB) Close() error {
	if db.p == nil {
		return nil // a failed rewrite closed it
	}
	if db.synced != nil {
		db.synced.close()
		db.synced = nil
	}
	db.writers.stop()
	if db.fail.get() != nil {
		return db.closeFailed()
	}
	if err := db.rewriteManifestIfDirty(); err != nil {
		if db.p != nil {
			_ = db.p.Close()
			db.p = nil
		}
		return err
	}
	seq := visibleSeq(db.p)
	err := db.p.Close()
	db.p = nil
	if err == nil {
		// Every write is durable now; the next Open checks that recovery
		// reaches seq and that the MANIFEST is whole (checkExisting).
		var d durable
		if d, err = closedDurable(db.fs, db.dir, seq); err == nil {
			err = writeSynced(db.fs, db.dir, d)
		}
	}
	return err
}

// manifestKey is present while Pebble's MANIFEST may still name data that
// Scrub was called to erase.
var manifestKey = []byte{TagMeta, 'm', 'a', 'n', 'i', 'f', 'e', 's', 't'}

// rewriteManifestIfDirty rewrites the MANIFEST if manifestKey says it may
// name erased data. Pebble's MANIFEST is a log of version edits: every table
// ever added is recorded with its smallest and largest key, and memor's
// keys hold user names and values, so a forgotten user's keys stay in it
// after their tables are compacted away. Pebble starts a new MANIFEST (a
// snapshot of the live tables) at every open and deletes all obsolete ones
// but the newest: opening twice leaves no MANIFEST older than the call.
// On failure the store is closed (db.p is nil).
func (db *DB) rewriteManifestIfDirty() error {
	if _, closer, err := db.p.Get(manifestKey); errors.Is(err, pebble.ErrNotFound) {
		return nil
	} else if err != nil {
		return wrapErr("get", err)
	} else {
		_ = closer.Close()
	}
	for range 2 {
		if err := db.p.Close(); err != nil {
			db.p = nil
			return fmt.Errorf("kv: rewrite manifest: %w", err)
		}
		c := pebble.NewCache(db.cacheSize)
		db.po.Cache = c
		p, err := openPebble(db.dir, db.po)
		c.Unref()
		db.p = p
		if err != nil {
			return fmt.Errorf("kv: rewrite manifest: %w", err)
		}
	}
	if err := db.p.Delete(manifestKey, pebble.Sync); err != nil {
		return fmt.Errorf("kv: rewrite manifest: %w", err)
	}
	return nil
}

// Get returns a copy of the value at key, or ErrNotFound.
func (db *DB) Get(key []byte) ([]byte, error) {
	if err := db.fail.readErr(); err != nil {
		return nil, err
	}
	return getCopy(db.p, key)
}

// getCopy returns a copy of the value at key in r (the store or one of its
// snapshots), or ErrNotFound.
func getCopy(r pebble.Reader, key []byte) ([]byte, error) {
	v, c, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, wrapErr("get", err)
	}
	out := append([]byte(nil), v...)
	return out, c.Close()
}

// Scan calls fn for every key with the given prefix, in key order. k and v
// are valid only during the call. Returning an error from fn stops the scan
// and returns that error. ctx is checked every 256 keys.
func (db *DB) Scan(ctx context.Context, prefix []byte, fn func(k, v []byte) error) error {
	if err := db.fail.readErr(); err != nil {
		return err
	}
	return scan(ctx, db.p.NewIter, prefix, PrefixEnd(prefix), fn)
}

// ScanRange is Scan over [lo, hi).
func (db *DB) ScanRange(ctx context.Context, lo, hi []byte, fn func(k, v []byte) error) error {
	if err := db.fail.readErr(); err != nil {
		return err
	}
	return scan(ctx, db.p.NewIter, lo, hi, fn)
}

func scan(ctx context.Context, newIter func(*pebble.IterOptions) (*pebble.Iterator, error), lo, hi []byte, fn func(k, v []byte) error) error {
	return scanDir(ctx, newIter, lo, hi, false, fn)
}

// scanDir calls fn for every key in [lo, hi), first key first or, reverse,
// last key first.
func scanDir(ctx context.Context, newIter func(*pebble.IterOptions) (*pebble.Iterator, error), lo, hi []byte, reverse bool, fn func(k, v []byte) error) error {
	it, err := newIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return wrapErr("iter", err)
	}
	first, next := it.First, it.Next
	if reverse {
		first, next = it.Last, it.Prev
	}
	n := 0
	for ok := first(); ok; ok = next() {
		if n++; n&255 == 0 {
			if err := ctx.Err(); err != nil {
				_ = it.Close()
				return err
			}
		}
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return wrapErr("value", err)
		}
		if err := fn(it.Key(), v); err != nil {
			_ = it.Close()
			return err
		}
	}
	if err := it.Error(); err != nil {
		_ = it.Close()
		return wrapErr("iter", err)
	}
	return it.Close()
}

// NewBatch returns an indexed batch: reads through it see its own writes
// on top of the committed store.
func (db *DB) NewBatch() *Batch { return &Batch{b: db.p.NewIndexedBatch(), db: db} }

// NewBatchSized is NewBatch with room for about size bytes of writes, so
// that a large batch is not copied each time it outgrows its buffer.
func (db *DB) NewBatchSized(size int) *Batch {
	if size <= 0 {
		return db.NewBatch()
	}
	return &Batch{b: db.p.NewIndexedBatchWithSize(size), db: db}
}

// DeleteRange deletes [lo, hi) durably.
func (db *DB) DeleteRange(lo, hi []byte) error {
	b := db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(lo, hi); err != nil {
		return err
	}
	return b.commit(pebble.Sync)
}

// Compact forces a compaction of [lo, hi) so that deleted data is dropped
// from table files. It flushes the memtable first.
func (db *DB) Compact(ctx context.Context, lo, hi []byte) error {
	if err := db.Flush(); err != nil {
		return err
	}
	// A failed compaction loses nothing and is not latched.
	if err := db.p.Compact(ctx, lo, hi, true); err != nil {
		if ctx.Err() == nil && ioError(err) {
			return fmt.Errorf("%w: compact: %w", ErrStorage, err)
		}
		return fmt.Errorf("kv: compact: %w", err)
	}
	return nil
}

// Scrub makes deleted data leave the write-ahead logs: it rotates the log
// enough times that every log written before the call is obsolete, and
// obsolete logs are deleted rather than recycled (noRecycleFS). Call it
// after a range deletion and its compaction (Forget).
//
// Pebble's MANIFEST still names the deleted keys (as bounds of the tables
// they were in) until it is rewritten, which only an open of the store
// does: Scrub marks the store so that Close rewrites it, or, after a crash,
// the next Open.
func (db *DB) Scrub() error {
	if err := db.write("scrub", nil, func() error { return db.p.Set(manifestKey, []byte{1}, pebble.Sync) }); err != nil {
		return err
	}
	// Pebble keeps up to MemTableStopWritesThreshold+1 obsolete logs for
	// reuse; each rotation consumes (and, here, deletes) one of them.
	for i := range 6 {
		if err := db.write("scrub", nil, func() error { return db.p.Set(scrubKey, []byte{byte(i)}, pebble.Sync) }); err != nil {
			return err
		}
		if err := db.Flush(); err != nil {
			return err
		}
	}
	return nil
}

var scrubKey = []byte{TagMeta, 's', 'c', 'r', 'u', 'b'}

// noRecycleFS deletes a log instead of renaming it for reuse.
type noRecycleFS struct{ vfs.FS }

// ReuseForWrite removes oldname and creates newname: the contract allows
// it, and it keeps no stale bytes around.
func (fs noRecycleFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if err := fs.FS.Remove(oldname); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	return fs.FS.Create(newname, category)
}

// Flush writes the memtable to table files.
func (db *DB) Flush() error { return db.write("flush", nil, db.p.Flush) }

// SyncWAL makes every previously committed write durable (used after a
// NoSync bulk import).
func (db *DB) SyncWAL() error {
	return db.write("sync", nil, func() error { return db.p.LogData(nil, pebble.Sync) })
}

// Reader is what the index packages read through: the store or a batch.
type Reader interface {
	Get(key []byte) ([]byte, error)
	Scan(ctx context.Context, prefix []byte, fn func(k, v []byte) error) error
}

// A Sizer is a Reader that can tell, without yielding them, how many
// records a Scan of prefix would yield and how many bytes their values
// hold, so that a loader sizes its arrays once (a user's index image can;
// the store would have to scan).
type Sizer interface {
	ScanSize(ctx context.Context, prefix []byte) (records, valueBytes int, err error)
}

// Writer is what the index packages write through: a batch. A Writer
// copies what it is given: callers may reuse a key or value buffer as soon
// as Set or Delete returns.
type Writer interface {
	Set(key, value []byte) error
	Delete(key []byte) error
}

// Batch is a set of writes that commit atomically. Not safe for concurrent
// use.
type Batch struct {
	b  *pebble.Batch
	db *DB
	// local: the store holds no key under this prefix (see SetLocal).
	local []byte
	// ranged: the batch holds a range deletion.
	ranged bool
	// abandoned: a commit of b may still be inside Pebble (see DB.write).
	abandoned bool
	// unimaged: the user root whose image head the batch deleted last
	// (see unimage).
	unimaged []byte
	// imagedBytes: see ImagedBytes.
	imagedBytes int
}

// SetLocal declares that the store holds no key under prefix (a user with
// no data yet): reads under it then see the batch alone, which spares a
// merge with every level of the store for ranges known to be empty there.
// A large batch whose keys all lie under prefix commits as an ingested
// table (see Options.IngestMinBytes).
func (b *Batch) SetLocal(prefix []byte) { b.local = prefix }

// scanDir is scanDir through the batch.
func (b *Batch) scanDir(ctx context.Context, lo, hi []byte, reverse bool, fn func(k, v []byte) error) error {
	if err := b.db.fail.readErr(); err != nil {
		return err
	}
	return scanDir(ctx, b.iter, lo, hi, reverse, fn)
}

// isLocal reports whether [lo, hi) lies under the local prefix.
func (b *Batch) isLocal(lo, hi []byte) bool {
	if b.local == nil || !bytes.HasPrefix(lo, b.local) {
		return false
	}
	end := PrefixEnd(b.local)
	return hi != nil && (end == nil || bytes.Compare(hi, end) <= 0)
}

// iter returns an iterator over [lo, hi) through the batch.
func (b *Batch) iter(o *pebble.IterOptions) (*pebble.Iterator, error) {
	if b.isLocal(o.LowerBound, o.UpperBound) {
		return b.b.NewBatchOnlyIter(context.Background(), o)
	}
	return b.b.NewIter(o)
}

// Set writes key = value (both are copied).
func (b *Batch) Set(key, value []byte) error {
	im, err := b.unimage(key)
	if err != nil {
		return err
	}
	if im {
		b.imagedBytes += len(key) + len(value)
	}
	return b.b.Set(key, value, nil)
}

// Delete removes key.
func (b *Batch) Delete(key []byte) error {
	if _, err := b.unimage(key); err != nil {
		return err
	}
	return b.b.Delete(key, nil)
}

// DeleteRange removes [lo, hi).
func (b *Batch) DeleteRange(lo, hi []byte) error {
	if err := b.unimageRange(lo, hi); err != nil {
		return err
	}
	b.ranged = true
	return b.b.DeleteRange(lo, hi, nil)
}

// Get reads key through the batch.
func (b *Batch) Get(key []byte) ([]byte, error) {
	if err := b.db.fail.readErr(); err != nil {
		return nil, err
	}
	if next := append(key[:len(key):len(key)], 0); b.isLocal(key, next) {
		var out []byte
		found := false
		err := scan(context.Background(), b.iter, key, next, func(_, v []byte) error {
			out, found = append([]byte{}, v...), true
			return nil
		})
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, ErrNotFound
		}
		return out, nil
	}
	v, c, err := b.b.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, wrapErr("get", err)
	}
	out := append([]byte(nil), v...)
	return out, c.Close()
}

// Scan is DB.Scan through the batch.
func (b *Batch) Scan(ctx context.Context, prefix []byte, fn func(k, v []byte) error) error {
	return b.scanDir(ctx, prefix, PrefixEnd(prefix), false, fn)
}

// ScanReverse calls fn for every key with prefix, through the batch, last
// key first; fn returning an error (such as a sentinel to stop) ends the
// scan with that error. For reading the end of a long range without
// reading the range.
func (b *Batch) ScanReverse(ctx context.Context, prefix []byte, fn func(k, v []byte) error) error {
	return b.scanDir(ctx, prefix, PrefixEnd(prefix), true, fn)
}

// ScanRange is DB.ScanRange through the batch.
func (b *Batch) ScanRange(ctx context.Context, lo, hi []byte, fn func(k, v []byte) error) error {
	return b.scanDir(ctx, lo, hi, false, fn)
}

// Len is about the number of bytes the batch holds.
func (b *Batch) Len() int { return b.b.Len() }

// Empty reports whether the batch holds no writes.
func (b *Batch) Empty() bool { return b.b.Empty() }

// Commit applies the batch atomically, syncing the log unless the store was
// opened with NoSync. Concurrent syncing commits share one fsync (Pebble's
// commit pipeline groups them).
func (b *Batch) Commit() error {
	if b.db.noSync {
		return b.commit(pebble.NoSync)
	}
	return b.commit(pebble.Sync)
}

func (b *Batch) commit(wo *pebble.WriteOptions) error {
	if b.local != nil && !b.ranged && b.db.ingestMin >= 0 && b.b.Len() >= b.db.ingestMin {
		if done, err := b.commitAsTable(); done || err != nil {
			return err
		}
	}
	if err := b.db.write("commit", b, func() error { return b.b.Commit(wo) }); err != nil {
		return err
	}
	if wo.Sync && b.db.synced != nil {
		// Every write before this batch's last is durable too.
		b.db.synced.advance(uint64(b.b.SeqNum()) + uint64(b.b.Count()))
	}
	return nil
}

// CommitNoSync applies the batch without waiting for the log sync, whatever
// the store's durability: for writes derived from data already durable
// (applying a committed episode), which recovery re-derives if a crash
// loses them. A later syncing commit makes them durable too.
func (b *Batch) CommitNoSync() error { return b.commit(pebble.NoSync) }

// Close releases the batch; uncommitted writes are discarded.
func (b *Batch) Close() error {
	if b.abandoned {
		return nil // Pebble may still use it: left to the collector
	}
	return b.b.Close()
}

type quietLogger struct {
	l    *slog.Logger
	fail *failure
}

func (q quietLogger) Infof(format string, args ...any) {
	if q.l != nil {
		q.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
	}
}
func (q quietLogger) Errorf(format string, args ...any) {
	if q.l != nil {
		q.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
	}
}

// Syncs are the file syncs the store has asked the operating system for
// since Open: what a durable write costs, counted rather than inferred from
// latency.
type Syncs struct {
	// WAL: syncs of write-ahead log files (one per durable commit, shared
	// by commits that arrive together).
	WAL uint64
	// Other: syncs of table, manifest and other files (flushes,
	// compactions).
	Other uint64
}

// Syncs returns the file syncs since Open.
func (db *DB) Syncs() Syncs {
	return Syncs{WAL: db.syncs.wal.Load(), Other: db.syncs.other.Load()}
}

// BlockCacheMisses returns the reads of a block that Pebble's block cache
// did not hold, since Open.
func (db *DB) BlockCacheMisses() int64 { return db.p.Metrics().BlockCache.Misses }

type syncCounts struct{ wal, other atomic.Uint64 }

// syncCountingFS counts the syncs of the files it creates.
type syncCountingFS struct {
	vfs.FS
	counts *syncCounts
}

func (fs syncCountingFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil {
		return nil, err
	}
	c := &fs.counts.other
	if strings.HasSuffix(name, ".log") {
		c = &fs.counts.wal
	}
	return syncCountingFile{f, c}, nil
}

func (fs syncCountingFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	if err != nil {
		return nil, err
	}
	return syncCountingFile{f, &fs.counts.wal}, nil
}

type syncCountingFile struct {
	vfs.File
	n *atomic.Uint64
}

func (f syncCountingFile) Sync() error {
	f.n.Add(1)
	return f.File.Sync()
}

func (f syncCountingFile) SyncData() error {
	f.n.Add(1)
	return f.File.SyncData()
}

func (f syncCountingFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	if full {
		f.n.Add(1)
	}
	return full, err
}
