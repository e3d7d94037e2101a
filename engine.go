package memor

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/memor-db/memor/embed"
	"github.com/memor-db/memor/extract"
	"github.com/memor-db/memor/index/hnsw"
	"github.com/memor-db/memor/kv"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Defaults for Options.
const (
	DefaultMaxTextBytes = 64 << 10
	// DefaultIndexCacheBytes bounds the loaded per-user indexes when
	// Options.IndexCacheBytes is 0: about 450k facts' worth with the
	// default embedder.
	DefaultIndexCacheBytes = 1 << 30
	// MaxUserBytes bounds a user ID.
	MaxUserBytes = 16 << 10
)

// Options configures Open. The zero value is a durable store with the
// default rule extractor.
type Options struct {
	// NoSync acknowledges writes before they reach stable storage: faster
	// bulk import, but a crash may lose the last writes. Call Engine.Sync
	// at the end of an import.
	NoSync bool
	// Clock is the engine clock (transaction time); nil means time.Now.
	// Transaction times are made strictly increasing whatever it returns.
	Clock func() time.Time
	// Logger receives operational logs; nil discards them.
	Logger *slog.Logger
	// Extractor turns episode text into ops; nil means the built-in
	// extractor.
	Extractor extract.Extractor
	// Embedder turns fact and episode text into vectors for Query; nil
	// means the built-in feature-hashing embedder (offline, no weights).
	Embedder embed.Embedder
	// Reranker, if set, reorders Query's top candidates in one call
	// (QueryOptions.Reranker overrides it per query).
	Reranker extract.Reranker
	// Judge decides the cardinality of unknown predicates; nil means
	// unknown predicates are Many (additive: nothing is lost). Each
	// verdict is cached with the user's data: it is asked once per user
	// and predicate.
	Judge extract.Judge
	// MaxTextBytes bounds an episode's text (default 64 KiB).
	MaxTextBytes int
	// CacheSize is the storage block cache in bytes (default 64 MiB).
	CacheSize int64
	// IngestMinBytes: a new user's first write (a bulk import) of at
	// least this many bytes — about 150 facts at the default 256 KiB —
	// commits as one sorted table ingested straight into the store's
	// bottom level: atomic and durable like a synced commit, without the
	// log, memtable, flush or compactions that cost more CPU than the
	// write itself. Negative: never.
	IngestMinBytes int
	// BulkMinFacts: a new user's first AssertBatch of at least this many
	// facts (default 256) is built by the bulk loader, which folds the
	// facts in memory and writes every record in key order without
	// reading any back; the store it leaves is the same, byte for byte,
	// as the one-write-at-a-time path's. (A new user's first Add with
	// Sync goes to it whatever its size.) The loader does not build the
	// user's indexes in memory: they load from the store when first used.
	// Negative: never, for either.
	BulkMinFacts int
	// IndexCacheBytes bounds the memory of the per-user retrieval indexes
	// kept loaded, as estimated from their documents (each costs its
	// vector as held plus about 1.5 KB; with the default embedder about
	// 2.2 KB in all, some 15 % above the heap measured by the bench's
	// BenchmarkIndexMemory). Past it, the least recently used users'
	// indexes are evicted, and reloaded from the store when next read
	// (about 0.4 ms for a 100-fact user). 0 means DefaultIndexCacheBytes:
	// a long-running server that meets new users must not grow without
	// bound. Negative: no bound, every user stays loaded once read. A
	// single user larger than the budget stays loaded while it is the one
	// in use.
	IndexCacheBytes int64
	// NoIndexImages turns off the users' index images: by default, a
	// user whose indexes were loaded from records that read 112 KB or
	// more (and at most 32 MB) has an image of each index, as the index
	// holds it in memory, packed into a few large values written in the
	// background (and by Close), which the next load uses instead of
	// decoding thousands of records. The image costs about as much disk
	// as the records it is made from (a dense vector index's up to 2.3
	// times); a write of the user makes it stale at once (it is not read
	// again) and the next load from the records writes a new one.
	NoIndexImages bool
	// NoIndexWarmup turns off the index cache's warm-up: by default,
	// Close records which users' indexes were loaded (most recently used
	// first), and the next Open loads them again in the background, as
	// many as IndexCacheBytes holds, so that a restarted server's active
	// users do not each pay for a load on their first query
	// (Stats.Warming and Stats.IndexesWarmed tell its progress); and a
	// user a bulk import wrote (a new user's large first batch) is loaded
	// once imports have been idle for 50 ms, so that its first query does
	// not load it from the records. With NoIndexWarmup (a short-lived
	// process: the CLI's one-shot commands set it) nothing is loaded, and
	// Close records the users it used before those the record named.
	NoIndexWarmup bool
	// Ungoverned turns resolution off: every predicate is treated as Many,
	// so contradicting values all stand (ends and restatements still
	// apply). It exists to measure what resolution buys (memortest's
	// "ungoverned" arm); do not use it for real memories.
	Ungoverned bool
	// Predicates registers predicates before anything is resolved: before
	// the episodes a crash left pending are applied at Open. Register your
	// own predicates here (RegisterPredicate after Open affects only what
	// is resolved after the call).
	Predicates []Predicate
	// Workers is how many goroutines apply queued episodes (default 2).
	Workers int
	// QueueSize bounds the episodes waiting to be applied; Add waits when
	// it is reached (default 1024).
	QueueSize int
	// RebuildProgress, if set, is called after each episode Rebuild replays.
	RebuildProgress func(user string, done, total int)
	// reembed: opened by Reembed, which moves the store to Embedder
	// (see checkEmbedder).
	reembed bool
	// Observer, if set, receives the time each Query and each of its
	// stages took (see Observer); nil reads no clock for it.
	Observer Observer
	// TracerProvider, if set, receives spans of Add, of applying each
	// queued episode (extraction, resolution, commit) and of Query and
	// each of its stages; MeterProvider, if set, receives the episode
	// counters and the apply and query latencies. Nil, the default, calls
	// no OpenTelemetry code. No attribute carries user text or a user ID:
	// users are named by a hash (see README, "Tracing and metrics").
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// Log, if set, is where episodes are durable first: each write
	// appends its episode there before committing to the store, Forget
	// erases the user there too, and CatchUp copies what other writers
	// appended (see EpisodeLog). Nil, the default, keeps the log in the
	// store alone.
	Log EpisodeLog
	// Encryption, if set, encrypts every file of a new store (keys,
	// values, logs, the MANIFEST), and is needed to open one; nil, the
	// default, writes plain files. Rotate the KEK after a Forget (open
	// with the new KEK and PreviousKEK the old one, then destroy the
	// old): see Encryption and the README, "Encryption and erasure".
	Encryption *Encryption
	// fs is the file system the store writes through (nil: the
	// operating system's); tests inject storage failures with it.
	fs vfs.FS
}

