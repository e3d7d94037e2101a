package bm25

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"unsafe"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/memor-db/memor/internal/memsize"
	"github.com/memor-db/memor/kv"
)

// Errors returned by this package; match them with errors.Is.
var (
	// ErrCorrupt reports persisted bytes that are not a valid index.
	ErrCorrupt = errors.New("bm25: corrupt index data")
	// ErrMismatch reports a difference between the in-memory index and the
	// store, found by [Index.Check].
	ErrMismatch = errors.New("bm25: index differs from the store")
	// ErrTooLong reports a document with more than 2³²−1 terms.
	ErrTooLong = errors.New("bm25: document too long")
)

// Default BM25 parameters. They are the values of Robertson & Zaragoza, "The
// Probabilistic Relevance Framework: BM25 and Beyond", Foundations and
// Trends in IR 3(4), 2009, §3.4 (k1 in [1.2, 2], b = 0.75), and the defaults
// of Lucene's BM25Similarity, Elasticsearch and bleve (search/util.go).
const (
	DefaultK1 = 1.2
	DefaultB  = 0.75
)

// Options tunes BM25 scoring. The zero value selects the defaults.
type Options struct {
	// K1 controls term-frequency saturation: the larger, the more a repeated
	// term adds. Zero, negative, NaN or infinite selects [DefaultK1].
	K1 float64
	// B controls document-length normalisation, from 0 (none) to 1 (full).
	// Zero or anything outside (0, 1] selects [DefaultB]; pass a tiny
	// positive value such as 1e-9 to all but disable normalisation.
	B float64
	// Capacity is how many documents [Load] expects (a hint; an upper
	// bound such as the caller's document count is fine): the dictionary
	// is sized once for as many terms (most documents of a user's memory
	// bring a term of their own: a name, a number) instead of grown by
	// doubling and rehashing as terms come.
	Capacity int
}

func (o Options) withDefaults() Options {
	if !(o.K1 > 0) || math.IsInf(o.K1, 0) {
		o.K1 = DefaultK1
	}
	if !(o.B > 0 && o.B <= 1) {
		o.B = DefaultB
	}
	return o
}

// posting is one term's postings list: the documents that contain the term
// and, aligned with them in ascending document order, its frequency in each
// (tfs[i] belongs to the i-th smallest document of docs).
//
// A posting that has only ever held one document keeps it in one, with docs
// nil: most terms of a corpus occur once (an object's name, a number), and
// a bitmap costs six allocations. The second document moves both into a
// bitmap, which stays however few documents remain.
type posting struct {
	docs *roaring.Bitmap
	one  uint32 // the document, while docs is nil and tfs is not empty
	tfs  []uint32
	// maxTF bounds every frequency in tfs from above and minDL the length
	// of every document in docs from below. Deletes leave them as they
	// are: they stay bounds, which is all Search's pruning needs.
	maxTF, minDL uint32
	// blocks, for a posting that has grown to blockMin documents, holds
	// the same two bounds per window-sized block of document IDs that has
	// postings of the term, sorted by block (see Search's block-max
	// pruning). Shorter postings are not worth skipping in, and do with
	// the bounds of the whole posting.
	blocks []blockBound
}

// blockBound bounds a term's postings in one block of window document IDs
// (those with ID >> windowShift == blk).
type blockBound struct {
	blk          uint32
	maxTF, minDL uint32
}

// blockMin is the posting length from which a term keeps per-block bounds:
// below it, walking the whole posting costs a few microseconds.
const blockMin = 512

// insert adds an absent document of length dl (in ID order it is an
// append, the fast path).
func (p *posting) insert(doc, tf, dl uint32) {
	p.maxTF = max(p.maxTF, tf)
	p.minDL = min(p.minDL, dl)
	if p.blocks != nil {
		p.blocks = addBound(p.blocks, doc>>windowShift, tf, dl)
	}
	if p.docs == nil {
		if len(p.tfs) == 0 {
			p.one = doc
			p.tfs = append(p.tfs, tf)
			return
		}
		p.docs = roaring.New()
		p.docs.Add(p.one)
	}
	if p.docs.IsEmpty() || doc > p.docs.Maximum() {
		// Documents mostly arrive in ID order: appending is the fast path.
		p.docs.Add(doc)
		p.tfs = append(p.tfs, tf)
		return
	}
	i := p.docs.Rank(doc) // doc is absent: the count of smaller documents
	p.docs.Add(doc)
	p.tfs = slices.Insert(p.tfs, int(i), tf)
}

