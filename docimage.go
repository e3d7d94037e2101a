package memor

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/memor-db/memor/index/temporal"
	"github.com/memor-db/memor/kv"
)

// The document map's part of a user's index image ('d', see image.go):
// the map as a userIndex holds it (docAt and docArena, see setDocLocked),
// so that a load from the image takes the arena where it lies and only
// derives from it what each episode produced, instead of decoding the
// map record by record and copying each value into a new arena. Its
// bytes, little-endian:
//
//	1 (docImageVersion), 0 0 0
//	u32 n: len(docAt); u32 a: len(docArena)
//	n × u32: docAt (0: the document is not in the map, else 1 + the
//	         offset of its value in the arena)
//	a bytes: the arena, uvarint(len(v)) v for each document in order
//
// Built from the records through the same setDocLocked a load uses, so an
// image holds what a load from the records holds.
const docImageVersion = 1

// docImageHead is the size of the image's fixed head.
const docImageHead = 12

// errDocsNotHeld: a document map record the in-memory map would not hold
// (setDocLocked drops a document far past the others: a damaged key). Its
// loads read the records, which derive from every record.
var errDocsNotHeld = errors.New("memor: a document map record is not held in memory")

// appendDocImage appends the image of user's document map, read through
// r (m: the user's counters).
func appendDocImage(ctx context.Context, dst []byte, r kv.Reader, user string, m userMeta) ([]byte, error) {
	ui := &userIndex{docAt: make([]uint32, 0, int(m.Doc)+1)}
	docs := kv.UserKey(user, kv.SubDoc)
	err := r.Scan(ctx, docs, func(k, v []byte) error {
		doc := kv.NewDecoder(k[len(docs):]).Uint32()
		ui.setDocLocked(doc, v)
		if int(doc) >= len(ui.docAt) || ui.docAt[doc] == 0 {
			return fmt.Errorf("%w: document %d", errDocsNotHeld, doc)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	dst = append(dst, docImageVersion, 0, 0, 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(ui.docAt)))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(ui.docArena)))
	for _, at := range ui.docAt {
		dst = binary.LittleEndian.AppendUint32(dst, at)
	}
	return append(dst, ui.docArena...), nil
}

// loadDocImage is loadDocs from the image b (appendDocImage's, which the
// load owns: the arena is kept where it lies), r reading the episodes
// whose values hold no times. The image is checked whole (its values
// tile the arena in document order), and a damaged one fails the load.
func loadDocImage(b []byte, r kv.Reader, user string, ui *userIndex, tmp *temporal.Index) error {
	if len(b) < docImageHead || b[0] != docImageVersion || b[1]|b[2]|b[3] != 0 {
		return fmt.Errorf("%w: document map image of %d bytes, version %x", ErrCorrupt, len(b), b[:min(len(b), 1)])
	}
	n, a := uint64(binary.LittleEndian.Uint32(b[4:])), uint64(binary.LittleEndian.Uint32(b[8:]))
	if docImageHead+4*n+a != uint64(len(b)) {
		return fmt.Errorf("%w: document map image of %d bytes holds %d documents and %d bytes of values", ErrCorrupt, len(b), n, a)
	}
	at := make([]uint32, n)
	for i := range at {
		at[i] = binary.LittleEndian.Uint32(b[docImageHead+4*i:])
	}
	arena := b[docImageHead+4*n:]
	arena = arena[:len(arena):len(arena)] // a write appends to a copy
	ui.mu.Lock()
	defer ui.mu.Unlock()
	ui.docAt, ui.docArena = at, arena
	return tmp.Reading(func(active func(uint32) bool) error {
		dl := docLoad{r: r, user: user, ui: ui, active: active}
		next := uint64(0) // where the next value must start
		for doc, off := range at {
			if off == 0 {
				continue
			}
			if uint64(off-1) != next {
				return fmt.Errorf("%w: document map image: document %d at %d, want %d", ErrCorrupt, doc, off-1, next)
			}
			vn, w := binary.Uvarint(arena[next:])
			if w <= 0 || vn > a-next-uint64(w) {
				return fmt.Errorf("%w: document map image: document %d cut short", ErrCorrupt, doc)
			}
			v := arena[next+uint64(w) : next+uint64(w)+vn : next+uint64(w)+vn]
			next += uint64(w) + vn
			if len(v) < 9 {
				return fmt.Errorf("%w: document %d", ErrCorrupt, doc)
			}
			if err := dl.add(uint32(doc), v); err != nil {
				return err
			}
		}
		if next != a {
			return fmt.Errorf("%w: document map image: %d bytes of values after the last document", ErrCorrupt, a-next)
		}
		return nil
	})
}
