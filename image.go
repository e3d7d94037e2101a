package memor

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/memor-db/memor/graph"
	"github.com/memor-db/memor/index/bm25"
	"github.com/memor-db/memor/index/hnsw"
	"github.com/memor-db/memor/index/temporal"
	"github.com/memor-db/memor/kv"
)

// A user's index image is what a load of the user's indexes reads
// (kv.ImagedSubs: the document map, BM25, vectors, intervals, graph),
// packed into a few large values under 'p'. A load scans Pebble once per
// chunk instead of once per record: after a reopen, when Pebble's block
// cache is empty, walking some 6,000 small records of a 1,000-fact user
// through the merging iterator was three quarters of the load.
//
// Each keyspace's chunks hold its index's own image, built from its
// records (indexSet.indexImage): BM25's (bm25.Index.AppendImage: the
// dictionary and postings by term), which bm25.LoadImage reads without
// building the postings, a query decoding those of its terms; the
// vectors', intervals' and graph's, laid out as the index holds them in
// memory, which their LoadImage uses where it lies (or copies array by
// array) instead of decoding record by record; and the document map's
// (docimage.go), its arena as a userIndex holds it.
//
// An image is valid only while the records it was built from are
// unchanged; the kv package keeps it so (every write under an imaged
// keyspace deletes the user's image head in its batch), so a head present
// means the image is current. It is written in the background
// (imageWriter) after a load that found none, from a snapshot (see
// writeImage): it is built from what the store holds, never from what a
// load built.
const (
	// defaultImageMinDocs is the fewest documents from which a user's
	// loads look for an image (tuning.imageMinDocs): below it, the Get
	// of a head that is not there would be most of what a load saves.
	defaultImageMinDocs = 16
	// defaultImageMinBytes is the fewest bytes a load from the records
	// reads for the user's image to be written (tuning.imageMinBytes):
	// a lighter user's records are read in a fraction of a millisecond,
	// and images written for many such users cost their queries more
	// than the images save (with images from 64 synthetic documents the
	// 1M-fact evicting-cache benchmark's p99 went from 1.5 to 7.5 ms while
	// they were written). It is about what 256 short facts read (430
	// bytes each: measured); a conversation's long messages reach it in
	// fewer documents (190 messages of a BEAM conversation read 830 KB).
	defaultImageMinBytes = 112 << 10
	// imageMaxDocs bounds the users an image is written for: it is
	// written holding the user's lock, for a time that grows with the
	// user.
	imageMaxDocs = 200_000
	// defaultImageMaxBytes bounds the users an image is written for by
	// what a load from their records reads (tuning.imageMaxBytes), and an
	// image by three times that: the image is one batch, and a vector
	// index's image is up to 2.3 times its records (float32 vectors and
	// codes, where the records hold half precision), so a 200k-document
	// user of dense vectors would make a batch of 400 MB.
	defaultImageMaxBytes = 32 << 20
	// imageChunkBytes is the size of a chunk (the last of a part may be
	// shorter): large enough that the chunks are few, small enough that
	// none is a large part of a memtable. A reader requires every chunk
	// but the last to be this long, so a change of it is a change of the
	// image's format (imageVersion).
	imageChunkBytes = 256 << 10
	// blobRangeChunks is the chunks a goroutine reads of a large part
	// (see imageReader.blob): 2 MB, some milliseconds of decompression.
	blobRangeChunks = 8
	// imageVersion is the first byte of a head (7: a vector index with
	// a graph images its vectors as it holds them, sparse or dense; 6:
	// every keyspace imaged as its index, the document map too; 5: all but the document map;
	// 4: not the intervals either; 3: BM25 and the graph; 2: BM25 alone; a
	// head of another version is refused, and the image replaced).
	imageVersion = 7
	// imageQueue bounds the images waiting to be written; a request
	// beyond it is dropped (the next load asks again).
	imageQueue = 8
	// defaultCloseImages bounds the time Close spends writing the images
	// of the users this session wrote (tuning.closeImages): an image
	// takes a load's worth of work, milliseconds for a user of a
	// thousand facts, so this is some hundreds of users; those left are
	// loaded from their records next time.
	defaultCloseImages = time.Second
)

