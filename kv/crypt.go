package kv

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Encryption turns on the encryption of every file Pebble writes in the
// store's folder (see [Options.Encryption]).
//
// Each file gets its own random AES-256 key when it is created. The key is
// kept in the file's first [cryptHeaderSize] bytes, sealed (AES-256-GCM)
// under the key-encryption key (KEK); the rest of the file is AES-256-CTR
// under the file key, so that Pebble can read any offset. Pebble never
// rewrites a file: a forgotten user's bytes leave the store when the
// compaction after the deletion (and Scrub, and the MANIFEST rewrite)
// deletes every file that held them, and with each file its key. What
// remains of those files in freed blocks is ciphertext under keys that
// exist only sealed under a KEK; rotating the KEK after the Forget
// (PreviousKEK) re-seals the keys of the files that still exist, after
// which destroying the old KEK leaves every copy of the deleted files'
// keys unreadable.
type Encryption struct {
	// KEK is the 32-byte key-encryption key. Keep it off the disks the
	// store is on (a secret manager, a KMS, a tmpfs): whoever holds it
	// and the disks reads the store.
	KEK []byte
	// PreviousKEK, if set, is the KEK the store was last opened with:
	// Open re-seals, under KEK, every file key sealed under it (a KEK
	// rotation), after finishing what an earlier Scrub left to do. Once
	// Open returns, PreviousKEK seals nothing still needed: destroy every
	// copy of it. An Open cut short (a crash) leaves files under both,
	// and the next Open with the same pair finishes the rotation.
	PreviousKEK []byte
}

// Errors of an encrypted store.
var (
	// ErrEncrypted: the store is encrypted and Options.Encryption is nil.
	ErrEncrypted = errors.New("kv: store is encrypted (Options.Encryption needed)")
	// ErrNotEncrypted: Options.Encryption is set and the store is not
	// encrypted (stores are encrypted from their creation).
	ErrNotEncrypted = errors.New("kv: store is not encrypted")
	// ErrWrongKEK: a file of the store is sealed under another KEK than
	// Options.Encryption's (or a KEK is not 32 bytes).
	ErrWrongKEK = errors.New("kv: wrong key-encryption key")
)

// The file header: everything an encrypted file holds before its data.
//
//	0   "memorenc" magic
//	8   version 1
//	9   7 zero bytes
//	16  KEK ID:8 (kekID)
//	24  nonce:12
//	36  sealed:64  AES-256-GCM(KEK, nonce, file key:32 ‖ CTR IV:16,
//	               additional data cryptAAD)
//	100 28 zero bytes
const (
	cryptHeaderSize = 128
	cryptMagic      = "memorenc"
	cryptVersion    = 1
	cryptSealedEnd  = 36 + 48 + 16
)

var cryptAAD = []byte("memor file key v1")

// testAllKEK is the KEK of the stores a memor_encrypt_all build encrypts
// (see encryptAll).
var testAllKEK = []byte("memor_encrypt_all test KEK 32 by")

// kekID names a KEK without revealing it (the same derivation as
// cluster/jslog's).
func kekID(kek []byte) (id [8]byte) {
	sum := sha256.Sum256(append([]byte("memor kek id\x00"), kek...))
	copy(id[:], sum[:8])
	return id
}

// sealer is one KEK.
type sealer struct {
	id   [8]byte
	aead cipher.AEAD
}

func newSealer(kek []byte) (*sealer, error) {
	if len(kek) != 32 {
		return nil, fmt.Errorf("%w: the KEK is %d bytes, want 32", ErrWrongKEK, len(kek))
	}
	b, err := aes.NewCipher(kek)
	if err != nil {
		return nil, err
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		return nil, err
	}
	return &sealer{id: kekID(kek), aead: g}, nil
}

// header seals key ‖ iv into a new header.
func (s *sealer) header(secret []byte) []byte {
	h := make([]byte, cryptHeaderSize)
	copy(h, cryptMagic)
	h[8] = cryptVersion
	copy(h[16:24], s.id[:])
	if _, err := rand.Read(h[24:36]); err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	s.aead.Seal(h[36:36], h[24:36], secret, cryptAAD)
	return h
}

