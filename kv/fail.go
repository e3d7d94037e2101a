package kv

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// A failed write (storage).
//
// What Pebble v2.1.7 does when the file system fails a write:
//
//   - A failed write or sync of the write-ahead log fails the commits
//     waiting on it, and Pebble then calls Logger.Fatalf ("fatal commit
//     error"): its commit pipeline is not recoverable in-process. The
//     batch is already in the memtable, so reads see it although it is
//     not durable, and the log writer keeps the error: a later commit
//     whose record fills a log block latches it, and the commit after that
//     panics inside the pipeline with the pipeline's mutex held, so every
//     commit after it waits forever, and so does Close.
//   - A failed MANIFEST write calls Fatalf too (from the goroutine that
//     flushed, compacted or ingested).
//   - A failed flush is retried at once, forever; a write that needs
//     room in the memtables meanwhile waits for it.
//
// So the DB latches the first storage failure: from then on every write
// returns it (ErrStorage, wrapping the cause) without reaching Pebble, a
// write waiting inside Pebble returns it as soon as it is latched, and,
// after a failure of the log (where the memtable may hold writes that were
// not made durable), reads return it too. Reopening the store recovers
// from what is on disk. Fatalf no longer panics for a storage failure: a
// panic in Pebble's background goroutines would end the process.
type failure struct {
	err  atomic.Pointer[error]
	once sync.Once
	// done is closed when the failure is latched.
	done chan struct{}
	// stale: the memtable may hold writes that are not durable.
	stale atomic.Bool
	// wedged: a goroutine panicked inside Pebble's commit pipeline, whose
	// mutex it holds; Pebble's Close would wait for it forever.
	wedged atomic.Bool
	// opened: Open has returned the DB (see failFS.Create).
	opened atomic.Bool
	log    *slog.Logger
}

func newFailure(l *slog.Logger) *failure {
	return &failure{done: make(chan struct{}), log: l}
}

// set latches cause (the first one wins) and returns the latched error.
// stale says that reads may see writes that were not made durable.
func (f *failure) set(cause error, stale bool) error {
	f.once.Do(func() {
		err := cause
		if !errors.Is(err, ErrStorage) {
			err = fmt.Errorf("%w: %w", ErrStorage, cause)
		}
		f.err.Store(&err)
		close(f.done)
		if f.log != nil {
			f.log.Error("storage failed: the store refuses writes until it is reopened", "err", err, "component", "kv")
		}
	})
	if stale {
		f.stale.Store(true)
	}
	return f.get()
}

// get returns the latched failure, or nil.
func (f *failure) get() error {
	if p := f.err.Load(); p != nil {
		return *p
	}
	return nil
}

// readErr returns the latched failure if reads may be wrong.
func (f *failure) readErr() error {
	if f.stale.Load() {
		return f.get()
	}
	return nil
}

// ioError reports whether err comes from the file system.
func ioError(err error) bool {
	var pe *fs.PathError
	var le *os.LinkError
	var se *os.SyscallError
	var en syscall.Errno
	return errors.As(err, &pe) || errors.As(err, &le) || errors.As(err, &se) || errors.As(err, &en)
}

// flushFailed reports whether a flush's error is a failure: Pebble also
// reports a flush that had nothing to write (ingested tables only), and
// one it cancelled to retry, as errors.
func flushFailed(err error) bool {
	return err != nil && !errors.Is(err, pebble.ErrCancelledCompaction) && err.Error() != "pebble: empty table"
}

// Storage-failure messages of Pebble's Fatalf calls (see failure).
var fatalStorage = []string{"fatal commit error", "MANIFEST"}

// Fatalf is Pebble's report of an error it cannot recover from. A
// storage failure is latched (see failure) and Fatalf returns, so that
// Pebble's caller gets an error; anything else is a broken invariant,
// latched too, and Fatalf panics so that a test or server can report it
// (Pebble's own logger exits the process).
func (q quietLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf("pebble: "+format, args...)
	storage := q.fail != nil && q.fail.get() != nil
	for _, s := range fatalStorage {
		storage = storage || strings.Contains(msg, s)
	}
	var cause error = errors.New(msg)
	for _, a := range args {
		if err, ok := a.(error); ok {
			storage = storage || ioError(err)
			cause = fatalError{msg, err}
		}
	}
	if q.fail != nil {
		// A failed MANIFEST write leaves the memtable as it was.
		q.fail.set(cause, !strings.Contains(msg, "MANIFEST"))
	}
	if storage {
		return
	}
	q.Errorf("%s", msg)
	panic(msg)
}