// addBound widens block blk's bounds to cover a posting (tf, dl).
func addBound(bs []blockBound, blk, tf, dl uint32) []blockBound {
	i := len(bs)
	if i == 0 || bs[i-1].blk < blk {
		return append(bs, blockBound{blk, tf, dl})
	}
	if bs[i-1].blk != blk {
		i, _ = slices.BinarySearchFunc(bs, blk, func(b blockBound, blk uint32) int { return cmpUint32(b.blk, blk) })
		if bs[i].blk != blk {
			return slices.Insert(bs, i, blockBound{blk, tf, dl})
		}
	} else {
		i--
	}
	bs[i].maxTF = max(bs[i].maxTF, tf)
	bs[i].minDL = min(bs[i].minDL, dl)
	return bs
}

// buildBounds computes p.blocks from the postings (the lengths of the
// documents are in the pages).
func (ix *Index) buildBounds(p *posting) {
	p.blocks = make([]blockBound, 0, 16)
	i := 0
	p.iterate(func(doc uint32) bool {
		p.blocks = addBound(p.blocks, doc>>windowShift, p.tfs[i], ix.docLen(doc))
		i++
		return true
	})
}

// iterate calls fn with the posting's documents in ascending order until
// fn returns false.
func (p *posting) iterate(fn func(doc uint32) bool) {
	if p.docs != nil {
		p.docs.Iterate(fn)
	} else if len(p.tfs) > 0 {
		fn(p.one)
	}
}

// len returns the number of documents of the posting by its frequencies.
func (p *posting) len() int { return len(p.tfs) }

// card returns the number of documents of the posting by its documents
// (for Check: equal to len in a sound index).
func (p *posting) card() uint64 {
	if p.docs == nil {
		return 1
	}
	return p.docs.GetCardinality()
}

func (p *posting) remove(doc uint32) {
	if p.docs == nil {
		p.tfs = p.tfs[:0] // doc is p.one
		return
	}
	i := int(p.docs.Rank(doc)) - 1
	p.docs.Remove(doc)
	p.tfs = slices.Delete(p.tfs, i, i+1)
}

// term is a dictionary entry; a freed entry has no postings (len(tfs) == 0).
type term struct {
	text string
	posting
}

// termRef is one distinct term of a document, by dictionary ID.
type termRef struct{ id, tf uint32 }

// Documents are kept in pages of pageSize so that sparse IDs cost a page, not
// a slot for every smaller ID, and a length lookup is two loads. A page is
// 3.5 KB: small, because thousands of users' small indexes stay loaded (a
// 1024-document page cost each of them 28 KB).
const (
	pageShift = 7
	pageSize  = 1 << pageShift
	pageMask  = pageSize - 1
)

type docPage struct {
	lens  [pageSize]uint32
	terms [pageSize][]termRef // sorted by id
}

// Index is one user's BM25 full-text index, held in memory and persisted as
// one record per document (see the package documentation).
//
// An Index is safe for concurrent use: searches run in parallel, Add and
// Delete take an exclusive lock for the in-memory update only. The
// [kv.Writer] passed to Add and Delete is used by that call alone, so
// callers must not share one batch between concurrent calls.
type Index struct {
	prefix []byte
	k1, b  float64

	mu    sync.RWMutex
	ids   map[string]uint32
	terms []term
	free  []uint32 // freed term IDs, reused before growing terms
	pages []*docPage
	live  *roaring.Bitmap
	total uint64 // sum of document lengths
	// Documents' term lists and new postings' first frequency are carved
	// from chunks: a bulk import of short documents would otherwise cost
	// two small allocations per document.
	refSlab slab[termRef]
	tfSlab  slab[uint32]

	// lazy is the dictionary of the image the index was loaded from
	// (LoadImage) while some of its postings are not decoded; noRefs:
	// the documents' term lists are not built (an image holds none).
	// Both until materializeLocked.
	lazy   *lazyTerms
	noRefs bool

	// acct is Bytes' account (memory.go). idsHint is the size the
	// dictionary was made for, idsPeak the most terms it has held (a map
	// does not shrink), pageCount the pages allocated.
	acct             account
	idsHint, idsPeak int
	pageCount        int

	noPrune bool // tests and benchmarks: score every posting (no MaxScore)
	// blockMin is the constant blockMin but for tests, which lower it to
	// give small corpora per-block bounds.
	blockMin int
}

// New returns an empty index whose keys start with prefix (copied).
func New(prefix []byte, o Options) *Index {
	o = o.withDefaults()
	ix := &Index{
		prefix:   bytes.Clone(prefix),
		k1:       o.K1,
		b:        o.B,
		ids:      map[string]uint32{},
		live:     roaring.New(),
		blockMin: blockMin,
	}
	ix.measureLocked()
	return ix
}

