package kv

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Why a damaged MANIFEST used to lose the data. Pebble reads its MANIFEST
// (a log of version edits: tables added and removed) leniently: the first
// record that is torn or fails its checksum ends the log, wherever it is,
// and what follows is ignored, because a torn last record is what a power
// failure during a manifest write leaves. A writable open then writes a
// new MANIFEST naming only the tables the edits it read added, and deletes
// every table file and write-ahead log it does not name as obsolete. So
// one flipped bit in the current MANIFEST, or the loss of its last byte,
// drops the edits from there on, and with them table files holding data
// whose logs are long gone; a MANIFEST whose only record (the snapshot a
// store's last open wrote) is damaged, or a deleted manifest marker, reads
// as a new, empty store. memor then found no format key and took the
// store for a new one.
//
// checkExisting runs before Pebble opens the folder for writing. A store
// existed if its format sidecar or any of Pebble's data files is there;
// for such a store the current MANIFEST must be named by its marker and
// read to a clean end, record by record, and a read-only open (which
// writes nothing, deletes nothing and flushes nothing) must find the
// format key and, if the store was last closed cleanly, every write the
// close saw (see closedName). Any failure is ErrCorrupt, and no file has
// been changed.
//
// What this cannot tell apart: a MANIFEST whose last record was torn by a
// power failure in the middle of a flush or compaction (which Pebble
// recovers from, losing nothing) is refused like a damaged one.

// closedName is the sidecar a clean Close writes: the sequence number the
// store had reached, so that the next Open can tell whether recovery
// found every write the close saw.
const closedName = "MEMOR_CLOSED"

// hasPebbleData reports whether a file name is one of Pebble's data files
// or its manifest marker.
func hasPebbleData(name string) bool {
	return strings.HasSuffix(name, ".sst") || strings.HasSuffix(name, ".log") ||
		strings.HasPrefix(name, "MANIFEST-") || strings.HasPrefix(name, "marker.manifest.") ||
		strings.HasPrefix(name, "marker.format-version.")
}

// checkExisting verifies, without changing a file, that the store in dir
// (if there is one) reads as the store it was; see above. po are the
// options the store will be opened with. existed reports whether there
// was a store.
func checkExisting(dir string, fs vfs.FS, po *pebble.Options) (existed bool, err error) {
	ls, err := fs.List(dir)
	if err != nil {
		return false, fmt.Errorf("kv: list %s: %w", dir, err)
	}
	sidecar, pebbleFiles, tables := false, false, 0
	for _, name := range ls {
		switch {
		case name == sidecarName:
			sidecar = true
		case hasPebbleData(name):
			pebbleFiles = true
			if strings.HasSuffix(name, ".sst") {
				tables++
			}
		}
	}
	if !sidecar && !pebbleFiles {
		return false, nil // a new store
	}
	desc, err := pebble.Peek(dir, fs)
	if err != nil {
		return true, fmt.Errorf("%w: %s: %v", ErrCorrupt, dir, err)
	}
	if !desc.Exists {
		if !sidecar && tables == 0 {
			// A first open that stopped before Pebble named its first
			// MANIFEST: nothing was stored.
			return false, nil
		}
		return true, fmt.Errorf("%w: %s holds a memor store (%s, %d table files) but no current MANIFEST (its marker file is missing)",
			ErrCorrupt, dir, existedBy(sidecar), tables)
	}
	if desc.FormatMajorVersion == pebble.FormatDefault {
		return true, fmt.Errorf("%w: %s: Pebble's format-version marker is missing", ErrCorrupt, dir)
	}
	if err := checkManifest(fs, desc.ManifestFilename); err != nil {
		return true, err
	}
	return true, checkReadOnly(dir, fs, po, sidecar)
}

func existedBy(sidecar bool) string {
	if sidecar {
		return sidecarName + " is there"
	}
	return "Pebble's files are there"
}