// cryptFS encrypts what Pebble writes through it (see Encryption).
type cryptFS struct {
	vfs.FS
	mu   sync.RWMutex
	cur  *sealer
	prev *sealer // nil but during a rotation
}

func newCryptFS(base vfs.FS, e *Encryption) (*cryptFS, error) {
	cur, err := newSealer(e.KEK)
	if err != nil {
		return nil, err
	}
	fs := &cryptFS{FS: base, cur: cur}
	if e.PreviousKEK != nil {
		if fs.prev, err = newSealer(e.PreviousKEK); err != nil {
			return nil, err
		}
	}
	return fs, nil
}

// Unwrap returns nil: what lies below is ciphertext, not Pebble's files.
func (fs *cryptFS) Unwrap() vfs.FS { return nil }

// open reads f's header and returns its cipher, or ErrNotEncrypted for a
// file without one, ErrWrongKEK for one sealed under another KEK.
func (fs *cryptFS) open(name string, f vfs.File) (*cryptFile, error) {
	h := make([]byte, cryptHeaderSize)
	if _, err := f.ReadAt(h, 0); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: %s has no encryption header", ErrCorrupt, name)
		}
		return nil, err
	}
	secret, _, err := fs.unseal(name, h)
	if err != nil {
		return nil, err
	}
	return newCryptFile(f, secret)
}

// unseal opens header h, under the current KEK or the previous one, and
// returns the secret and whether it took the previous one.
func (fs *cryptFS) unseal(name string, h []byte) (secret []byte, old bool, err error) {
	if string(h[:8]) != cryptMagic || h[8] != cryptVersion {
		return nil, false, fmt.Errorf("%w: %s has no encryption header", ErrCorrupt, name)
	}
	fs.mu.RLock()
	cur, prev := fs.cur, fs.prev
	fs.mu.RUnlock()
	s := cur
	switch {
	case bytes.Equal(h[16:24], cur.id[:]):
	case prev != nil && bytes.Equal(h[16:24], prev.id[:]):
		s, old = prev, true
	default:
		return nil, false, fmt.Errorf("%w: %s is sealed under KEK %x", ErrWrongKEK, name, h[16:24])
	}
	secret, err = s.aead.Open(nil, h[24:36], h[36:cryptSealedEnd], cryptAAD)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %s: encryption header: %v", ErrCorrupt, name, err)
	}
	return secret, old, nil
}

func (fs *cryptFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil {
		return nil, err
	}
	secret := make([]byte, 48)
	if _, err := rand.Read(secret); err != nil {
		panic(err)
	}
	fs.mu.RLock()
	h := fs.cur.header(secret)
	fs.mu.RUnlock()
	if _, err := f.Write(h); err != nil {
		_ = f.Close()
		return nil, err
	}
	cf, err := newCryptFile(f, secret)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return cf, nil
}

func (fs *cryptFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return f, nil
	}
	cf, err := fs.open(name, f)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return cf, nil
}

func (fs *cryptFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	if st, err := fs.FS.Stat(name); os.IsNotExist(err) || (err == nil && st.Size() == 0) {
		return fs.Create(name, category)
	}
	f, err := fs.FS.OpenReadWrite(name, category, opts...)
	if err != nil {
		return nil, err
	}
	cf, err := fs.open(name, f)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return cf, nil
}

// ReuseForWrite creates newname afresh: a reused file would be written
// twice under one key stream.
func (fs *cryptFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if err := fs.FS.Remove(oldname); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	return fs.Create(newname, category)
}

func (fs *cryptFS) Stat(name string) (vfs.FileInfo, error) {
	st, err := fs.FS.Stat(name)
	if err != nil || st.IsDir() {
		return st, err
	}
	return cryptInfo{st}, nil
}

// Remove overwrites a file's header before deleting it, so that on a file
// system that overwrites in place its key is gone at once; the KEK
// rotation covers those that do not (copy-on-write, flash translation).
func (fs *cryptFS) Remove(name string) error {
	if st, err := fs.FS.Stat(name); err == nil && !st.IsDir() && st.Size() >= cryptHeaderSize {
		if f, err := fs.FS.OpenReadWrite(name, vfs.WriteCategoryUnspecified); err == nil {
			h := make([]byte, cryptHeaderSize)
			if _, err := f.ReadAt(h, 0); err == nil && string(h[:8]) == cryptMagic && linkCount(st) <= 1 {
				clear(h)
				_, _ = f.WriteAt(h, 0)
				_ = f.Sync()
			}
			_ = f.Close()
		}
	}
	return fs.FS.Remove(name)
}