// Options returns the parameters in force, defaults filled in.
func (ix *Index) Options() Options { return Options{K1: ix.k1, B: ix.b} }

// Len returns the number of documents in the index.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return int(ix.live.GetCardinality())
}

// scratch holds the per-call buffers of Add and Search, pooled so that a
// steady stream of calls allocates little.
type scratch struct {
	tok     tokenizer
	arena   []byte  // token bytes, back to back
	ends    []int   // end offset in arena of each token
	order   []int   // token indexes, sorted by token bytes
	counts  []count // distinct tokens and their frequency
	key     []byte
	val     []byte
	acc     []float64 // window slots per query term
	contrib []float64 // per query term, one document's looked-up share
	touched [window / 64]uint64
	cursors []cursor
	query   []qterm
	heap    topK
}

// count is a distinct token of a text (a slice of scratch.arena).
type count struct {
	b  []byte
	tf uint32
}

// scratchPool is shared by every index: a process with thousands of
// users' indexes loaded keeps a few scratches (each with a query window of
// 32 KB per term), not one per index between garbage collections.
var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func (ix *Index) getScratch() *scratch { return scratchPool.Get().(*scratch) }

func (ix *Index) putScratch(s *scratch) {
	// Keep the buffers, drop the references into this index's postings:
	// a pooled scratch must not keep a dropped index alive.
	for i := range s.cursors {
		s.cursors[i] = cursor{buf: s.cursors[i].buf}
	}
	scratchPool.Put(s)
}

// analyze tokenizes text into s.counts: its distinct terms in byte order
// with their frequencies. It returns the document length (number of terms).
func (s *scratch) analyze(text string) (uint64, error) {
	s.arena, s.ends, s.order, s.counts = s.arena[:0], s.ends[:0], s.order[:0], s.counts[:0]
	s.tok.run(text, func(t []byte) {
		s.arena = append(s.arena, t...)
		s.ends = append(s.ends, len(s.arena))
	})
	tok := func(i int) []byte {
		start := 0
		if i > 0 {
			start = s.ends[i-1]
		}
		return s.arena[start:s.ends[i]]
	}
	for i := range s.ends {
		s.order = append(s.order, i)
	}
	slices.SortFunc(s.order, func(a, b int) int { return bytes.Compare(tok(a), tok(b)) })
	for _, i := range s.order {
		t := tok(i)
		if n := len(s.counts); n > 0 && bytes.Equal(s.counts[n-1].b, t) {
			if s.counts[n-1].tf == math.MaxUint32 {
				return 0, ErrTooLong
			}
			s.counts[n-1].tf++
			continue
		}
		s.counts = append(s.counts, count{t, 1})
	}
	if uint64(len(s.ends)) > math.MaxUint32 {
		return 0, ErrTooLong
	}
	return uint64(len(s.ends)), nil
}

// WriteDoc writes the record that Add of a new document doc would write
// for an index with prefix, without an index: for a bulk import whose
// index is loaded (by [Load]) only when first searched.
func WriteDoc(w kv.Writer, prefix []byte, doc uint32, text string) error {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	_, err := s.writeDoc(w, prefix, doc, text)
	return err
}

// writeDoc analyzes text into s (see analyze), writes document doc's
// record and returns the document's length.
func (s *scratch) writeDoc(w kv.Writer, prefix []byte, doc uint32, text string) (uint32, error) {
	length, err := s.analyze(text)
	if err != nil {
		return 0, fmt.Errorf("bm25: add doc %d: %w", doc, err)
	}
	s.key = appendDocKey(s.key[:0], prefix, doc)
	s.val = appendCountsRecord(s.val[:0], uint32(length), s.counts)
	if err := w.Set(s.key, s.val); err != nil {
		return 0, fmt.Errorf("bm25: add doc %d: %w", doc, err)
	}
	return uint32(length), nil
}