// checkManifest reads every record of the MANIFEST at path and requires
// it to end cleanly, after at least one record.
func checkManifest(fs vfs.FS, path string) error {
	f, err := fs.Open(path)
	if err != nil {
		return fmt.Errorf("%w: current MANIFEST: %v", ErrCorrupt, err)
	}
	defer f.Close()
	rr := record.NewReader(f, 0)
	n := 0
	for {
		off := rr.Offset()
		r, err := rr.Next()
		if err == io.EOF {
			break
		}
		if err == nil {
			_, err = io.Copy(io.Discard, r)
		}
		if err != nil {
			return fmt.Errorf("%w: %s is damaged at offset %d (record %d): %v", ErrCorrupt, filepath.Base(path), off, n+1, err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("%w: %s is empty", ErrCorrupt, filepath.Base(path))
	}
	return nil
}

// checkReadOnly opens the store read-only and checks that it holds a
// format key and, if the last Close recorded one, at least the sequence
// number that Close saw.
func checkReadOnly(dir string, fs vfs.FS, po *pebble.Options, sidecar bool) error {
	ro := po.Clone()
	ro.ReadOnly = true
	p, err := openPebble(dir, ro)
	if err != nil {
		return err
	}
	defer p.Close()
	_, closer, err := p.Get(formatKey)
	switch {
	case err == nil:
		_ = closer.Close()
	case errors.Is(err, pebble.ErrNotFound):
		if sidecar || !readsEmpty(p) {
			return fmt.Errorf("%w: %s: the store existed (%s) but has no format version: its MANIFEST or write-ahead logs lost data",
				ErrCorrupt, dir, existedBy(sidecar))
		}
		return nil // a first open that stopped before the format key
	default:
		return wrapErr("read format version", err)
	}
	want, ok, err := readClosed(fs, dir)
	if err != nil || !ok {
		return err
	}
	if got := visibleSeq(p); got < want {
		return fmt.Errorf("%w: %s: writes were lost: the store was closed at sequence number %d but recovers only to %d "+
			"(%d writes acknowledged before the close are missing; a write-ahead log is damaged)",
			ErrCorrupt, dir, want, got, want-got)
	}
	return nil
}

func readsEmpty(p *pebble.DB) bool {
	it, err := p.NewIter(nil)
	if err != nil {
		return false
	}
	defer it.Close()
	return !it.First() && it.Error() == nil
}

// visibleSeq is the sequence number that the next write to p would get,
// read as the sequence number of a snapshot (Pebble does not export it
// otherwise). With other snapshots open it may be lower.
func visibleSeq(p *pebble.DB) uint64 {
	s := p.NewSnapshot()
	defer s.Close()
	return uint64(p.Metrics().Snapshots.EarliestSeqNum)
}

// readClosed reads the closed sidecar; ok is false if there is none. A
// damaged one is ErrCorrupt.
func readClosed(fs vfs.FS, dir string) (seq uint64, ok bool, err error) {
	f, err := fs.Open(fs.PathJoin(dir, closedName))
	if oserrorIsNotExist(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("kv: read %s: %w", closedName, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return 0, false, fmt.Errorf("kv: read %s: %w", closedName, err)
	}
	if _, err := fmt.Sscanf(string(b), "memor closed at sequence %d\n", &seq); err != nil {
		return 0, false, fmt.Errorf("%w: %s: %q", ErrCorrupt, closedName, b)
	}
	return seq, true, nil
}

func oserrorIsNotExist(err error) bool {
	return err != nil && (errors.Is(err, os.ErrNotExist) || os.IsNotExist(err))
}

// writeClosed records seq in the closed sidecar, durably (written to a
// temporary file, synced, renamed, the folder synced).
func writeClosed(fs vfs.FS, dir string, seq uint64) error {
	tmp := fs.PathJoin(dir, closedName+".tmp")
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("kv: write %s: %w", closedName, err)
	}
	_, err = fmt.Fprintf(f, "memor closed at sequence %d\n", seq)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, fs.PathJoin(dir, closedName))
	}
	if err == nil {
		err = syncDir(fs, dir)
	}
	if err != nil {
		return fmt.Errorf("kv: write %s: %w", closedName, err)
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