// errImageDamaged: an image disagrees with its head (a chunk missing or
// out of order, a record cut short). The load that meets it starts over
// from the records. (The bytes themselves are Pebble's to check: every
// block it reads from a file is checksummed.)
var errImageDamaged = fmt.Errorf("%w: index image", ErrCorrupt)

// errImageOutdated: a head of another image version (one written before
// format 11): refused like a damaged image, but not worth a warning.
var errImageOutdated = fmt.Errorf("%w: of another version", errImageDamaged)

// imageHead is what a head records of each imaged keyspace, in
// kv.ImagedSubs order: how many chunks and bytes its part of the image
// holds.
type imageHead struct {
	chunks, bytes []uint64
}

func appendImageHead(dst []byte, h *imageHead) []byte {
	dst = append(dst, imageVersion)
	for i := range h.chunks {
		dst = binary.AppendUvarint(dst, h.chunks[i])
		dst = binary.AppendUvarint(dst, h.bytes[i])
	}
	return dst
}

func decodeImageHead(v []byte) (imageHead, error) {
	n := len(kv.ImagedSubs())
	h := imageHead{chunks: make([]uint64, n), bytes: make([]uint64, n)}
	if len(v) == 0 {
		return h, fmt.Errorf("%w: empty head", errImageDamaged)
	}
	if v[0] != imageVersion {
		return h, fmt.Errorf("%w: head version %d", errImageOutdated, v[0])
	}
	v = v[1:]
	for i := range n {
		for _, p := range []*uint64{&h.chunks[i], &h.bytes[i]} {
			x, w := binary.Uvarint(v)
			if w <= 0 {
				return h, fmt.Errorf("%w: head truncated", errImageDamaged)
			}
			*p, v = x, v[w:]
		}
	}
	if len(v) != 0 {
		return h, fmt.Errorf("%w: head has %d bytes after its counts", errImageDamaged, len(v))
	}
	return h, nil
}

// imageChunkKey is chunk i of the imaged keyspace sub: 'p' 0x01 sub i.
func imageChunkKey(chunks []byte, sub kv.Sub, i uint64) []byte {
	k := append(append(make([]byte, 0, len(chunks)+5), chunks...), byte(sub))
	return kv.AppendUint32(k, uint32(i))
}