// Encryption is the store's encryption (Options.Encryption): KEK, the
// 32-byte key-encryption key, and, to rotate it at Open, PreviousKEK, the
// one the store was last opened with. Each file of the store has its own
// random key, sealed under the KEK in the file's header.
type Encryption = kv.Encryption

// Predicate declares a predicate: its cardinality, aliases and the words
// people use for it. Everything but Name and Cardinality is optional; a
// declaration of a default predicate that leaves them empty keeps the
// default's.
type Predicate struct {
	Name        string
	Cardinality Cardinality
	Aliases     []string
	// Gloss is the words people use for the predicate ("drives car
	// vehicle" for drives_car): the text indexes see them beside each
	// fact's subject and object, and the graph walk counts them as the
	// predicate's words, so a question in words finds the fact. Empty:
	// the name's words.
	Gloss string
	// Topic lists the words of a question that name the predicate's topic
	// ("car", "vehicle").
	Topic []string
	// Note is what an LLM extractor is told about the predicate's values
	// beside its name (`the model, e.g. "Tesla Model 3"`).
	Note string
	// Relation: the object is a person related to the subject ("user
	// cousin Maya"), so the extractor is told the person's name in later
	// episodes and questions reach them through it.
	Relation bool
}

// Engine is an open memor store. Safe for concurrent use.
type Engine struct {
	db    *kv.DB
	opts  Options
	log   *slog.Logger
	clock func() time.Time
	preds *predicates
	ext   extract.Extractor
	idx   *indexSet
	// images writes the index images loads ask for; nil when the tuning
	// has none.
	images *imageWriter
	warm   *indexWarmer
	// warmMu orders the Forgets' rewrites of the warm-up record.
	warmMu sync.Mutex

	lastTick atomic.Int64
	locks    [lockStripes]sync.Mutex
	// commits[i] counts the commits of the writes that hold locks[i]
	// (each counted just before it commits): a reader that finds it
	// unchanged across its reads knows that no write of its user
	// committed meanwhile (see queryView).
	commits [lockStripes]atomic.Uint64
	// bulkLoads counts the writes the bulk loader committed (see
	// bulkWrite).
	bulkLoads atomic.Uint64
	// hookQueryView, if set (by tests of this package), runs in
	// queryView between reading the indexes and taking the snapshot of
	// each try made without the user's lock.
	hookQueryView func(try int)
	// tune holds the write path's switches (defaultTuning outside the
	// tests of this package, see openTuned).
	tune tuning
	// hookForgetCommitted, if set (by openWithForgetHook, in this
	// package's tests), runs between a Forget's deletion and its
	// compaction: a test cuts Forget short there, as a crash would.
	hookForgetCommitted func() error
	// hookImageBuilt, if set (by this package's tests), runs in
	// writeImage between building a user's image and taking the user's
	// lock to commit it.
	hookImageBuilt func(user string)
	// imageClaims numbers the claims of images being built (see
	// writeImage).
	imageClaims atomic.Uint64

	ing      *ingester
	counters engineCounters
	tel      telemetry

	// gate is held shared by every operation and exclusively by Close.
	gate      sync.RWMutex
	closed    bool
	closing   chan struct{}
	closeOnce sync.Once
}

