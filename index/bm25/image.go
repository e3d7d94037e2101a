package bm25

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// An image is an index serialised in the inverted form a query reads:
// the documents' lengths, then the dictionary sorted by term, then each
// term's postings. [LoadImage] reads the lengths and indexes the
// dictionary, and decodes a term's postings only when a search, an
// explanation or a write first needs them: a query of an index just
// loaded decodes the postings of its own terms, not the whole index (a
// load from the records builds every posting of every document). The
// engine keeps images in its users' index images; the records stay the
// truth, and an image is rebuilt from them.
//
// Layout (every integer a uvarint):
//
//	0x01                        image version
//	n, then n × (doc − previous doc, length)   live documents, ascending
//	t, then t × (len, term, df, postings bytes) dictionary, terms ascending
//	per term, in dictionary order: df × (doc − previous doc, tf)
const imageVersion = 1

// lazyTerms is the dictionary of an image whose postings are not all
// decoded; the index's lock guards it.
type lazyTerms struct {
	img   []byte
	terms []lazyTerm // sorted by text
	left  int        // terms not decoded yet
}

// lazyTerm is a dictionary entry of an image: its text and postings as
// offsets into the image, and its ID once decoded.
type lazyTerm struct {
	text, textLen uint32
	post, postLen uint32
	df            uint32
	decoded       bool
	id            uint32
}

func (lt *lazyTerms) text(e *lazyTerm) []byte { return lt.img[e.text : e.text+e.textLen] }

// find returns the entry of term, if the image holds it.
func (lt *lazyTerms) find(term []byte) *lazyTerm {
	i := sort.Search(len(lt.terms), func(i int) bool { return bytes.Compare(lt.text(&lt.terms[i]), term) >= 0 })
	if i < len(lt.terms) && bytes.Equal(lt.text(&lt.terms[i]), term) {
		return &lt.terms[i]
	}
	return nil
}

// AppendImage appends the index's image to dst.
func (ix *Index) AppendImage(dst []byte) []byte {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.materializeLocked()
	dst = append(dst, imageVersion)
	dst = binary.AppendUvarint(dst, ix.live.GetCardinality())
	prev := uint32(0)
	ix.live.Iterate(func(doc uint32) bool {
		dst = binary.AppendUvarint(dst, uint64(doc-prev))
		dst = binary.AppendUvarint(dst, uint64(ix.docLen(doc)))
		prev = doc
		return true
	})
	ids := make([]uint32, 0, len(ix.ids))
	for _, id := range ix.ids {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b uint32) int { return strings.Compare(ix.terms[a].text, ix.terms[b].text) })
	var post []byte
	postings := make([][]byte, len(ids))
	for i, id := range ids {
		start := len(post)
		p := &ix.terms[id].posting
		j, prev := 0, uint32(0)
		p.iterate(func(doc uint32) bool {
			post = binary.AppendUvarint(post, uint64(doc-prev))
			post = binary.AppendUvarint(post, uint64(p.tfs[j]))
			prev = doc
			j++
			return true
		})
		postings[i] = post[start:]
	}
	dst = binary.AppendUvarint(dst, uint64(len(ids)))
	for i, id := range ids {
		t := &ix.terms[id]
		dst = binary.AppendUvarint(dst, uint64(len(t.text)))
		dst = append(dst, t.text...)
		dst = binary.AppendUvarint(dst, uint64(t.len()))
		dst = binary.AppendUvarint(dst, uint64(len(postings[i])))
	}
	return append(dst, post...)
}