// linkCount is st's number of hard links (1 when unknown): the header of
// a file ingested by a link is still needed under its other name.
func linkCount(st os.FileInfo) uint64 {
	if n, ok := nlink(st.Sys()); ok {
		return n
	}
	return 1
}

// reseal re-seals every file under dir sealed under the previous KEK,
// then forgets that KEK.
func (fs *cryptFS) reseal(dir string) error {
	fs.mu.RLock()
	prev := fs.prev
	fs.mu.RUnlock()
	if prev == nil {
		return nil
	}
	names, err := fs.FS.List(dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		path := fs.FS.PathJoin(dir, n)
		st, err := fs.FS.Stat(path)
		if err != nil || st.IsDir() || st.Size() < cryptHeaderSize {
			continue // vanished, a folder, the lock file
		}
		if err := fs.resealFile(path); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	if err := syncDir(fs.FS, dir); err != nil {
		return err
	}
	fs.mu.Lock()
	fs.prev = nil
	fs.mu.Unlock()
	return nil
}

func (fs *cryptFS) resealFile(path string) error {
	f, err := fs.FS.OpenReadWrite(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	defer f.Close()
	h := make([]byte, cryptHeaderSize)
	if _, err := f.ReadAt(h, 0); err != nil {
		return err
	}
	if string(h[:8]) != cryptMagic {
		return nil // not one of ours (a header already cleared by Remove)
	}
	secret, old, err := fs.unseal(path, h)
	if err != nil || !old {
		return err
	}
	fs.mu.RLock()
	nh := fs.cur.header(secret)
	fs.mu.RUnlock()
	if _, err := f.WriteAt(nh, 0); err != nil {
		return err
	}
	return f.Sync()
}

// cryptInfo reports a file's size without its header.
type cryptInfo struct{ vfs.FileInfo }

func (i cryptInfo) Size() int64 { return max(i.FileInfo.Size()-cryptHeaderSize, 0) }

// cryptFile is one encrypted file; offsets are the plaintext's.
type cryptFile struct {
	vfs.File
	block cipher.Block
	iv    [16]byte
	mu    sync.Mutex // pos and buf
	pos   int64
	buf   []byte
}

func newCryptFile(f vfs.File, secret []byte) (*cryptFile, error) {
	b, err := aes.NewCipher(secret[:32])
	if err != nil {
		return nil, err
	}
	cf := &cryptFile{File: f, block: b}
	copy(cf.iv[:], secret[32:48])
	return cf, nil
}

// xor applies the key stream at plaintext offset off to src into dst.
func (f *cryptFile) xor(dst, src []byte, off int64) {
	var iv [16]byte
	hi := binary.BigEndian.Uint64(f.iv[:8])
	lo := binary.BigEndian.Uint64(f.iv[8:])
	n := uint64(off) / aes.BlockSize
	if lo+n < lo {
		hi++
	}
	binary.BigEndian.PutUint64(iv[:8], hi)
	binary.BigEndian.PutUint64(iv[8:], lo+n)
	s := cipher.NewCTR(f.block, iv[:])
	if skip := int(off % aes.BlockSize); skip > 0 {
		var pad [aes.BlockSize]byte
		s.XORKeyStream(pad[:skip], pad[:skip])
	}
	s.XORKeyStream(dst, src)
}

func (f *cryptFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off+cryptHeaderSize)
	f.xor(p[:n], p[:n], off)
	return n, err
}

func (f *cryptFile) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.ReadAt(p, f.pos)
	f.pos += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (f *cryptFile) seal(p []byte, off int64) []byte {
	if cap(f.buf) < len(p) {
		f.buf = make([]byte, len(p))
	}
	b := f.buf[:len(p)]
	f.xor(b, p, off)
	return b
}

func (f *cryptFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.File.WriteAt(f.seal(p, f.pos), f.pos+cryptHeaderSize)
	f.pos += int64(n)
	return n, err
}

func (f *cryptFile) WriteAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.File.WriteAt(f.seal(p, off), off+cryptHeaderSize)
}