// Open opens (creating if needed) the store in dir.
func Open(dir string, o Options) (*Engine, error) {
	return openTuned(dir, o, defaultTuning())
}

// tuning is the write path's fast paths and thresholds. Tests of this
// package open engines with other values (openTuned) to compare a fast
// path with the general one; each engine has its own, so such tests run
// in parallel.
type tuning struct {
	// appendPath enables resolveSub's append path (see txn.appended),
	// bulk the bulk loader (see bulkWrite), images the users' index
	// images (see image.go).
	appendPath, bulk, images bool
	// bulkMinOps is the fewest ops of a new user's first write that
	// the bulk loader takes (see bulkable).
	bulkMinOps int
	// imageMinDocs is the fewest documents of a user whose loads look
	// for an index image; imageMinBytes and imageMaxBytes the fewest and
	// most bytes a load from the records may read for the user's image
	// to be written.
	imageMinDocs, imageMinBytes, imageMaxBytes int
	// readAtOnce is how long one of the episodes a query serves must take
	// to read for the rest to be read at once (see readEpisodes).
	readAtOnce time.Duration
	// closeImages bounds the time Close spends writing the images this
	// session's writes deleted (imageWriter.rewrite).
	closeImages time.Duration
	// vectors is the users' vector indexes' options (zero: hnsw's
	// defaults), so that a test reaches the graph with a few documents.
	vectors hnsw.Options
}

func defaultTuning() tuning {
	return tuning{appendPath: true, bulk: true, images: true, bulkMinOps: 256,
		imageMinDocs: defaultImageMinDocs, imageMinBytes: defaultImageMinBytes, imageMaxBytes: defaultImageMaxBytes,
		readAtOnce: defaultReadAtOnce, closeImages: defaultCloseImages}
}