// Add indexes text as document doc, replacing what doc held before, and
// writes the document's record to w. The in-memory index changes only if the
// write succeeds.
func (ix *Index) Add(w kv.Writer, doc uint32, text string) error {
	s := ix.getScratch()
	defer ix.putScratch(s)
	length, err := s.writeDoc(w, ix.prefix, doc, text)
	if err != nil {
		return err
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.materializeLocked()
	if ix.live.Contains(doc) {
		ix.removeLocked(doc)
	}
	refs := ix.refSlab.take(len(s.counts))
	for i, c := range s.counts {
		id, ok := ix.ids[string(c.b)]
		if !ok {
			id = ix.newTermLocked(string(c.b))
		}
		refs[i] = termRef{id, c.tf}
	}
	ix.insertLocked(doc, length, refs)
	ix.settleLocked()
	return nil
}

// appendCountsRecord is appendRecord over scratch counts, avoiding the
// string conversions.
func appendCountsRecord(dst []byte, length uint32, counts []count) []byte {
	dst = append(dst, recordVersion)
	dst = binary.AppendUvarint(dst, uint64(length))
	dst = binary.AppendUvarint(dst, uint64(len(counts)))
	for _, c := range counts {
		dst = binary.AppendUvarint(dst, uint64(len(c.b)))
		dst = append(dst, c.b...)
		dst = binary.AppendUvarint(dst, uint64(c.tf))
	}
	return dst
}

func (ix *Index) newTermLocked(text string) uint32 {
	p := posting{tfs: ix.tfSlab.take(1)[:0], minDL: math.MaxUint32}
	if n := len(ix.free); n > 0 {
		id := ix.free[n-1]
		ix.free = ix.free[:n-1]
		ix.terms[id] = term{text, p}
		ix.ids[text] = id
		ix.noteTerm(text)
		return id
	}
	id := uint32(len(ix.terms))
	ix.terms = append(ix.terms, term{text, p})
	ix.ids[text] = id
	ix.noteTerm(text)
	return id
}

// noteTerm counts a new dictionary entry's text (its posting is counted
// as it grows, the dictionary's tables by settleLocked).
func (ix *Index) noteTerm(text string) {
	ix.idsPeak = max(ix.idsPeak, len(ix.ids))
	ix.acct.Note(memsize.String(len(text)))
}

// insertLocked adds an absent document; refs become owned by the index.
func (ix *Index) insertLocked(doc, length uint32, refs []termRef) {
	sortRefs(refs)
	// The length first: buildBounds reads it.
	p := ix.pageLocked(doc)
	p.lens[doc&pageMask] = length
	p.terms[doc&pageMask] = refs
	// The account: a term list of its own, each posting's growth, two
	// bytes in the live set's array (estimates: walks count the slack of
	// the bitmaps' arrays).
	grew := 2
	if cap(refs) > slabMaxPiece {
		grew += memsize.Slice(cap(refs), termRefSize)
	}
	for _, r := range refs {
		t := &ix.terms[r.id].posting
		tfs, blocks, bitmap := cap(t.tfs), cap(t.blocks), t.docs != nil
		t.insert(doc, r.tf, length)
		if t.blocks == nil && len(t.tfs) >= ix.blockMin {
			ix.buildBounds(t)
		}
		if cap(t.tfs) != tfs || cap(t.blocks) != blocks || !bitmap && t.docs != nil {
			// Rare: a slice or the bitmap was (re)allocated.
			grew += postingCapBytes(cap(t.tfs), cap(t.blocks), t.docs != nil) - postingCapBytes(tfs, blocks, bitmap)
		}
		if t.docs != nil {
			grew += 2 // the document in the bitmap's array
			if !bitmap {
				grew += 2 // and the one it held before
			}
		}
	}
	ix.acct.Note(grew)
	ix.live.Add(doc)
	ix.total += uint64(length)
}

// sortRefs sorts a document's terms by ID: by insertion for the few terms
// of most documents (slices.SortFunc's calls of its comparison cost a load
// more than the work they order), else by slices.SortFunc.
func sortRefs(refs []termRef) {
	if len(refs) > 12 {
		slices.SortFunc(refs, func(a, b termRef) int { return cmpUint32(a.id, b.id) })
		return
	}
	for i := 1; i < len(refs); i++ {
		for j := i; j > 0 && refs[j].id < refs[j-1].id; j-- {
			refs[j], refs[j-1] = refs[j-1], refs[j]
		}
	}
}

// slab hands out small slices carved from shared chunks, each capped at
// its length so that growing one reallocates it rather than overwrite its
// neighbour. Chunks start small and double, so that a small index does not
// pin a large chunk. Not safe for concurrent use (the index's lock guards
// it).
type slab[T any] struct {
	free  []T
	chunk int // size of the last chunk
	held  int // bytes of the chunks made (Bytes' account)
}

// Slab chunks hold between slabMinChunk and slabMaxChunk elements; a
// request of more than slabMaxPiece gets an allocation of its own (which
// Bytes tells from a slab piece by its capacity).
const (
	slabMinChunk, slabMaxChunk = 16, 256
	slabMaxPiece               = slabMaxChunk / 4
)

func (s *slab[T]) take(n int) []T {
	if n > slabMaxPiece {
		return make([]T, n)
	}
	if len(s.free) < n {
		// A chunk holds at least n: the first chunks are smaller than the
		// largest request served from one (slabMaxPiece).
		s.chunk = min(slabMaxChunk, max(slabMinChunk, 2*s.chunk, n))
		s.free = make([]T, s.chunk)
		var zero T
		s.held += memsize.Slice(s.chunk, int(unsafe.Sizeof(zero)))
	}
	out := s.free[:n:n]
	s.free = s.free[n:]
	return out
}

func cmpUint32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (ix *Index) pageLocked(doc uint32) *docPage {
	pi := int(doc >> pageShift)
	if pi >= len(ix.pages) {
		ix.pages = append(ix.pages, make([]*docPage, pi+1-len(ix.pages))...)
	}
	if ix.pages[pi] == nil {
		ix.pages[pi] = new(docPage)
		ix.pageCount++
	}
	return ix.pages[pi]
}

// docLen returns the length of a live document.
func (ix *Index) docLen(doc uint32) uint32 {
	return ix.pages[doc>>pageShift].lens[doc&pageMask]
}

// docTerms returns the terms of a live document.
func (ix *Index) docTerms(doc uint32) []termRef {
	return ix.pages[doc>>pageShift].terms[doc&pageMask]
}

// removeLocked removes a live document from memory.
func (ix *Index) removeLocked(doc uint32) {
	p := ix.pages[doc>>pageShift]
	// The account: what freed terms and the term list held (a posting
	// that keeps documents keeps its capacity).
	freed := 0
	if refs := p.terms[doc&pageMask]; cap(refs) > slabMaxPiece {
		freed += memsize.Slice(cap(refs), termRefSize)
	}
	for _, r := range p.terms[doc&pageMask] {
		t := &ix.terms[r.id]
		t.remove(doc)
		if t.len() == 0 {
			freed += memsize.String(len(t.text)) + t.posting.bytes()
			delete(ix.ids, t.text)
			ix.terms[r.id] = term{}
			ix.free = append(ix.free, r.id)
		}
	}
	ix.acct.Note(-freed)
	ix.total -= uint64(p.lens[doc&pageMask])
	p.lens[doc&pageMask] = 0
	p.terms[doc&pageMask] = nil
	ix.live.Remove(doc)
}

// Delete removes document doc, deleting its record through w. Deleting an
// absent document does nothing.
func (ix *Index) Delete(w kv.Writer, doc uint32) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if !ix.live.Contains(doc) {
		return nil
	}
	ix.materializeLocked()
	var key [64]byte
	if err := w.Delete(appendDocKey(key[:0], ix.prefix, doc)); err != nil {
		return fmt.Errorf("bm25: delete doc %d: %w", doc, err)
	}
	ix.removeLocked(doc)
	ix.settleLocked()
	return nil
}