// LoadImage returns the index img holds (see [Index.AppendImage]), keyed
// under prefix like one [Load] reads. img is checked whole, so that a
// damaged image fails here with [ErrCorrupt] and never in a later search;
// it must not be modified while the index lives.
func LoadImage(img, prefix []byte, o Options) (*Index, error) {
	ix := New(prefix, o)
	if len(img) == 0 || img[0] != imageVersion {
		return nil, fmt.Errorf("%w: image version %x", ErrCorrupt, img[:min(len(img), 1)])
	}
	at := 1
	uv := func(what string, max uint64) (uint64, error) {
		x, w := binary.Uvarint(img[at:])
		if w <= 0 || x > max {
			return 0, fmt.Errorf("%w: image: bad %s at byte %d", ErrCorrupt, what, at)
		}
		at += w
		return x, nil
	}
	n, err := uv("document count", uint64(len(img)))
	if err != nil {
		return nil, err
	}
	docs := make([]uint32, 0, n)
	lens := make([]uint32, 0, n) // the lengths, to check against the postings
	doc := uint64(0)
	for i := range n {
		d, err := uv("document", math.MaxUint32)
		if err != nil {
			return nil, err
		}
		if doc += d; doc > math.MaxUint32 || i > 0 && d == 0 {
			return nil, fmt.Errorf("%w: image: documents out of order", ErrCorrupt)
		}
		l, err := uv("length", math.MaxUint32)
		if err != nil {
			return nil, err
		}
		p := ix.pageLocked(uint32(doc))
		p.lens[doc&pageMask] = uint32(l)
		ix.total += l
		docs, lens = append(docs, uint32(doc)), append(lens, uint32(l))
	}
	ix.live.AddMany(docs)
	t, err := uv("term count", uint64(len(img)))
	if err != nil {
		return nil, err
	}
	lt := &lazyTerms{img: img, terms: make([]lazyTerm, 0, t), left: int(t)}
	var post uint64
	for range t {
		l, err := uv("term length", uint64(len(img)))
		if err != nil {
			return nil, err
		}
		if l == 0 || uint64(len(img)-at) < l {
			return nil, fmt.Errorf("%w: image: term overruns the image", ErrCorrupt)
		}
		e := lazyTerm{text: uint32(at), textLen: uint32(l)}
		at += int(l)
		if k := len(lt.terms); k > 0 && bytes.Compare(lt.text(&lt.terms[k-1]), lt.text(&e)) >= 0 {
			return nil, fmt.Errorf("%w: image: dictionary not sorted", ErrCorrupt)
		}
		df, err := uv("document frequency", n)
		if err != nil {
			return nil, err
		}
		pl, err := uv("postings length", uint64(len(img)))
		if err != nil {
			return nil, err
		}
		if df == 0 {
			return nil, fmt.Errorf("%w: image: term without postings", ErrCorrupt)
		}
		e.df, e.post, e.postLen = uint32(df), uint32(post), uint32(pl)
		post += pl
		lt.terms = append(lt.terms, e)
	}
	if uint64(len(img)-at) != post {
		return nil, fmt.Errorf("%w: image: postings hold %d bytes, the dictionary says %d", ErrCorrupt, len(img)-at, post)
	}
	// Every posting is checked now (documents live and ascending,
	// frequencies summing to each document's length), without building
	// it: a later decode cannot fail.
	sum := make([]uint64, len(docs))
	// A document's place in docs: from a table when the IDs are dense
	// (a user's are), else by binary search.
	var place []uint32
	if len(docs) > 0 && int(docs[len(docs)-1]-docs[0]) < 4*len(docs) {
		place = make([]uint32, docs[len(docs)-1]-docs[0]+1)
		for i := range place {
			place[i] = math.MaxUint32
		}
		for i, d := range docs {
			place[d-docs[0]] = uint32(i)
		}
	}
	for i := range lt.terms {
		e := &lt.terms[i]
		e.post += uint32(at)
		b := img[e.post : e.post+e.postLen]
		doc, j := uint64(0), 0
		for k := range e.df {
			d, w := binary.Uvarint(b)
			if w <= 0 || k > 0 && d == 0 {
				return nil, fmt.Errorf("%w: image: postings of %q", ErrCorrupt, lt.text(e))
			}
			b = b[w:]
			tf, w := binary.Uvarint(b)
			if w <= 0 || tf == 0 {
				return nil, fmt.Errorf("%w: image: postings of %q", ErrCorrupt, lt.text(e))
			}
			b = b[w:]
			doc += d
			if doc > math.MaxUint32 {
				return nil, fmt.Errorf("%w: image: postings of %q", ErrCorrupt, lt.text(e))
			}
			found := false
			if place != nil {
				if doc >= uint64(docs[0]) && doc-uint64(docs[0]) < uint64(len(place)) {
					at := place[doc-uint64(docs[0])]
					j, found = int(at), at != math.MaxUint32
				}
			} else {
				// Ascending: searched in what follows the last one.
				var k int
				k, found = slices.BinarySearch(docs[j:], uint32(doc))
				j += k
			}
			if !found {
				return nil, fmt.Errorf("%w: image: %q names document %d, not in the image", ErrCorrupt, lt.text(e), doc)
			}
			sum[j] += tf
		}
		if len(b) != 0 {
			return nil, fmt.Errorf("%w: image: postings of %q too long", ErrCorrupt, lt.text(e))
		}
	}
	for j := range docs {
		if sum[j] != uint64(lens[j]) {
			return nil, fmt.Errorf("%w: image: document %d has length %d, its postings %d", ErrCorrupt, docs[j], lens[j], sum[j])
		}
	}
	if len(lt.terms) > 0 {
		ix.lazy, ix.noRefs = lt, true
	}
	ix.measureLocked()
	return ix, nil
}