// openTuned is Open with the write path's tuning.
func openTuned(dir string, o Options, tune tuning) (*Engine, error) {
	if o.MaxTextBytes <= 0 {
		o.MaxTextBytes = DefaultMaxTextBytes
	}
	switch {
	case o.BulkMinFacts < 0:
		tune.bulk = false
	case o.BulkMinFacts > 0:
		tune.bulkMinOps = o.BulkMinFacts
	}
	// Checked before the store is touched: a bad declaration opens
	// nothing and writes nothing.
	preds := newPredicates()
	for _, p := range o.Predicates {
		name, aliases, err := checkPredicate(p.Name, p.Cardinality, p.Aliases)
		if err != nil {
			return nil, fmt.Errorf("memor: open %s: Options.Predicates: %w", dir, err)
		}
		preds.register(name, p.Cardinality, aliases, p)
	}
	lg := o.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	db, err := kv.Open(dir, kv.Options{NoSync: o.NoSync, CacheSize: o.CacheSize, Logger: o.Logger,
		IngestMinBytes: o.IngestMinBytes, FS: o.fs, Encryption: o.Encryption})
	if err != nil {
		return nil, fmt.Errorf("memor: open %s: %w", dir, err)
	}
	if o.Workers <= 0 {
		o.Workers = 2
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 1024
	}
	if o.IndexCacheBytes == 0 {
		o.IndexCacheBytes = DefaultIndexCacheBytes
	}
	e := &Engine{db: db, opts: o, log: lg, clock: o.Clock, preds: preds, ext: o.Extractor,
		closing: make(chan struct{}), tune: tune}
	if e.clock == nil {
		e.clock = time.Now
	}
	if e.tel, err = newTelemetry(o.TracerProvider, o.MeterProvider, &e.counters); err != nil {
		db.Close()
		return nil, fmt.Errorf("memor: open %s: telemetry: %w", dir, err)
	}
	if e.ext == nil {
		e.ext = extract.NewRuleExtractor()
	}
	if c, ok := e.ext.(extract.Catalogued); ok {
		// The extractor is told this engine's predicates, registered ones
		// included.
		e.ext = c.WithCatalogue(preds.cat)
	}
	emb := o.Embedder
	if emb == nil {
		emb = embed.NewHash(0)
	}
	e.idx = newIndexSet(e, emb, max(o.IndexCacheBytes, 0)) // negative: no bound
	e.idx.hnswO = tune.vectors
	if tune.images && !o.NoIndexImages {
		e.images = newImageWriter(e)
	}
	e.ing = newIngester(e, o.Workers, o.QueueSize)
	// Before any episode is applied: its vectors must be the store's kind.
	if err := e.checkEmbedder(dir); err != nil {
		e.Close()
		return nil, err
	}
	if err := e.finishForgets(context.Background()); err != nil {
		e.Close()
		return nil, err
	}
	// Before any episode is applied: the pending ones may need verdicts.
	if err := e.upgradeJudgeVerdicts(context.Background()); err != nil {
		e.Close()
		return nil, err
	}
	if err := e.recoverPending(context.Background()); err != nil {
		e.Close()
		return nil, err
	}
	if err := e.finishUpgrade(context.Background()); err != nil {
		e.Close()
		return nil, err
	}
	e.startWarm()
	return e, nil
}

// Close waits for running operations and closes the store. Further calls
// return ErrClosed.
func (e *Engine) Close() error {
	first := false
	e.closeOnce.Do(func() {
		first = true
		close(e.closing)
		if e.warm != nil {
			e.warm.stop()
		}
		// Stop the workers first: an episode being applied finishes, the
		// rest stay committed and are applied after the next Open.
		e.ing.stop()
		e.ing.wg.Wait()
		// Then the images asked for are written (see imageWriter), and
		// those this session's writes deleted.
		if e.images != nil {
			e.images.wg.Wait()
			e.images.rewrite(e.tune.closeImages)
		}
	})
	if !first {
		return ErrClosed
	}
	e.gate.Lock()
	defer e.gate.Unlock()
	e.closed = true
	if e.warm != nil { // an Open that got as far as warming up
		e.recordWarm()
	}
	return errors.Join(e.db.Close(), e.tel.close())
}

// enter admits an operation; the caller must call the returned release.
func (e *Engine) enter(ctx context.Context) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e.gate.RLock()
	if e.closed {
		e.gate.RUnlock()
		return nil, ErrClosed
	}
	return e.gate.RUnlock, nil
}

// admit validates user and enters the gate: the start of every
// user-scoped operation.
func (e *Engine) admit(ctx context.Context, user string) (func(), error) {
	if err := e.validUser(user); err != nil {
		return nil, err
	}
	return e.enter(ctx)
}

// admitStored is admit for Episodes and Forget, which also reach users
// stored under IDs that ValidUser now refuses (see storedUser).
func (e *Engine) admitStored(ctx context.Context, user string) (func(), error) {
	if err := storedUser(user); err != nil {
		return nil, err
	}
	return e.enter(ctx)
}

// lockUser serialises the writes of one user.
func (e *Engine) lockUser(user string) func() {
	m := &e.locks[stripe(user)]
	m.Lock()
	return m.Unlock
}

// lockStripes is how many locks the users share.
const lockStripes = 256

// stripe is the index of user's lock and commit counter.
func stripe(user string) int {
	h := fnv.New32a()
	h.Write([]byte(user))
	return int(h.Sum32() % lockStripes)
}

