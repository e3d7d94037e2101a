package temporal

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memor-db/memor/internal/memsize"
	"github.com/memor-db/memor/kv"
)

// Errors returned by this package; match them with errors.Is.
var (
	// ErrInvalidInterval reports an instant that cannot be stored: a
	// non-zero time outside the range of int64 Unix nanoseconds
	// (about 1678–2262).
	ErrInvalidInterval = errors.New("temporal: invalid interval")
	// ErrNilWriter reports a nil kv.Writer passed to a write method.
	ErrNilWriter = errors.New("temporal: nil writer")
	// ErrCorrupt reports a stored key or value that does not decode.
	ErrCorrupt = errors.New("temporal: corrupt index data")
	// ErrInconsistent reports a disagreement found by Check between the
	// store, the in-memory index and the visibility predicate.
	ErrInconsistent = errors.New("temporal: index inconsistent")
)

const (
	valueVersion = 1 // leading byte of every value; part of the file format
	valueLen     = 1 + 4*8

	openStart = math.MinInt64 // a zero ValidFrom / RecordedAt: −∞
	openEnd   = math.MaxInt64 // a zero ValidTo / ExpiredAt: +∞

	// minDirty is the delta size below which a query never rebuilds; below
	// it a brute-force scan of the delta costs less than a rebuild.
	minDirty = 256
	// dirtyShift bounds the delta at len(docs)>>dirtyShift before a query
	// rebuilds the snapshot structure.
	dirtyShift = 5

	// Docs are held in pages of pageSize consecutive IDs (the engine's doc
	// IDs are a per-user counter, so pages are dense): a put is two loads
	// and a store, where a map insert cost a hash, a probe and, during a
	// bulk import, repeated growth.
	pageShift = 5
	pageSize  = 1 << pageShift
	pageMask  = pageSize - 1
)

// docPage holds the intervals of pageSize consecutive docs.
type docPage struct {
	q [pageSize]quad
	// pos is 1 + the index in delta of the doc's entry, 0 when the doc is
	// not in the delta.
	pos [pageSize]uint32
	has uint32 // bit i: doc i of the page is held
}

// Interval is the four instants of one fact version (DESIGN §2). A zero
// ValidTo or ExpiredAt is open (+∞); a zero ValidFrom or RecordedAt is −∞.
type Interval struct {
	ValidFrom, ValidTo, RecordedAt, ExpiredAt time.Time
}

// VisibleAt reports whether iv is visible at (validAt, knownAt): the
// reference predicate of DESIGN §2 that the index answers for many
// intervals at once.
func (iv Interval) VisibleAt(validAt, knownAt time.Time) bool {
	return !knownAt.Before(iv.RecordedAt) && (iv.ExpiredAt.IsZero() || knownAt.Before(iv.ExpiredAt)) &&
		!validAt.Before(iv.ValidFrom) && (iv.ValidTo.IsZero() || validAt.Before(iv.ValidTo))
}

// quad is an Interval as int64 nanoseconds with the open sentinels.
type quad struct{ vf, vt, ra, ea int64 }

func (q quad) visible(v, k int64) bool {
	return q.ra <= k && k < q.ea && q.vf <= v && v < q.vt
}

func toNanos(t time.Time, zero int64) (int64, bool) {
	if t.IsZero() {
		return zero, true
	}
	n := t.UnixNano()
	if n == math.MinInt64 || n == math.MaxInt64 || !time.Unix(0, n).Equal(t) {
		return 0, false
	}
	return n, true
}

