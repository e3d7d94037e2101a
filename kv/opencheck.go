package kv

import (
	"errors"
	"fmt"
	"io"
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
// for such a store the current MANIFEST must be named by its marker, read
// to a clean end, record by record, and, if it is the one the last Close
// saw, be as long as it was then (a MANIFEST cut at a record boundary
// reads cleanly); and a read-only open (which writes nothing, deletes
// nothing and flushes nothing) must find the format key and every write
// known to be durable (see syncedName). Any failure is ErrCorrupt, and no file has
// been changed.
//
// What this cannot tell apart: a MANIFEST whose last record was torn by a
// power failure in the middle of a flush or compaction (which Pebble
// recovers from, losing nothing) is refused like a damaged one.

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
// was a store. freshSidecar: the sidecar was written by this Open (a new
// encrypted store's, see checkSidecar) and says nothing of a store.
func checkExisting(dir string, fs vfs.FS, po *pebble.Options, freshSidecar bool) (existed bool, err error) {
	ls, err := fs.List(dir)
	if err != nil {
		return false, fmt.Errorf("kv: list %s: %w", dir, err)
	}
	sidecar, pebbleFiles, tables := false, false, 0
	for _, name := range ls {
		switch {
		case name == sidecarName:
			sidecar = !freshSidecar
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
	d, ok, err := readSynced(fs, dir)
	if err != nil {
		return true, err
	}
	if name := fs.PathBase(desc.ManifestFilename); ok && d.manifest == name {
		// A MANIFEST cut at a record boundary reads to a clean end.
		fi, err := fs.Stat(desc.ManifestFilename)
		if err != nil {
			return true, fmt.Errorf("%w: current MANIFEST: %v", ErrCorrupt, err)
		}
		if fi.Size() < d.size {
			return true, fmt.Errorf("%w: %s is %d bytes, %d when the store was closed", ErrCorrupt, name, fi.Size(), d.size)
		}
	}
	var want uint64
	if ok {
		want = d.seq
	}
	return true, checkReadOnly(dir, fs, po, sidecar, want)
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
// format key and recovers at least to want, the sequence number recorded
// as durable (see syncedName).
func checkReadOnly(dir string, fs vfs.FS, po *pebble.Options, sidecar bool, want uint64) error {
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
	if got := visibleSeq(p); got < want {
		return fmt.Errorf("%w: %s: writes were lost: the writes below sequence number %d were durable (%s) but recovery reaches only %d: "+
			"%d acknowledged writes are missing; a write-ahead log is damaged",
			ErrCorrupt, dir, want, syncedName, got, want-got)
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