// Load rebuilds an index from the records under prefix. Source text is not
// needed: each record holds its document's terms and frequencies.
func Load(ctx context.Context, r kv.Reader, prefix []byte, o Options) (*Index, error) {
	ix := New(prefix, o)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if o.Capacity > 0 {
		ix.ids = make(map[string]uint32, o.Capacity)
		ix.idsHint = o.Capacity
		ix.terms = make([]term, 0, o.Capacity)
	}
	var terms []termBytes // reused: a term is copied only when new
	err := r.Scan(ctx, ix.prefix, func(k, v []byte) error {
		doc, err := ix.parseKey(k)
		if err != nil {
			return err
		}
		var length uint32
		length, terms, err = decodeRecordBytes(terms, v)
		if err != nil {
			return fmt.Errorf("doc %d: %w", doc, err)
		}
		refs := ix.refSlab.take(len(terms))
		for i, t := range terms {
			id, ok := ix.ids[string(t.term)]
			if !ok {
				id = ix.newTermLocked(string(t.term))
			}
			refs[i] = termRef{id, t.tf}
		}
		// Keys come in document order, and each document once, so every
		// posting insert is an append.
		ix.insertLocked(doc, length, refs)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bm25: load: %w", err)
	}
	ix.measureLocked()
	return ix, nil
}

// parseKey returns the document of a record key under the prefix.
func (ix *Index) parseKey(k []byte) (uint32, error) {
	rest, ok := bytes.CutPrefix(k, ix.prefix)
	if !ok || len(rest) != 5 || rest[0] != tagDoc {
		return 0, fmt.Errorf("%w: unexpected key %q", ErrCorrupt, k)
	}
	d := kv.NewDecoder(rest[1:])
	return d.Uint32(), nil
}
