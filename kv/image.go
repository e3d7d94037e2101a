package kv

import "bytes"

// A user's index image (the root package's image.go) is built, at one
// moment, from the records under the user's imaged keyspaces, and kept
// under SubImage so that a load reads a few large values instead of every
// record. It is valid only while those records are unchanged. This package
// keeps it so by construction: every write under an imaged keyspace
// through a Batch (Set, Delete, DeleteRange) also deletes the user's image
// head in the same batch, so a head present in the store means no write
// has touched what the image copies since it was written. (A Table, and a
// batch's writes under its SetLocal prefix, go where the store holds
// nothing, so no image.)
const (
	// SubImage is a user's index image: the head at 'p' 0x00, the chunks
	// at 'p' 0x01 sub index.
	SubImage Sub = 'p'
)

// ImagedSubs returns the keyspaces a user's index image copies, in the
// order its head lists them.
func ImagedSubs() []Sub { return []Sub{SubDoc, SubBM25, SubVector, SubTemporal, SubGraph} }

func imaged(s Sub) bool {
	switch s {
	case SubDoc, SubBM25, SubVector, SubTemporal, SubGraph:
		return true
	}
	return false
}

// ImageHead returns the key of user's image head: 'u' esc(user) 'p' 0x00.
func ImageHead(user string) []byte { return append(UserKey(user, SubImage), 0) }

// ImageChunks returns the prefix of user's image chunks: 'u' esc(user)
// 'p' 0x01.
func ImageChunks(user string) []byte { return append(UserKey(user, SubImage), 1) }

// splitUserKey returns the length of key's user root ('u' esc(user)) and
// the sub byte after it; ok is false when key is not a user key or ends
// at its root.
func splitUserKey(key []byte) (root int, sub Sub, ok bool) {
	if len(key) < 3 || key[0] != TagUser {
		return 0, 0, false
	}
	for i := 1; i+1 < len(key); i++ {
		if key[i] != escByte {
			continue
		}
		if key[i+1] != escTerm {
			i++ // an escaped 0x00
			continue
		}
		if i+2 < len(key) {
			return i + 2, Sub(key[i+2]), true
		}
		return i + 2, 0, false
	}
	return 0, 0, false
}

// unimage deletes, in the batch, the image head of the user whose imaged
// keyspace holds key (once for a run of writes of one user), and reports
// whether key is in one.
func (b *Batch) unimage(key []byte) (bool, error) {
	root, sub, ok := splitUserKey(key)
	if !ok || !imaged(sub) {
		return false, nil
	}
	if b.local != nil && bytes.HasPrefix(key, b.local) {
		return true, nil // (no image there)
	}
	return true, b.dropImage(key[:root])
}

// ImagedBytes is the bytes of the keys and values the batch set under
// users' imaged keyspaces: about what a load of their indexes from the
// records reads of what the batch wrote (a value set twice counts twice).
func (b *Batch) ImagedBytes() int { return b.imagedBytes }

// unimageRange is unimage for a range deletion: the images of the users
// its ends lie in are deleted unless it lies within one user's image.
// Users wholly inside the range lose their heads with their other keys.
func (b *Batch) unimageRange(lo, hi []byte) error {
	rootLo, subLo, okLo := splitUserKey(lo)
	rootHi, subHi, okHi := splitUserKey(hi)
	if okLo && subLo == SubImage && okHi && bytes.Equal(lo[:rootLo], hi[:rootHi]) && (subHi == SubImage || subHi == SubImage+1 && len(hi) == rootHi+1) {
		return nil
	}
	if rootLo > 0 {
		if err := b.dropImage(lo[:rootLo]); err != nil {
			return err
		}
	}
	if rootHi > 0 {
		return b.dropImage(hi[:rootHi])
	}
	return nil
}

func (b *Batch) dropImage(root []byte) error {
	if bytes.Equal(b.unimaged, root) {
		return nil
	}
	b.unimaged = append(b.unimaged[:0], root...)
	head := append(append(make([]byte, 0, len(root)+2), root...), byte(SubImage), 0)
	return b.b.Delete(head, nil)
}