// queryNanos maps a query instant onto the stored scale, saturating
// instants beyond the storable range (they compare the same way against
// every storable instant).
func queryNanos(t time.Time) int64 {
	switch {
	case t.IsZero():
		return openStart
	case t.Before(time.Unix(0, math.MinInt64+1)):
		return math.MinInt64 + 1
	case t.After(time.Unix(0, math.MaxInt64-1)):
		return math.MaxInt64 - 1
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == openStart || n == openEnd {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func toQuad(iv Interval) (quad, error) {
	var q quad
	var ok [4]bool
	q.vf, ok[0] = toNanos(iv.ValidFrom, openStart)
	q.vt, ok[1] = toNanos(iv.ValidTo, openEnd)
	q.ra, ok[2] = toNanos(iv.RecordedAt, openStart)
	q.ea, ok[3] = toNanos(iv.ExpiredAt, openEnd)
	if !ok[0] || !ok[1] || !ok[2] || !ok[3] {
		return quad{}, fmt.Errorf("%w: instant out of range in %+v", ErrInvalidInterval, iv)
	}
	return q, nil
}

func (q quad) interval() Interval {
	return Interval{ValidFrom: fromNanos(q.vf), ValidTo: fromNanos(q.vt), RecordedAt: fromNanos(q.ra), ExpiredAt: fromNanos(q.ea)}
}

// base is the immutable snapshot structure over the docs as of one rebuild.
type base struct {
	tx, valid *axis
	bytes     int // what it holds (see newBase)
}

// Index is the temporal index of one user. Safe for concurrent use.
//
// Docs are held by ID in pages of 32, like bm25's documents: memory follows
// the largest doc ID, which suits the engine's per-user counter (a doc ID
// in the billions would cost a large page table).
type Index struct {
	prefix []byte

	mu     sync.RWMutex
	pages  []*docPage      // by doc >> pageShift; nil: no doc held
	n      int             // docs held
	buf    []byte          // key and value of the write under way
	open   *roaring.Bitmap // docs whose ExpiredAt is open
	maxRec int64           // largest RecordedAt ever put (never lowered)
	// maxValid is the largest finite ValidFrom or ValidTo ever put (never
	// lowered): from it on, current state no longer depends on the
	// instant (see Current).
	maxValid int64
	gen      uint64                    // counts changes to docs
	current  atomic.Pointer[cachedSet] // Current's answer, for gen

	base   *base           // nil until the first rebuild
	inBase *roaring.Bitmap // docs indexed by base
	stale  *roaring.Bitmap // docs of inBase whose base entry is out of date
	delta  []deltaEntry    // docs whose current interval is not in base (see docPage.pos)

	// The account of the memory held (account.go), written under mu.
	acct       memsize.Account
	loosePages int // pages allocated one by one (page)
	slabBytes  int // the slab of an image's pages (LoadImage)
}

// cachedSet is a result computed when the index was at generation gen.
type cachedSet struct {
	gen   uint64
	docs  *roaring.Bitmap
	bytes int // what it holds, for Bytes
}

type deltaEntry struct {
	doc uint32
	q   quad
}

// New returns an empty index whose keys start with prefix.
func New(prefix []byte) *Index {
	ix := &Index{
		prefix:   append([]byte(nil), prefix...),
		open:     roaring.New(),
		maxRec:   openStart,
		maxValid: openStart,
		inBase:   roaring.New(),
		stale:    roaring.New(),
	}
	ix.measureLocked()
	return ix
}

// get returns doc's interval.
func (ix *Index) get(doc uint32) (quad, bool) {
	pi := int(doc >> pageShift)
	if pi >= len(ix.pages) || ix.pages[pi] == nil || ix.pages[pi].has&(1<<(doc&pageMask)) == 0 {
		return quad{}, false
	}
	return ix.pages[pi].q[doc&pageMask], true
}

// each calls fn with every doc held and its interval, in doc order, until
// fn returns false.
func (ix *Index) each(fn func(doc uint32, q quad) bool) {
	for pi, p := range ix.pages {
		if p == nil {
			continue
		}
		for h := p.has; h != 0; h &= h - 1 {
			i := bits.TrailingZeros32(h)
			if !fn(uint32(pi)<<pageShift|uint32(i), p.q[i]) {
				return
			}
		}
	}
}

// page returns doc's page, adding it if absent.
func (ix *Index) page(doc uint32) *docPage {
	pi := int(doc >> pageShift)
	if pi >= len(ix.pages) {
		was := cap(ix.pages)
		ix.pages = append(ix.pages, make([]*docPage, pi+1-len(ix.pages))...)
		ix.acct.Exact(memsize.Slice(cap(ix.pages), 8) - memsize.Slice(was, 8))
	}
	if ix.pages[pi] == nil {
		ix.pages[pi] = new(docPage)
		ix.loosePages++
		ix.acct.Exact(docPageBytes)
	}
	return ix.pages[pi]
}

// Load reads the index stored under prefix.
func Load(ctx context.Context, r kv.Reader, prefix []byte) (*Index, error) {
	ix := New(prefix)
	// Every record goes straight into the base: its events are the ones
	// rebuild would make from a delta holding every document, without
	// the delta. Sized exactly where the reader can tell (an index image).
	n := 0
	if sz, ok := r.(kv.Sizer); ok {
		if c, _, err := sz.ScanSize(ctx, ix.prefix); err == nil {
			n = c
		}
	}
	ev := newEvents(n)
	err := r.Scan(ctx, ix.prefix, func(k, v []byte) error {
		doc, q, err := ix.decode(k, v)
		if err != nil {
			return err
		}
		if _, _, changed := ix.set(doc, q); changed { // each doc once: keys are unique
			ev.add(doc, q)
			ix.inBase.Add(doc)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("temporal: load: %w", err)
	}
	ix.fold(ev)
	ix.measureLocked()
	return ix, nil
}

// appendKey appends doc's key to dst.
func (ix *Index) appendKey(dst []byte, doc uint32) []byte { return appendKey(dst, ix.prefix, doc) }

// appendKey appends the key of doc's record under prefix to dst.
func appendKey(dst, prefix []byte, doc uint32) []byte {
	return kv.AppendUint32(append(dst, prefix...), doc)
}

// appendValue appends the stored form of q to dst.
func appendValue(dst []byte, q quad) []byte {
	dst = append(dst, valueVersion)
	dst = kv.AppendInt64(dst, q.vf)
	dst = kv.AppendInt64(dst, q.vt)
	dst = kv.AppendInt64(dst, q.ra)
	return kv.AppendInt64(dst, q.ea)
}

func (ix *Index) decode(k, v []byte) (uint32, quad, error) {
	if len(k) != len(ix.prefix)+4 {
		return 0, quad{}, fmt.Errorf("%w: key %x has length %d", ErrCorrupt, k, len(k))
	}
	doc := kv.NewDecoder(k[len(ix.prefix):]).Uint32()
	if len(v) != valueLen || v[0] != valueVersion {
		return 0, quad{}, fmt.Errorf("%w: doc %d: value %x", ErrCorrupt, doc, v)
	}
	d := kv.NewDecoder(v[1:])
	q := quad{vf: d.Int64(), vt: d.Int64(), ra: d.Int64(), ea: d.Int64()}
	if d.Err != nil {
		return 0, quad{}, fmt.Errorf("%w: doc %d: %v", ErrCorrupt, doc, d.Err)
	}
	return doc, q, nil
}

// Put records doc's interval: an insert, or an update of a doc already held
// (the engine sets ExpiredAt when a version expires). The write goes to w
// and applies to memory at once. The key and value passed to w.Set are
// reused after it returns ([kv.Batch] copies them).
func (ix *Index) Put(w kv.Writer, doc uint32, iv Interval) error {
	if w == nil {
		return ErrNilWriter
	}
	q, err := toQuad(iv)
	if err != nil {
		return err
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	// One buffer, owned by the index and used under the lock, holds the
	// key then the value: a put allocates nothing for its write.
	was := cap(ix.buf)
	ix.buf, err = writeRecord(w, ix.buf[:0], ix.prefix, doc, q)
	if cap(ix.buf) != was {
		ix.acct.Exact(memsize.Alloc(cap(ix.buf)) - memsize.Alloc(was))
	}
	if err == nil {
		ix.apply(doc, q)
	}
	ix.publishLocked()
	return err
}

// writeRecord writes doc's record of q to w, building the key then the
// value in buf, and returns buf.
func writeRecord(w kv.Writer, buf, prefix []byte, doc uint32, q quad) ([]byte, error) {
	buf = appendKey(buf, prefix, doc)
	kl := len(buf)
	buf = appendValue(buf, q)
	if err := w.Set(buf[:kl:kl], buf[kl:]); err != nil {
		return buf, fmt.Errorf("temporal: put doc %d: %w", doc, err)
	}
	return buf, nil
}

// WriteInterval writes the record that Put(w, doc, iv) writes for an index
// with prefix, without an index: for a bulk import whose index is loaded
// (by [Load]) only when first queried.
func WriteInterval(w kv.Writer, prefix []byte, doc uint32, iv Interval) error {
	if w == nil {
		return ErrNilWriter
	}
	q, err := toQuad(iv)
	if err != nil {
		return err
	}
	_, err = writeRecord(w, nil, prefix, doc, q)
	return err
}

// apply installs q as doc's interval in memory. Caller holds mu (or owns ix).
func (ix *Index) apply(doc uint32, q quad) {
	p, i, changed := ix.set(doc, q)
	if !changed {
		return
	}
	pos := p.pos[i]
	if ix.inBase.Contains(doc) {
		ix.stale.Add(doc)
		if pos == 0 { // else stale already, since it entered the delta
			ix.acct.Note(setMember)
		}
	}
	if pos != 0 {
		ix.delta[pos-1].q = q
		return
	}
	was := cap(ix.delta)
	ix.delta = append(ix.delta, deltaEntry{doc: doc, q: q})
	if cap(ix.delta) != was {
		ix.acct.Exact(memsize.Slice(cap(ix.delta), deltaEntryBytes) - memsize.Slice(was, deltaEntryBytes))
	}
	p.pos[i] = uint32(len(ix.delta))
}

// set holds q as doc's interval in its page and the summaries (count,
// latest instants, open set), reporting whether it changed; apply adds
// the delta's part. Caller holds mu (or owns ix).
func (ix *Index) set(doc uint32, q quad) (p *docPage, i uint32, changed bool) {
	p, i = ix.page(doc), doc&pageMask
	wasOpen := false
	if p.has&(1<<i) != 0 {
		if p.q[i] == q {
			return p, i, false
		}
		wasOpen = p.q[i].ea == openEnd
	} else {
		p.has |= 1 << i
		ix.n++
	}
	p.q[i] = q
	ix.gen++
	if q.vf != openStart {
		ix.maxValid = max(ix.maxValid, q.vf)
	}
	if q.vt != openEnd {
		ix.maxValid = max(ix.maxValid, q.vt)
	}
	if q.ea == openEnd {
		ix.open.Add(doc)
		if !wasOpen {
			ix.acct.Note(setMember)
		}
	} else {
		ix.open.Remove(doc)
		if wasOpen {
			ix.acct.Note(-setMember)
		}
	}
	ix.maxRec = max(ix.maxRec, q.ra)
	return p, i, true
}

// Delete removes doc from the index. Deleting a doc the index does not hold
// is not an error.
func (ix *Index) Delete(w kv.Writer, doc uint32) error {
	if w == nil {
		return ErrNilWriter
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	defer ix.publishLocked()
	was := cap(ix.buf)
	ix.buf = ix.appendKey(ix.buf[:0], doc)
	if cap(ix.buf) != was {
		ix.acct.Exact(memsize.Alloc(cap(ix.buf)) - memsize.Alloc(was))
	}
	if err := w.Delete(ix.buf); err != nil {
		return fmt.Errorf("temporal: delete doc %d: %w", doc, err)
	}
	q, ok := ix.get(doc)
	if !ok {
		return nil
	}
	p, i := ix.pages[doc>>pageShift], doc&pageMask
	p.has &^= 1 << i
	p.q[i] = quad{}
	ix.n--
	ix.gen++
	ix.open.Remove(doc)
	if q.ea == openEnd {
		ix.acct.Note(-setMember)
	}
	if ix.inBase.Contains(doc) {
		ix.stale.Add(doc)
		if p.pos[i] == 0 {
			ix.acct.Note(setMember)
		}
	}
	if pos := p.pos[i]; pos != 0 {
		// Move the last delta entry into doc's place.
		last := len(ix.delta) - 1
		ix.delta[pos-1] = ix.delta[last]
		moved := ix.delta[pos-1].doc
		ix.pages[moved>>pageShift].pos[moved&pageMask] = pos
		ix.delta = ix.delta[:last]
		p.pos[i] = 0 // after the move: doc may have been the last entry
	}
	return nil
}

// Get returns doc's interval. Instants come back in UTC.
func (ix *Index) Get(doc uint32) (Interval, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	q, ok := ix.get(doc)
	if !ok {
		return Interval{}, false
	}
	return q.interval(), true
}

// Reading calls fn with has, which reports whether doc is in the index,
// under one hold of the index's read lock: for a caller asking of every
// document (a load asks which versions the index holds), Get's lock per
// call was a third of the time. fn must not call ix's other methods.
func (ix *Index) Reading(fn func(has func(doc uint32) bool) error) error {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return fn(func(doc uint32) bool {
		_, ok := ix.get(doc)
		return ok
	})
}

// Len returns the number of docs in the index.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.n
}

func (ix *Index) dirty() bool {
	d := len(ix.delta) + int(ix.stale.GetCardinality())
	return d > minDirty && d > ix.n>>dirtyShift
}

// rlockFresh takes the read lock, first rebuilding the snapshot structure
// under the write lock if the delta has grown too large.
func (ix *Index) rlockFresh() {
	ix.mu.RLock()
	if !ix.dirty() {
		return
	}
	ix.mu.RUnlock()
	ix.mu.Lock()
	if ix.dirty() {
		ix.rebuild()
	}
	ix.mu.Unlock()
	ix.mu.RLock()
}

// rebuild folds the delta into a new snapshot structure: the old
// structure's events minus the stale docs, merged with the delta's events.
// Caller holds the write lock (or owns ix).
func (ix *Index) rebuild() {
	// Each entry adds at most one event of each kind: sized once, not
	// grown.
	ev := newEvents(len(ix.delta))
	for _, e := range ix.delta {
		ev.add(e.doc, e.q)
		ix.inBase.Add(e.doc)
		ix.pages[e.doc>>pageShift].pos[e.doc&pageMask] = 0
	}
	ix.fold(ev)
	ix.delta = ix.delta[:0]
	ix.measureLocked()
}

// events are the start and end events of intervals on both axes.
type events struct {
	txS, vS []startEv
	txE, vE []endEv
}

// newEvents returns events with room for n intervals' (at most one event
// of each kind each).
func newEvents(n int) events {
	return events{make([]startEv, 0, n), make([]startEv, 0, n), make([]endEv, 0, n), make([]endEv, 0, n)}
}

func (ev *events) add(doc uint32, q quad) {
	ev.txS, ev.txE = spanEvents(ev.txS, ev.txE, doc, q.ra, q.ea)
	ev.vS, ev.vE = spanEvents(ev.vS, ev.vE, doc, q.vf, q.vt)
}

// fold replaces the snapshot structure with the old one's events minus
// the stale docs' plus ev's (whose arrays it may keep). Caller holds the
// write lock (or owns ix).
func (ix *Index) fold(ev events) {
	tx, valid := ix.rebuiltAxes(ev)
	ix.base = newBase(tx, valid, 0)
	// Deleted docs were stale and are not in the delta.
	for _, d := range ix.stale.ToArray() {
		if _, ok := ix.get(d); !ok {
			ix.inBase.Remove(d)
		}
	}
	ix.stale = roaring.New()
}

// rebuiltAxes returns the axes of the old structure's events minus the
// stale docs' plus ev's (whose arrays they may keep), leaving ix as it
// is. Caller holds mu (or owns ix).
func (ix *Index) rebuiltAxes(ev events) (tx, valid *axis) {
	var oldTx, oldValid *axis
	if ix.base != nil {
		oldTx, oldValid = ix.base.tx, ix.base.valid
	}
	return rebuildAxis(oldTx, ix.stale, ev.txS, ev.txE), rebuildAxis(oldValid, ix.stale, ev.vS, ev.vE)
}

// Visible returns the docs visible at (validAt, knownAt): RecordedAt ≤
// knownAt < ExpiredAt and ValidFrom ≤ validAt < ValidTo. The bitmap is the
// caller's to modify.
func (ix *Index) Visible(validAt, knownAt time.Time) *roaring.Bitmap {
	ix.rlockFresh()
	defer ix.mu.RUnlock()
	return ix.visible(queryNanos(validAt), queryNanos(knownAt))
}

func (ix *Index) visible(v, k int64) *roaring.Bitmap {
	var out *roaring.Bitmap
	if ix.base == nil {
		out = roaring.New()
	} else {
		tx := ix.base.tx.stab(k, nil)
		tx.AndNot(ix.stale)
		out = ix.base.valid.stab(v, tx)
	}
	for _, e := range ix.delta {
		if e.q.visible(v, k) {
			out.Add(e.doc)
		}
	}
	return out
}

// Current returns the docs of current state at now: ExpiredAt open and
// valid at now (and recorded by now). It equals Visible(now, now) but
// starts from the maintained set of open versions instead of a
// transaction-time stab. The result may be shared with other calls: do
// not modify it.
//
// Past every instant the index holds, the answer no longer depends on now
// (the open versions whose ValidTo is open), so it is computed once per
// change to the index and shared: a large tenant's current set is a few
// hundred kilobytes that every query would otherwise rebuild.
func (ix *Index) Current(now time.Time) *roaring.Bitmap {
	ix.rlockFresh()
	defer ix.mu.RUnlock()
	t := queryNanos(now)
	if t < ix.maxRec {
		// Some version was recorded after now (a clock in the past): the
		// open set alone would admit it.
		return ix.visible(t, t)
	}
	late := t >= ix.maxValid
	if late {
		// Writers are excluded while the read lock is held, so gen is
		// stable; two readers may both compute and store the same set.
		if c := ix.current.Load(); c != nil && c.gen == ix.gen {
			return c.docs
		}
	}
	var out *roaring.Bitmap
	if ix.base == nil {
		out = roaring.New()
	} else {
		out = ix.base.valid.stab(t, ix.open)
		out.AndNot(ix.stale)
	}
	for _, e := range ix.delta {
		if e.q.ea == openEnd && e.q.vf <= t && t < e.q.vt {
			out.Add(e.doc)
		}
	}
	if late {
		ix.current.Store(&cachedSet{gen: ix.gen, docs: out, bytes: cachedBytes + setBytes(out)})
	}
	return out
}

// Check verifies the index against what r holds under its prefix
// (invariant 1), the open set (invariant 2), and the snapshot structure
// against the brute-force predicate at instants drawn from the data
// (invariant 3). It returns the errors.Join of every finding, each wrapping
// ErrInconsistent or ErrCorrupt.
func (ix *Index) Check(ctx context.Context, r kv.Reader) error {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var errs []error
	const maxFindings = 20
	add := func(err error) {
		if len(errs) < maxFindings {
			errs = append(errs, err)
		}
	}
	seen := roaring.New()
	err := r.Scan(ctx, ix.prefix, func(k, v []byte) error {
		doc, q, err := ix.decode(k, v)
		if err != nil {
			add(err)
			return nil
		}
		seen.Add(doc)
		if mq, ok := ix.get(doc); !ok {
			add(fmt.Errorf("%w: doc %d stored but not in memory", ErrInconsistent, doc))
		} else if mq != q {
			add(fmt.Errorf("%w: doc %d stored as %+v, in memory %+v", ErrInconsistent, doc, q.interval(), mq.interval()))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("temporal: check: %w", err)
	}
	open := roaring.New()
	var instants []int64
	n, inDelta := 0, 0
	ix.each(func(d uint32, q quad) bool {
		if n++; n&1023 == 0 && ctx.Err() != nil {
			return false
		}
		if !seen.Contains(d) {
			add(fmt.Errorf("%w: doc %d in memory but not stored", ErrInconsistent, d))
		}
		if q.ea == openEnd {
			open.Add(d)
		}
		if len(instants) < 8 {
			instants = append(instants, q.vf, q.ra, q.vt-1, q.ea-1)
		}
		if pos := ix.pages[d>>pageShift].pos[d&pageMask]; pos != 0 {
			inDelta++
			if int(pos) > len(ix.delta) || ix.delta[pos-1].doc != d || ix.delta[pos-1].q != q {
				add(fmt.Errorf("%w: doc %d: delta position %d out of date", ErrInconsistent, d, pos))
			}
		}
		return true
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	if n != ix.n || inDelta != len(ix.delta) {
		add(fmt.Errorf("%w: %d docs held (count %d), %d in the delta (length %d)", ErrInconsistent, n, ix.n, inDelta, len(ix.delta)))
	}
	if !open.Equals(ix.open) {
		add(fmt.Errorf("%w: open set has %d docs, expected %d", ErrInconsistent, ix.open.GetCardinality(), open.GetCardinality()))
	}
	instants = append(instants, openStart, openEnd-1)
	for _, v := range instants {
		for _, k := range instants {
			if err := ctx.Err(); err != nil {
				return err
			}
			got := ix.visible(v, k)
			want := roaring.New()
			ix.each(func(d uint32, q quad) bool {
				if q.visible(v, k) {
					want.Add(d)
				}
				return true
			})
			if !got.Equals(want) {
				add(fmt.Errorf("%w: at (valid %d, known %d) index has %d docs, predicate %d", ErrInconsistent, v, k, got.GetCardinality(), want.GetCardinality()))
			}
		}
	}
	return errors.Join(errs...)
}
