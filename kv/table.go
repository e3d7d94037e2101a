package kv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// DefaultIngestMinBytes is the size from which a [Table], or a batch
// under a prefix empty in the store (see [Batch.SetLocal]), commits as an
// ingested table rather than through the write-ahead log and memtable.
const DefaultIngestMinBytes = 256 << 10

// tablePrefix names the table files a batch writes before Pebble takes them
// over. Pebble removes a file once ingested; one left by a crash between the
// two is removed at Open.
const tablePrefix = ".memor-ingest-"

// commitAsTable commits a batch under an empty prefix (see SetLocal) by writing its contents as one sorted
// table and ingesting it. The range under the local prefix is empty in the
// store, so the table goes straight to the bottom level: the batch skips the
// log, the memtable, the flush and every compaction. An ingestion is atomic
// and durable when it returns. It reports false, with nothing written, when
// the batch holds a key outside the local prefix or nothing at all; the
// caller then commits it the usual way.
func (b *Batch) commitAsTable() (bool, error) {
	it, err := b.b.NewBatchOnlyIter(context.Background(), &pebble.IterOptions{})
	if err != nil {
		return false, wrapErr("ingest", err)
	}
	defer it.Close()
	// Keys come in order and a prefix's keys are contiguous: the batch is
	// all under the prefix iff its first and last keys are.
	if !it.Last() || !bytes.HasPrefix(it.Key(), b.local) || !it.First() || !bytes.HasPrefix(it.Key(), b.local) {
		return false, it.Error()
	}
	return true, b.db.ingest(func(set func(k, v []byte) error) error {
		for valid := true; valid; valid = it.Next() {
			v, err := it.ValueAndErr()
			if err != nil {
				return wrapErr("ingest", err)
			}
			if err := set(it.Key(), v); err != nil {
				return err
			}
		}
		if err := it.Error(); err != nil {
			return wrapErr("ingest", err)
		}
		return nil
	})
}

// ingest writes the keys fill gives, in order, to a table file and ingests
// it. fill giving no key writes nothing.
//
// A failure to write the table changes nothing in the store: it returns
// ErrStorage without latching a failure (see failure), and the same write
// succeeds once there is room. A failure of Pebble's ingestion is latched.
func (db *DB) ingest(fill func(set func(k, v []byte) error) error) error {
	if err := db.fail.get(); err != nil {
		return err
	}
	path := filepath.Join(db.dir, fmt.Sprintf("%s%d-%d.sst", tablePrefix, os.Getpid(), db.tables.Add(1)))
	f, err := db.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("%w: ingest: %w", ErrStorage, err)
	}
	w := sstable.NewWriter(newTableWritable(f), db.tableOpts)
	n := 0
	err = fill(func(k, v []byte) error {
		n++
		if err := w.Set(k, v); err != nil {
			return fmt.Errorf("%w: ingest: %w", ErrStorage, err)
		}
		return nil
	})
	if err != nil || n == 0 {
		_ = w.Close()
		_ = db.fs.Remove(path)
		return err
	}
	// Close writes the footer and syncs the file.
	if err := w.Close(); err != nil {
		_ = db.fs.Remove(path)
		return fmt.Errorf("%w: ingest: %w", ErrStorage, err)
	}
	if err := db.write("ingest", nil, func() error { return db.p.Ingest(context.Background(), []string{path}) }); err != nil {
		_ = db.fs.Remove(path)
		return err
	}
	db.ingested.Add(1)
	return nil
}

// tableWritable is what an ingested table is written through: the file
// behind a buffer of tableBuffer bytes. Pebble's own file writable
// buffers 4 KB, a write call for every block or two of a table; through
// this one a bulk import's table of a few hundred KB takes a call or two.
type tableWritable struct {
	f   vfs.File
	buf *[]byte
}

// tableBuffer is the size of a tableWritable's buffer.
const tableBuffer = 256 << 10

var tableBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, tableBuffer)
	return &b
}}

func newTableWritable(f vfs.File) *tableWritable {
	buf := tableBuffers.Get().(*[]byte)
	*buf = (*buf)[:0]
	return &tableWritable{f: f, buf: buf}
}