func (f *cryptFile) Preallocate(off, length int64) error {
	return f.File.Preallocate(off+cryptHeaderSize, length)
}

func (f *cryptFile) Stat() (vfs.FileInfo, error) {
	st, err := f.File.Stat()
	if err != nil {
		return nil, err
	}
	return cryptInfo{st}, nil
}

func (f *cryptFile) SyncTo(length int64) (bool, error) {
	return f.File.SyncTo(length + cryptHeaderSize)
}

// Fd is invalid: a caller reading the descriptor would read ciphertext.
func (f *cryptFile) Fd() uintptr { return vfs.InvalidFd }

func (f *cryptFile) Prefetch(off, length int64) error {
	return f.File.Prefetch(off+cryptHeaderSize, length)
}

// rotate finishes a KEK rotation at Open: with every obsolete file
// deleted (closing Pebble waits for its deletions, and the MANIFEST was
// rewritten if a Scrub asked for it), it re-seals the remaining files'
// keys under the current KEK and reopens Pebble. A file deleted after this
// never held what a Forget before it erased. On failure db.p may be nil.
func (db *DB) rotate(fs *cryptFS) error {
	if err := db.p.Close(); err != nil {
		db.p = nil
		return fmt.Errorf("kv: rotate KEK: %w", err)
	}
	db.p = nil
	if err := fs.reseal(db.dir); err != nil {
		return fmt.Errorf("kv: rotate KEK: %w", err)
	}
	c := pebble.NewCache(db.cacheSize)
	db.po.Cache = c
	p, err := openPebble(db.dir, db.po)
	c.Unref()
	if err != nil {
		return fmt.Errorf("kv: rotate KEK: %w", err)
	}
	db.p = p
	return nil
}

// checkHeaders opens the header of every data file of Pebble's in dir (but
// stale ingest tables, which Open deletes): before Pebble reads one, a
// store sealed
// under another KEK is ErrWrongKEK, and a file without a header is
// ErrCorrupt, or, if no file has one (plain says there is no sidecar to
// tell), ErrNotEncrypted. A header of zeros is a file Remove began to
// delete.
func (fs *cryptFS) checkHeaders(dir string, plain bool) error {
	names, err := fs.FS.List(dir)
	if err != nil {
		return fmt.Errorf("kv: list %s: %w", dir, err)
	}
	h := make([]byte, cryptHeaderSize)
	for _, n := range names {
		if !hasPebbleData(n) || strings.HasPrefix(n, tablePrefix) {
			continue
		}
		path := fs.FS.PathJoin(dir, n)
		st, err := fs.FS.Stat(path)
		if err != nil || st.IsDir() || st.Size() == 0 {
			continue
		}
		f, err := fs.FS.Open(path)
		if err != nil {
			return err
		}
		_, err = f.ReadAt(h, 0)
		_ = f.Close()
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if err != nil || (string(h[:8]) != cryptMagic && !bytes.Equal(h[:8], make([]byte, 8))) {
			if plain {
				return fmt.Errorf("%w: %s has no encryption header", ErrNotEncrypted, path)
			}
			return fmt.Errorf("%w: %s has no encryption header", ErrCorrupt, path)
		}
		plain = false
		if h[0] == 0 {
			continue
		}
		if _, _, err := fs.unseal(path, h); err != nil {
			return err
		}
	}
	return nil
}

// DecryptFile returns the plaintext of b, the bytes of an encrypted
// store's file, if it is sealed under kek: what someone holding the file
// and kek reads. A file not sealed under kek is ErrWrongKEK, one without a
// header ErrNotEncrypted. For tools and for the tests that prove what an
// erasure leaves.
func DecryptFile(b, kek []byte) ([]byte, error) {
	s, err := newSealer(kek)
	if err != nil {
		return nil, err
	}
	if len(b) < cryptHeaderSize || string(b[:8]) != cryptMagic {
		return nil, ErrNotEncrypted
	}
	fs := &cryptFS{cur: s}
	secret, _, err := fs.unseal("file", b[:cryptHeaderSize])
	if err != nil {
		return nil, err
	}
	f, err := newCryptFile(nil, secret)
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(b)-cryptHeaderSize)
	f.xor(out, b[cryptHeaderSize:], 0)
	return out, nil
}