// tick returns a transaction time strictly after every earlier tick of this
// process and after floor (the user's last transaction time, which makes
// transaction time increase across restarts too).
func (e *Engine) tick(floor int64) int64 {
	for {
		last := e.lastTick.Load()
		t := e.clock().UnixNano()
		if t <= last {
			t = last + 1
		}
		if t <= floor {
			t = floor + 1
		}
		if e.lastTick.CompareAndSwap(last, t) {
			return t
		}
	}
}

// now is the instant "current" reads use: the clock, but never before the
// last transaction time, so a write is visible to the next read even when
// the clock stands still or steps back.
func (e *Engine) now() time.Time {
	t := e.clock().UnixNano()
	if last := e.lastTick.Load(); last > t {
		t = last
	}
	return time.Unix(0, t).UTC()
}

// RegisterPredicate declares a predicate's cardinality and aliases. It
// applies to claims resolved from now on (call it right after Open, or
// better, use Options.Predicates). Names and aliases are normalised
// ("Lives In" → lives_in); one that is not valid UTF-8, is longer than
// MaxPredicateBytes or has no letter or digit, or a cardinality other
// than One or Many, returns an error wrapping ErrInvalidPredicate and
// registers nothing.
func (e *Engine) RegisterPredicate(name string, c Cardinality, aliases ...string) error {
	name, als, err := checkPredicate(name, c, aliases)
	if err != nil {
		return err
	}
	e.preds.register(name, c, als, Predicate{})
	return nil
}

// Stats are counters of the engine's work since Open.
type Stats struct {
	// WALSyncs are the syncs of the write-ahead log: what durable writes
	// wait for. A durable Assert or Add costs one, shared by the writes
	// that commit together; applying an added episode costs none (the
	// episode is already durable, and recovery re-applies it).
	WALSyncs uint64
	// FileSyncs are the syncs of every other file (table flushes,
	// compactions, the manifest).
	FileSyncs uint64
	// IndexedUsers is how many users' retrieval indexes are loaded, and
	// IndexBytes their estimated memory (see Options.IndexCacheBytes).
	IndexedUsers int
	IndexBytes   int64
	// IngestedTables counts the large first writes of new users (a bulk
	// import) that committed as a sorted table ingested straight into the
	// store's bottom level, skipping the log, memtable and compactions.
	IngestedTables uint64
	// BulkLoads counts the first writes of new users built by the bulk
	// loader (see Options.BulkMinFacts).
	BulkLoads uint64
	// IndexEvictions counts the users whose indexes were dropped from
	// the cache to keep it within Options.IndexCacheBytes.
	IndexEvictions uint64
	// EpisodesQueued counts the episodes Add queued (without Sync);
	// EpisodesApplied the episodes whose facts were applied, queued or
	// inline (a Rebuild's replay is not counted again); EpisodesFailed
	// the episodes recorded as failed (see Failed and Retry).
	EpisodesQueued, EpisodesApplied, EpisodesFailed uint64
	// Warming is set while the index cache's warm-up runs after Open;
	// IndexesWarmed counts the users it loaded, and those it loaded after
	// a bulk import (see Options.NoIndexWarmup).
	Warming       bool
	IndexesWarmed uint64
}

// Stats returns the engine's counters.
func (e *Engine) Stats(ctx context.Context) (Stats, error) {
	release, err := e.enter(ctx)
	if err != nil {
		return Stats{}, err
	}
	defer release()
	s := e.db.Syncs()
	users, bytes := e.idx.size()
	return Stats{WALSyncs: s.WAL, FileSyncs: s.Other, IndexedUsers: users, IndexBytes: bytes,
		IngestedTables: e.db.IngestedTables(), BulkLoads: e.bulkLoads.Load(), IndexEvictions: e.idx.evictions.Load(),
		EpisodesQueued: e.counters.queued.Load(), EpisodesApplied: e.counters.applied.Load(),
		EpisodesFailed: e.counters.failed.Load(), Warming: e.warm.running.Load(), IndexesWarmed: e.warm.warmed.Load()}, nil
}

// Sync makes every acknowledged write durable (for NoSync stores).
func (e *Engine) Sync(ctx context.Context) error {
	release, err := e.enter(ctx)
	if err != nil {
		return err
	}
	defer release()
	return e.db.SyncWAL()
}