// Write buffers p (a write as large as the buffer goes straight to the
// file once the buffer is empty).
func (w *tableWritable) Write(p []byte) error {
	for len(p) > 0 {
		b := *w.buf
		if len(b) == 0 && len(p) >= cap(b) {
			_, err := w.f.Write(p)
			return err
		}
		n := copy(b[len(b):cap(b)], p)
		*w.buf, p = b[:len(b)+n], p[n:]
		if len(*w.buf) == cap(b) {
			if err := w.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *tableWritable) flush() error {
	if len(*w.buf) == 0 {
		return nil
	}
	_, err := w.f.Write(*w.buf)
	*w.buf = (*w.buf)[:0]
	return err
}

// Finish writes what is buffered, syncs and closes the file.
func (w *tableWritable) Finish() error {
	err := w.flush()
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.release()
	return err
}

// Abort closes the file without writing what is buffered.
func (w *tableWritable) Abort() {
	_ = w.f.Close()
	w.release()
}

func (w *tableWritable) release() {
	if w.buf != nil {
		tableBuffers.Put(w.buf)
		w.buf = nil
	}
}

// IngestedTables is how many batches committed as ingested tables since
// Open.
func (db *DB) IngestedTables() uint64 { return db.ingested.Load() }

// removeStaleTables deletes table files a crash left between writing and
// ingesting them: they were never part of the store.
func removeStaleTables(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("kv: %w", err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), tablePrefix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("kv: %w", err)
			}
		}
	}
	return nil
}

// sstableWriterOptions is how ingested tables are written: as Pebble would
// write them to the bottom level, in the store's table format.
func sstableWriterOptions(po *pebble.Options, p *pebble.DB) sstable.WriterOptions {
	return po.MakeWriterOptions(len(po.Levels)-1, p.TableFormat())
}

// Users calls fn with every user that has a key in the store, in key
// order. It reads one key per user: after each user it seeks past the
// user's keyspace.
func (db *DB) Users(ctx context.Context, fn func(user string) error) error {
	if err := db.fail.readErr(); err != nil {
		return err
	}
	it, err := db.p.NewIter(&pebble.IterOptions{LowerBound: []byte{TagUser}, UpperBound: []byte{TagUser + 1}})
	if err != nil {
		return wrapErr("users", err)
	}
	defer it.Close()
	for valid := it.First(); valid; {
		if err := ctx.Err(); err != nil {
			return err
		}
		d := NewDecoder(it.Key()[1:])
		user := d.String()
		if d.Err != nil {
			return fmt.Errorf("%w: user key %x: %v", ErrCorrupt, it.Key(), d.Err)
		}
		if err := fn(user); err != nil {
			return err
		}
		next := PrefixEnd(UserRoot(user))
		if next == nil {
			break
		}
		valid = it.SeekGE(next)
	}
	if err := it.Error(); err != nil {
		return wrapErr("users", err)
	}
	return nil
}

// Table is a write-only set of writes under one prefix that the store
// holds nothing under (a new user's keys): the bulk loader's output. Its
// writes are kept in an append-only log, sorted once at Commit and written
// in key order: as one ingested table from [Options.IngestMinBytes] on,
// else as one batch. Nothing reads a Table back; the writer answers its
// own questions from memory. Not safe for concurrent use.
type Table struct {
	db     *DB
	prefix []byte
	w      *sortedWrites
	err    error // the first write outside the prefix
}

var _ Writer = (*Table)(nil)

// NewTable returns an empty Table for keys under prefix, with room for
// about size bytes of keys and values.
func (db *DB) NewTable(prefix []byte, size int) *Table {
	return &Table{db: db, prefix: prefix, w: newSortedWrites(prefix, size)}
}

// Set writes key = value (both are copied). A key outside the table's
// prefix is an error, returned here and by Commit.
func (t *Table) Set(key, value []byte) error {
	if !bytes.HasPrefix(key, t.prefix) {
		return t.outside(key)
	}
	t.w.add(key, value, false)
	return nil
}

// Delete removes an earlier write of key (the store holds nothing under
// the prefix to delete).
func (t *Table) Delete(key []byte) error {
	if !bytes.HasPrefix(key, t.prefix) {
		return t.outside(key)
	}
	t.w.add(key, nil, true)
	return nil
}

func (t *Table) outside(key []byte) error {
	if t.err == nil {
		t.err = fmt.Errorf("kv: table: key %q outside its prefix %q", key, t.prefix)
	}
	return t.err
}

// Len is about the number of bytes the table holds.
func (t *Table) Len() int { return t.w.bytes() }

// Commit writes the table to the store atomically, syncing unless the
// store was opened with NoSync (an ingested table is durable when
// ingested).
func (t *Table) Commit() error {
	if t.err != nil {
		return t.err
	}
	if t.db.ingestMin >= 0 && t.w.bytes() >= t.db.ingestMin {
		return t.db.ingest(func(set func(k, v []byte) error) error {
			_, err := t.w.each(set)
			return err
		})
	}
	b := &Batch{b: t.db.p.NewBatchWithSize(t.w.bytes() + 16*len(t.w.ents)), db: t.db}
	defer b.Close()
	if _, err := t.w.each(func(k, v []byte) error { return b.b.Set(k, v, nil) }); err != nil {
		return wrapErr("table", err)
	}
	if t.db.noSync {
		return b.commit(pebble.NoSync)
	}
	return b.commit(pebble.Sync)
}

// Close releases the table; writes not committed are discarded.
func (t *Table) Close() {
	if t.w != nil {
		t.w.release()
		t.w = nil
	}
}