// abandonAfter is how long a write inside Pebble may still take once a
// failure is latched before it is abandoned.
const abandonAfter = time.Second

// fatalError is Fatalf's message, wrapping the error it names.
type fatalError struct {
	msg string
	err error
}

func (f fatalError) Error() string { return f.msg }
func (f fatalError) Unwrap() error { return f.err }

// write runs fn, a write to Pebble, refusing it if a failure is latched.
// Any error of fn, or a panic, latches a failure (stale: the write may
// have reached the memtable). A write still inside Pebble abandonAfter
// after a failure is latched returns the failure and is abandoned (see
// failure): its goroutine stays blocked, and b (if not nil) is marked
// abandoned so that Close does not recycle a batch Pebble may still use.
func (db *DB) write(op string, b *Batch, fn func() error) error {
	if err := db.fail.get(); err != nil {
		return err
	}
	done := db.writers.run(func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				db.fail.wedged.Store(true)
				err = db.fail.set(fmt.Errorf("kv: %s: pebble panicked: %v", op, r), true)
			}
		}()
		return fn()
	})
	var err error
	select {
	case err = <-done:
	case <-db.fail.done:
		select {
		case err = <-done:
		case <-time.After(abandonAfter):
			if b != nil {
				b.abandoned = true
			}
			return db.fail.get()
		}
	}
	if err != nil {
		if pebble.IsCorruptionError(err) || errors.Is(err, pebble.ErrCorruption) {
			return wrapErr(op, err)
		}
		return db.fail.set(fmt.Errorf("kv: %s: %w", op, err), true)
	}
	// A failure of the log latched while fn ran may have been this
	// write's (Fatalf returned instead of Pebble returning an error): it
	// is not acknowledged. Another failure (a flush, the MANIFEST) leaves
	// a write Pebble accepted durable.
	return db.fail.readErr()
}

// writers are the goroutines DB.write runs writes on. They are kept
// rather than started for each write: a new goroutine grows its stack
// through Pebble's commit path every time, which made a small commit take
// five times as long.
type writers struct {
	idle chan *writer
	quit chan struct{}
	once sync.Once
}

type writer struct {
	done chan error
	next chan func() error
}

func newWriters() *writers {
	return &writers{idle: make(chan *writer, 64), quit: make(chan struct{})}
}

// run runs fn on an idle writer, or a new one, and returns where its
// result arrives.
func (ws *writers) run(fn func() error) <-chan error {
	done := make(chan error, 1)
	select {
	case w := <-ws.idle:
		w.done = done
		select {
		case w.next <- fn:
			return done
		case <-ws.quit: // w has ended
		}
		go ws.loop(&writer{done: done, next: make(chan func() error)}, fn)
	default:
		w := &writer{done: done, next: make(chan func() error)}
		go ws.loop(w, fn)
	}
	return done
}

func (ws *writers) loop(w *writer, fn func() error) {
	for {
		w.done <- fn()
		select {
		case ws.idle <- w:
		default:
			return // enough idle writers
		}
		select {
		case fn = <-w.next:
		case <-ws.quit:
			return
		}
	}
}

// stop ends the idle writers.
func (ws *writers) stop() { ws.once.Do(func() { close(ws.quit) }) }