// decodeLocked builds the posting of e (not decoded), as Load's inserts
// of each document in ID order build it (ix.mu held).
func (ix *Index) decodeLocked(lt *lazyTerms, e *lazyTerm) uint32 {
	id := ix.newTermLocked(string(lt.text(e)))
	p := &ix.terms[id].posting
	if e.df > 1 {
		p.tfs = make([]uint32, 0, e.df)
	}
	b := lt.img[e.post : e.post+e.postLen]
	doc := uint32(0)
	for range e.df {
		d, w := binary.Uvarint(b) // checked by LoadImage
		b = b[w:]
		tf, w := binary.Uvarint(b)
		b = b[w:]
		doc += uint32(d)
		p.insert(doc, uint32(tf), ix.docLen(doc))
		if p.blocks == nil && len(p.tfs) >= ix.blockMin {
			ix.buildBounds(p)
		}
	}
	e.decoded, e.id = true, id
	ix.acct.Note(p.bytes())
	if lt.left--; lt.left == 0 {
		ix.lazy = nil
	}
	return id
}

// needs reports whether a term of the query s analysed is in the image
// and not decoded (ix.mu held, shared or not).
func (ix *Index) needs(s *scratch) bool {
	if ix.lazy == nil {
		return false
	}
	for _, c := range s.counts {
		if _, ok := ix.ids[string(c.b)]; !ok {
			if e := ix.lazy.find(c.b); e != nil && !e.decoded {
				return true
			}
		}
	}
	return false
}

// rlockDecoded read-locks the index with the postings of the query s
// analysed decoded: decoding them takes the lock exclusively, briefly,
// once per term.
func (ix *Index) rlockDecoded(s *scratch) {
	ix.mu.RLock()
	if !ix.needs(s) {
		return
	}
	ix.mu.RUnlock()
	ix.mu.Lock()
	if lt := ix.lazy; lt != nil {
		for _, c := range s.counts {
			if _, ok := ix.ids[string(c.b)]; !ok {
				if e := lt.find(c.b); e != nil && !e.decoded {
					ix.decodeLocked(lt, e)
				}
			}
		}
	}
	ix.settleLocked()
	ix.mu.Unlock()
	ix.mu.RLock()
}

// materializeLocked decodes every posting an image left undecoded and
// builds the documents' term lists, which writes and Check need (ix.mu
// held).
func (ix *Index) materializeLocked() {
	lt := ix.lazy
	if lt == nil && !ix.noRefs {
		return
	}
	if lt != nil {
		for i := range lt.terms {
			if e := &lt.terms[i]; !e.decoded {
				ix.decodeLocked(lt, e)
			}
		}
	}
	if !ix.noRefs {
		ix.measureLocked()
		return
	}
	// Each document's terms, by ID: counted, carved from the slab,
	// filled in ID order (so sorted).
	count := map[uint32]int{}
	for id := range ix.terms {
		ix.terms[id].iterate(func(doc uint32) bool { count[doc]++; return true })
	}
	refs := make(map[uint32][]termRef, len(count))
	for doc, n := range count {
		refs[doc] = ix.refSlab.take(n)[:0]
	}
	for id := range ix.terms {
		t := &ix.terms[id]
		j := 0
		t.iterate(func(doc uint32) bool {
			refs[doc] = append(refs[doc], termRef{uint32(id), t.tfs[j]})
			j++
			return true
		})
	}
	for doc, r := range refs {
		ix.pages[doc>>pageShift].terms[doc&pageMask] = r
	}
	ix.noRefs = false
	ix.measureLocked()
}

// tfOf returns the frequency of query term q.id in document d, from refs
// (d's term list) or, for an index loaded from an image whose term lists
// are not built, from the term's posting.
func (ix *Index) tfOf(refs []termRef, id, d uint32) (float64, bool) {
	if !ix.noRefs {
		return findTF(refs, id)
	}
	tf, ok := ix.terms[id].tf(d)
	return float64(tf), ok
}

// tf returns the frequency of the term in doc, if doc holds it.
func (p *posting) tf(doc uint32) (uint32, bool) {
	if p.docs == nil {
		if len(p.tfs) > 0 && p.one == doc {
			return p.tfs[0], true
		}
		return 0, false
	}
	if !p.docs.Contains(doc) {
		return 0, false
	}
	return p.tfs[p.docs.Rank(doc)-1], true
}