// indexImage builds the image of keyspace sub (one of kv.ImagedSubs) of
// user from the records r holds: the index loaded from them, imaged. A
// user without a vector index (Load's ErrNotFound) has an empty one.
func (s *indexSet) indexImage(ctx context.Context, r kv.Reader, user string, sub kv.Sub, m userMeta) ([]byte, error) {
	prefix := kv.UserKey(user, sub)
	switch sub {
	case kv.SubDoc:
		return appendDocImage(ctx, nil, r, user, m)
	case kv.SubBM25:
		bm, err := bm25.Load(ctx, r, prefix, s.bmO)
		if err != nil {
			return nil, err
		}
		return bm.AppendImage(nil), nil
	case kv.SubVector:
		ho := s.hnswO
		ho.Capacity = int(m.Doc)
		vec, err := hnsw.Load(ctx, r, prefix, ho)
		if errors.Is(err, hnsw.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return vec.AppendImage(nil), nil
	case kv.SubTemporal:
		tmp, err := temporal.Load(ctx, r, prefix)
		if err != nil {
			return nil, err
		}
		return tmp.AppendImage(nil), nil
	case kv.SubGraph:
		g, err := graph.LoadSized(ctx, r, prefix, int(m.Doc))
		if err != nil {
			return nil, err
		}
		return g.AppendImage(nil), nil
	}
	return nil, fmt.Errorf("memor: keyspace %c is not imaged", byte(sub))
}

// imageReader reads the parts of a user's image.
type imageReader struct {
	r    kv.Reader
	head imageHead
	// chunks: the prefix of each imaged keyspace's chunks.
	chunks [][]byte
}

// openImage returns a reader of user's image through r, or nil when the
// user has none.
func openImage(r kv.Reader, user string) (*imageReader, error) {
	v, err := r.Get(kv.ImageHead(user))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(v) > 0 && v[0] == imageClaimVersion {
		return nil, nil // being built (see writeImage)
	}
	h, err := decodeImageHead(v)
	if err != nil {
		return nil, err
	}
	ir := &imageReader{r: r, head: h}
	cp := kv.ImageChunks(user)
	for _, sub := range kv.ImagedSubs() {
		ir.chunks = append(ir.chunks, append(append([]byte(nil), cp...), byte(sub)))
	}
	return ir, nil
}

// blob returns the image of keyspace sub: its chunks joined, checked
// against the head (which counts its chunks and bytes: every chunk but
// the last is imageChunkBytes long). The bytes are the caller's.
//
// A large part is read in ranges of blobRangeChunks chunks at once when
// r may be read concurrently (the store): Pebble's decompression of the
// blocks is most of the read, and a 25,000-fact user's vectors (12 MB)
// were read by one goroutine for 30 ms while the load's other parts
// finished in under 10, leaving a core idle.
func (ir *imageReader) blob(ctx context.Context, sub kv.Sub) ([]byte, error) {
	i := slices.Index(kv.ImagedSubs(), sub)
	cp := ir.chunks[i]
	chunks, size := ir.head.chunks[i], ir.head.bytes[i]
	if chunks != (size+imageChunkBytes-1)/imageChunkBytes {
		return nil, fmt.Errorf("%w: %c has %d chunks for %d bytes", errImageDamaged, byte(sub), chunks, size)
	}
	out := make([]byte, size)
	// read copies chunks [lo, hi) into out, checking that each is where
	// it belongs and of its length; the last range reads to the end of
	// the part's keys, so a chunk beyond the head's is damage too.
	read := func(lo, hi uint64) error {
		next := lo
		take := func(ck, cv []byte) error {
			at := next * imageChunkBytes
			if len(ck) != len(cp)+4 || uint64(binary.BigEndian.Uint32(ck[len(cp):])) != next ||
				next >= chunks || uint64(len(cv)) != min(imageChunkBytes, size-at) {
				return fmt.Errorf("%w: chunk %d of %c out of place", errImageDamaged, next, byte(sub))
			}
			copy(out[at:], cv)
			next++
			return nil
		}
		var err error
		if lo == 0 && hi == chunks {
			err = ir.r.Scan(ctx, cp, take)
		} else {
			// (Only the store is read in ranges: see below.)
			db := ir.r.(*kv.DB)
			end := kv.PrefixEnd(cp)
			if hi < chunks {
				end = kv.AppendUint32(slices.Clip(cp), uint32(hi))
			}
			err = db.ScanRange(ctx, kv.AppendUint32(slices.Clip(cp), uint32(lo)), end, take)
		}
		if err == nil && next != hi {
			err = fmt.Errorf("%w: %c holds %d chunks of %d to %d, its head says %d", errImageDamaged, byte(sub), next-lo, lo, hi, chunks)
		}
		return err
	}
	if _, atOnce := ir.r.(*kv.DB); !atOnce || chunks < 2*blobRangeChunks {
		if err := read(0, chunks); err != nil {
			return nil, err
		}
		return out, nil
	}
	ranges := (chunks + blobRangeChunks - 1) / blobRangeChunks
	errs := make([]error, ranges)
	var wg sync.WaitGroup
	for j := range ranges {
		wg.Go(func() {
			errs[j] = read(j*blobRangeChunks, min(chunks, (j+1)*blobRangeChunks))
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// writeImage writes user's image from the store, unless the user has one
// (and not replace: a load found it damaged) or has fewer documents than
// tuning.imageMinDocs or more than imageMaxDocs.
//
// The image is built outside the user's lock, from a snapshot, so that
// the user's writes and loads do not wait for it (3 to 19 ms for a
// 1,000-fact user, while a write of the user waited). Under the lock it
// sets the head to a claim (claimImage) and takes the snapshot;
// every write under an imaged keyspace, a Forget or an eviction deletes
// the head in its batch (see kv/image.go), so if the claim is still the
// head when the image is built, under the lock again, no write came
// between the snapshot and now, and the image was built from what the
// store holds. Otherwise it is dropped: the next load asks again. The commit
// is not synced: an image lost to a crash costs a load from the records,
// and a later write's deletion of its head is after it in the log.
func (e *Engine) writeImage(ctx context.Context, user string, replace bool) error {
	snap, claim, m, err := e.claimImage(user, replace)
	if err != nil || snap == nil {
		return err
	}
	defer snap.Close()
	// settled: the claim is no longer ours to release (the image
	// committed over it, or a write deleted it).
	settled := false
	defer func() {
		if !settled {
			e.releaseImageClaim(user, claim)
		}
	}()
	b := e.db.NewBatch()
	defer b.Close()
	cp := kv.ImageChunks(user)
	if err := b.DeleteRange(cp, kv.PrefixEnd(cp)); err != nil {
		return err
	}
	subs := kv.ImagedSubs()
	h := imageHead{chunks: make([]uint64, len(subs)), bytes: make([]uint64, len(subs))}
	for i, sub := range subs {
		img, err := e.idx.indexImage(ctx, snap, user, sub, m)
		if errors.Is(err, errDocsNotHeld) {
			e.log.Debug("memor: a user's document map has a record it would not hold; its loads read the records", "user", user, "err", err)
			return nil
		}
		if err != nil {
			return err
		}
		if b.Len()+len(img) > 3*e.tune.imageMaxBytes {
			e.log.Debug("memor: a user's index image would be too large; its loads read the records", "user", user)
			return nil
		}
		// Cut into chunks; the head counts its bytes.
		h.bytes[i] = uint64(len(img))
		for len(img) > 0 {
			n := min(len(img), imageChunkBytes)
			if err := b.Set(imageChunkKey(cp, sub, h.chunks[i]), img[:n]); err != nil {
				return err
			}
			h.chunks[i]++
			img = img[n:]
		}
	}
	if err := b.Set(kv.ImageHead(user), appendImageHead(nil, &h)); err != nil {
		return err
	}
	if e.hookImageBuilt != nil {
		e.hookImageBuilt(user)
	}
	unlock := e.lockUser(user)
	defer unlock()
	if v, err := e.db.Get(kv.ImageHead(user)); err != nil || !bytes.Equal(v, claim) {
		if err != nil && !errors.Is(err, kv.ErrNotFound) {
			return err
		}
		settled = true
		e.log.Debug("memor: a user was written while its index image was built; the image is dropped", "user", user)
		return nil
	}
	if err := b.CommitNoSync(); err != nil {
		return err
	}
	settled = true
	return nil
}

// imageClaimVersion is the first byte of a head that claims the user's
// image for a writer building it (see writeImage): a load finds no
// image there, a writer none to keep.
const imageClaimVersion = 0

// claimImage decides, under user's lock, whether the user's image is to
// be written (snap nil if not) and, if so, sets its head to a claim the
// writer alone holds and returns it with a snapshot taken after it and
// the user's counters.
func (e *Engine) claimImage(user string, replace bool) (snap *kv.Snapshot, claim []byte, m userMeta, err error) {
	unlock := e.lockUser(user)
	defer unlock()
	switch v, err := e.db.Get(kv.ImageHead(user)); {
	case err == nil && !replace && (len(v) == 0 || v[0] != imageClaimVersion):
		return nil, nil, m, nil
	case err == nil:
	case !errors.Is(err, kv.ErrNotFound):
		return nil, nil, m, err
	}
	if m, err = loadMeta(e.db, user); err != nil {
		return nil, nil, m, err
	}
	if m.Doc < uint32(e.tune.imageMinDocs) || m.Doc > imageMaxDocs {
		// (Whether the user's records are heavy enough is the
		// requester's to judge: it read them.)
		return nil, nil, m, nil
	}
	claim = kv.AppendUint64([]byte{imageClaimVersion}, e.imageClaims.Add(1))
	if err := e.setImageHead(user, claim); err != nil {
		return nil, nil, m, err
	}
	return e.db.Snapshot(), claim, m, nil
}

// releaseImageClaim deletes user's head if it is still claim: a build
// that failed or was too large leaves no claim behind. (One left by a
// crash is harmless: loads find no image there, and the next writer
// replaces it.)
func (e *Engine) releaseImageClaim(user string, claim []byte) {
	unlock := e.lockUser(user)
	defer unlock()
	if v, err := e.db.Get(kv.ImageHead(user)); err == nil && bytes.Equal(v, claim) {
		if err := e.setImageHead(user, nil); err != nil {
			e.log.Debug("memor: cannot release a user's index image claim", "user", user, "err", err)
		}
	}
}

// setImageHead sets user's head to v, or deletes it if v is nil, in a
// commit of its own, not synced (as an image's).
func (e *Engine) setImageHead(user string, v []byte) error {
	b := e.db.NewBatch()
	defer b.Close()
	var err error
	if v == nil {
		err = b.Delete(kv.ImageHead(user))
	} else {
		err = b.Set(kv.ImageHead(user), v)
	}
	if err != nil {
		return err
	}
	return b.CommitNoSync()
}

// imageWriter writes the images loads asked for, one at a time, in the
// background. Close writes those already asked for before the store
// closes (at most imageQueue), then those of the users written since
// their indexes were loaded with (or asked for) an image (rewrite).
type imageWriter struct {
	e       *Engine
	mu      sync.Mutex
	pending map[string]bool
	queue   chan imageRequest
	wg      sync.WaitGroup
	// written: the users whose image a write of this session deleted
	// (and whose image was worth writing: userIndex.imaged), each with
	// the number of its last write, so that Close writes the most recent
	// first. Only a load from the records asks for an image, so without
	// it a user written after their load would have none at the next
	// Open, whose first query would read the records.
	written map[string]uint64
	writes  uint64
}

type imageRequest struct {
	user    string
	replace bool // the image present is damaged
}

func newImageWriter(e *Engine) *imageWriter {
	w := &imageWriter{e: e, pending: map[string]bool{}, queue: make(chan imageRequest, imageQueue), written: map[string]uint64{}}
	w.wg.Go(w.run)
	return w
}

// request asks for user's image (a new one if replace); it never blocks.
func (w *imageWriter) request(user string, replace bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending[user] {
		return
	}
	select {
	case w.queue <- imageRequest{user, replace}:
		w.pending[user] = true
	default:
	}
}

// noteWritten records that a write of user deleted its image.
func (w *imageWriter) noteWritten(user string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	w.written[user] = w.writes
}

// forgot drops user from written: a Forget leaves nothing to image.
func (w *imageWriter) forgot(user string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.written, user)
}

// rewrite writes, one at a time from the most recently written, the
// images of the users written (see written) that have none, for at most
// budget: Close's, once the store takes no more writes and the queue is
// done. A build the budget cuts short is dropped (its claim released), as
// is one for a user with too few documents or too many.
func (w *imageWriter) rewrite(budget time.Duration) {
	w.mu.Lock()
	users := slices.SortedFunc(maps.Keys(w.written), func(a, b string) int { return cmp.Compare(w.written[b], w.written[a]) })
	clear(w.written)
	w.mu.Unlock()
	if len(users) == 0 || budget <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	for i, user := range users {
		if ctx.Err() != nil {
			w.e.log.Debug("memor: Close's budget for index images ran out; the users left are loaded from their records", "left", len(users)-i)
			return
		}
		if err := w.write(ctx, imageRequest{user: user}); err != nil && ctx.Err() == nil {
			return // (logged; a failed store fails them all)
		}
	}
}

func (w *imageWriter) run() {
	for {
		select {
		case r := <-w.queue:
			_ = w.write(context.Background(), r)
		case <-w.e.closing:
			for {
				select {
				case r := <-w.queue:
					_ = w.write(context.Background(), r)
				default:
					return
				}
			}
		}
	}
}

// write writes the image r asks for, logging a failure, which it returns.
func (w *imageWriter) write(ctx context.Context, r imageRequest) error {
	user := r.user
	w.mu.Lock()
	delete(w.pending, user)
	w.mu.Unlock()
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = w.e.panicError(p, "write image", user)
			}
		}()
		return w.e.writeImage(ctx, user, r.replace)
	}()
	if err != nil && ctx.Err() == nil {
		w.e.log.Warn("memor: cannot write a user's index image; its loads read the records", "user", user, "err", err)
	}
	return err
}