// openWatched is pebble.Open, returning the failure if one is latched
// meanwhile. Open flushes the memtables it replayed from the log and waits
// for the flush, which Pebble retries forever while the disk is full: that
// Open is abandoned after abandonAfter (it closes the DB if it ever
// succeeds; until then the store is locked). A panic is passed on.
func openWatched(dir string, po *pebble.Options) (*pebble.DB, error) {
	q, _ := po.Logger.(quietLogger)
	if q.fail == nil {
		return pebble.Open(dir, po)
	}
	type result struct {
		p     *pebble.DB
		err   error
		panic any
	}
	done := make(chan result, 1)
	go func() {
		var r result
		func() {
			defer func() { r.panic = recover() }()
			r.p, r.err = pebble.Open(dir, po)
		}()
		done <- r
	}()
	var r result
	select {
	case r = <-done:
	case <-q.fail.done:
		select {
		case r = <-done:
		case <-time.After(abandonAfter):
			go func() {
				if r := <-done; r.p != nil {
					_ = r.p.Close()
				}
			}()
			return nil, fmt.Errorf("%w (Pebble's open kept retrying and was abandoned)", q.fail.get())
		}
	}
	if r.panic != nil {
		panic(r.panic)
	}
	return r.p, r.err
}

// closeWait bounds how long Close waits for Pebble after a failure.
const closeWait = 5 * time.Second

// closeFailed closes a store whose failure is latched. It does not rewrite
// the MANIFEST (a write), and it does not wait forever for a Pebble whose
// commit pipeline is stuck: the store then stays locked until the process
// exits. It returns the failure.
func (db *DB) closeFailed() error {
	ferr := db.fail.get()
	p := db.p
	db.p = nil
	if db.fail.wedged.Load() {
		return fmt.Errorf("%w (Pebble's commit pipeline is stuck: the store stays locked until the process exits)", ferr)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = recover() }()
		_ = p.Close() // reports the failure again
	}()
	select {
	case <-done:
		return ferr
	case <-time.After(closeWait):
		return fmt.Errorf("%w (Pebble did not close within %v: the store stays locked until the process exits)", ferr, closeWait)
	}
}

// failFS latches a failure when a write or sync of the write-ahead log
// fails, before Pebble learns of it: a commit that starts after that is
// refused instead of reaching a broken log. A failed write of another file
// is latched by Pebble's own reaction to it (Fatalf, a failed flush), or
// not at all (a failed compaction is retried and loses nothing).
type failFS struct {
	vfs.FS
	fail *failure
}

func (f failFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	wal := strings.HasSuffix(name, ".log")
	if err := f.fail.get(); err != nil && strings.HasSuffix(name, ".sst") {
		// Pebble retries a failed flush at once, forever: the pause keeps
		// that from spinning.
		time.Sleep(100 * time.Millisecond)
		// Once the DB is open and failed, no table is written: a flush
		// would make durable what the memtable holds, which may include
		// writes that were refused. (During Open, the memtables hold the
		// log's replay: a retry may succeed once there is room, see
		// openWatched.)
		if f.fail.opened.Load() {
			return nil, fmt.Errorf("kv: create %s: %w", name, err)
		}
	}
	file, err := f.FS.Create(name, category)
	if err != nil {
		f.walFailed(name, err)
		return nil, err
	}
	if wal {
		return walFile{file, f.fail}, nil
	}
	return file, nil
}

func (f failFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.ReuseForWrite(oldname, newname, category)
	if err != nil {
		f.walFailed(newname, err)
		return nil, err
	}
	return walFile{file, f.fail}, nil
}

func (f failFS) walFailed(name string, err error) {
	if strings.HasSuffix(name, ".log") {
		f.fail.set(fmt.Errorf("write-ahead log %s: %w", name, err), true)
	}
}

// walFile latches a failure when a write or sync fails.
type walFile struct {
	vfs.File
	fail *failure
}

func (w walFile) failed(err error) error {
	if err != nil {
		w.fail.set(fmt.Errorf("write-ahead log: %w", err), true)
	}
	return err
}

func (w walFile) Write(p []byte) (int, error) {
	n, err := w.File.Write(p)
	return n, w.failed(err)
}

func (w walFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := w.File.WriteAt(p, off)
	return n, w.failed(err)
}

func (w walFile) Sync() error     { return w.failed(w.File.Sync()) }
func (w walFile) SyncData() error { return w.failed(w.File.SyncData()) }

func (w walFile) SyncTo(length int64) (bool, error) {
	full, err := w.File.SyncTo(length)
	return full, w.failed(err)
}
