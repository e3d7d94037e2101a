package hnsw

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/viterin/vek/vek32"

	"github.com/memor-db/memor/kv"
)

// Errors returned by this package; match them with errors.Is.
var (
	// ErrDimension: a vector's length differs from the index's dimension.
	ErrDimension = errors.New("hnsw: vector has the wrong dimension")
	// ErrVector: a vector holds NaN or ±Inf, or is zero (or too close to
	// zero to normalise in float32) under [Cosine].
	ErrVector = errors.New("hnsw: vector is zero or not finite")
	// ErrNotFound: Load found no index under the prefix.
	ErrNotFound = errors.New("hnsw: no index under this prefix")
	// ErrCorrupt: the persisted graph cannot be decoded or is inconsistent.
	ErrCorrupt = errors.New("hnsw: persisted graph is corrupt")
	// ErrFormat: the persisted graph was written by a newer format version.
	ErrFormat = errors.New("hnsw: persisted graph has an unknown format version")
	// ErrCheck: Check found the in-memory graph and the store disagreeing.
	ErrCheck = errors.New("hnsw: check failed")
)

// Metric is the similarity a graph is built for. Values are part of the
// file format; do not change.
type Metric uint8

const (
	// Cosine similarity. Vectors are L2-normalised on Add (the normalised
	// vector is what is stored), so the search itself is a dot product.
	Cosine Metric = 0
	// Dot is the raw inner product (for embeddings that are already
	// normalised, or where magnitude carries meaning).
	Dot Metric = 1
)

func (m Metric) String() string {
	switch m {
	case Cosine:
		return "cosine"
	case Dot:
		return "dot"
	}
	return fmt.Sprintf("Metric(%d)", uint8(m))
}

// Defaults filled in by [New] and [Load] for zero options. M = 16 and
// efConstruction = 200 are the values of the HNSW paper (Malkov & Yashunin,
// 2018) and hnswlib; EfSearch = 64 keeps recall@10 above 0.95 on clustered
// 384-d data at 100k vectors (see bench/hnsw_test.go). ExactBelow = 20000:
// an exact scan costs ≈ 18 ns per 384-d dot product with AVX2, so 20k
// vectors take ≈ 0.4 ms with perfect recall, which for one tenant's memory
// beats an approximate walk (measured: 10k vectors scan in ≈ 0.2 ms).
const (
	DefaultM              = 16
	DefaultEfConstruction = 200
	DefaultEfSearch       = 64
	DefaultExactBelow     = 20000
)

// maxLevels bounds the level of a node; the level is stored in one key byte
// and 2^-32 odds make anything higher meaningless.
const maxLevels = 32

// Options configures an [Index]. The zero value is usable.
type Options struct {
	// M is the number of neighbours a node keeps on layers above 0; layer 0
	// keeps 2·M. Default 16. Fixed when the graph is created: [Load] uses
	// the persisted value.
	M int
	// EfConstruction is the candidate-list size used while inserting.
	// Larger builds a better graph, slower. Default 200.
	EfConstruction int
	// EfSearch is the candidate-list size used while searching (raised to
	// k when k is larger). Default 64.
	EfSearch int
	// Metric is Cosine (default) or Dot. Fixed when the graph is created:
	// [Load] uses the persisted value.
	Metric Metric
	// Seed seeds the level generator, so that the same inserts in the same
	// order build the same graph.
	Seed int64
	// ExactBelow is the number of candidate vectors (the allowed set, or
	// the whole index when there is no filter) below which Search scans
	// them exactly instead of walking the graph. Default 20000; a negative
	// value turns exact scans off entirely (the graph is always used), which
	// is meant for tests and benchmarks of the graph itself.
	ExactBelow int
	// GraphAt is the size at which the graph is built. Below it Add only
	// stores vectors and every search is an exact scan: most tenants stay
	// small, and maintaining a graph nobody walks was half the CPU of the
	// write path. The Add that brings the index to GraphAt vectors builds
	// the graph from every stored vector (in ID order, levels from Seed)
	// and writes it to the same kv.Writer; later Adds insert incrementally.
	// Once built the graph is kept, even if deletes shrink the index.
	// Default (0): ExactBelow, so the graph exists exactly when Search may
	// walk it (and always when ExactBelow < 0); a negative GraphAt also
	// means always. Set above ExactBelow, Search scans exactly until the
	// graph exists. Whether the graph exists is persisted: [Load] restores
	// it and never builds.
	GraphAt int
	// Capacity is how many vectors [Load] expects (a hint; an upper bound
	// such as the caller's document count is fine): the vector array, the
	// slots' IDs and levels and the ID map are allocated once at that size
	// instead of grown by doubling, which was two thirds of loading a
	// small index.
	Capacity int
}

func (o Options) withDefaults() Options {
	if o.M <= 1 {
		o.M = DefaultM
	}
	if o.M > 255 {
		o.M = 255
	}
	if o.EfConstruction <= 0 {
		o.EfConstruction = DefaultEfConstruction
	}
	if o.EfConstruction < o.M {
		o.EfConstruction = o.M
	}
	if o.EfSearch <= 0 {
		o.EfSearch = DefaultEfSearch
	}
	if o.ExactBelow == 0 {
		o.ExactBelow = DefaultExactBelow
	}
	if o.GraphAt == 0 {
		o.GraphAt = o.ExactBelow
	}
	if o.GraphAt < 0 {
		o.GraphAt = -1 // always
	}
	return o
}

// Hit is one search result.
type Hit struct {
	ID    uint32
	Score float32 // similarity: cosine or dot product, higher is better
}

// Index is an HNSW graph over one user's vectors, persisted under a key
// prefix (see the package documentation for the layout). Until it holds
// [Options.GraphAt] vectors it is only a list of vectors, searched exactly.
//
// An Index is safe for concurrent use: Search, Len and Check may run in
// parallel with each other; Add and Delete are serialised and exclude
// searches while they change memory, except that the Add building the
// graph lets searches (exact scans) run during the build. The kv.Writer
// passed to Add and Delete is not retained.
type Index struct {
	// wmu serialises Add and Delete; mu guards memory against searches.
	// The graph build holds wmu only: it reads the vectors (which only a
	// writer changes) and builds apart, then swaps the result in under mu.
	wmu    sync.Mutex
	mu     sync.RWMutex
	dim    int
	prefix []byte
	o      Options
	m, m0  int     // max neighbours on upper layers / layer 0
	ml     float64 // level multiplier 1/ln(M)
	rng    *rand.Rand

	vnni bool // fullVNNI(dim): dist calls the kernel directly
	// graph: the neighbour lists exist (see Options.GraphAt). Without it
	// every live slot has level 0, links0 and upper are empty, no link key
	// is persisted and entry is -1.
	graph bool

	// Nodes live in dense slots; neighbour lists hold slots, not IDs.
	vecs   slab[float32]     // the dense vectors' records (list.go)
	list   listVecs          // slot → its vector, sparse or in vecs (list.go)
	dense  []float32         // a writer's scratch vector (under wmu), or a load's or a build's, of an index not yet shared
	codes  slab[int8]        // slot → its int8 codes (graph only, see quant.go)
	scales []float32         // slot → scale of its codes (graph only)
	qerr   []qbound          // slot → what its codes' error bounds need (graph only)
	ids    []uint32          // slot → ID
	levels []int8            // slot → top layer; -1 marks a free slot
	links0 []uint32          // slot*(m0+1): count, then up to m0 slots
	upper  [][]uint32        // slot → layers 1..level, (m+1) words each
	slotOf map[uint32]uint32 // ID → slot
	free   []uint32          // free slots, reused by Add
	entry  int32             // entry-point slot, -1 when empty
	top    int               // level of the entry point
	// inImage: LoadImage left the dense vectors, the codes or the lists
	// where they lie in the image (list.image), which the index never
	// writes: a writer copies them out first (own).
	inImage bool
	// pool (of *searcher) is apart from the index: the runtime keeps a
	// used pool reachable for a collection after its last use, and a pool
	// inside the index would keep the whole index (its vectors) alive
	// with it after the cache evicts it.
	pool   *sync.Pool
	dirty  []uint64 // (slot<<8 | layer) lists to persist, may repeat
	metaOK bool     // the meta key is written and current
	// held is Bytes' answer, refreshed by each writer as it ends (see
	// noteBytes): the index cache reads it at every read of the user,
	// holding its own lock, so it must not wait for a writer's.
	held  atomic.Int64
	build *searcher
	// Writes deferred by Adds with a nil writer until Flush: link keys
	// to delete and vector records, in order (dirty lists and the meta key
	// wait in dirty and metaOK).
	pendingDels [][]byte
	pendingRecs []vecRecord
	// recBuf is the chunk deferred vector records are carved from (see
	// deferredVecRecord), dropped with them at the flush; recHint is the
	// batch size Reserve announced.
	recBuf  []byte
	recHint int
	// Nodes added with a nil writer, stored but not yet linked, in add
	// order, and the scratch space of linking them (see batch.go).
	pending []uint32
	plans   []pendingPlan
	workers []*searcher
	backs   []backLink // phase 3's links, by bucket
	backs2  []backLink // and in queue order
}

// New returns an empty index of dimension dim whose keys will all start
// with prefix (copied).
func New(dim int, prefix []byte, o Options) *Index {
	o = o.withDefaults()
	ix := &Index{
		pool:   new(sync.Pool),
		dim:    dim,
		prefix: append([]byte(nil), prefix...),
		o:      o,
		slotOf: make(map[uint32]uint32),
		entry:  -1,
		vecs:   newSlab[float32](dim),
		codes:  newSlab[int8](dim),
		graph:  o.GraphAt <= 0,
		vnni:   fullVNNI(dim),
	}
	ix.setM(o.M)
	ix.rng = rand.New(rand.NewPCG(uint64(o.Seed), 0))
	return ix
}

func (ix *Index) setM(m int) {
	ix.m = m
	ix.m0 = 2 * m
	ix.ml = 1 / math.Log(float64(m))
	ix.o.M = m
}

// SetEfSearch changes the search beam width (ef ≤ 0 restores
// DefaultEfSearch), e.g. to trade recall for speed at run time.
func (ix *Index) SetEfSearch(ef int) {
	if ef <= 0 {
		ef = DefaultEfSearch
	}
	ix.mu.Lock()
	ix.o.EfSearch = ef
	ix.mu.Unlock()
}

// Reserve makes room for n more vectors, so that a batch of known size
// does not grow the index's arrays step by step (nor, when its Adds defer
// their writes, the list of records waiting for the flush). The vectors'
// own memory is not reserved: each is held sparse or dense as its values
// are (list.go), which is known only when it comes.
func (ix *Index) Reserve(n int) {
	if n <= 0 {
		return
	}
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	defer ix.noteBytes()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	// A vector may be held sparse (list.go): nothing is known of their
	// size until they come.
	ix.list.refs = slices.Grow(ix.list.refs, n)
	ix.ids = slices.Grow(ix.ids, n)
	ix.levels = slices.Grow(ix.levels, n)
	ix.pendingRecs = slices.Grow(ix.pendingRecs, n)
	ix.recHint = n
	if len(ix.slotOf) == 0 {
		ix.slotOf = make(map[uint32]uint32, n)
	}
}

// Dim returns the vector dimension.
func (ix *Index) Dim() int { return ix.dim }

// Metric returns the similarity the graph was built for.
func (ix *Index) Metric() Metric { return ix.o.Metric }

// Len returns the number of vectors in the index.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.slotOf)
}

// scaleOf validates v and returns the factor it is stored and searched
// with: 1/‖v‖ under Cosine, 1 under Dot. It neither copies nor allocates.
func (ix *Index) scaleOf(v []float32) (float32, error) {
	if len(v) != ix.dim || ix.dim <= 0 {
		return 0, fmt.Errorf("%w: got %d, index has %d", ErrDimension, len(v), ix.dim)
	}
	// v·v through the SIMD kernel is finite only if every element is (NaN
	// and Inf propagate through squares and sums). Vectors whose square sum
	// overflows or underflows float32 take the exact float64 path, which
	// also names the bad element.
	ss := float64(dot(v, v))
	if math.IsNaN(ss) || math.IsInf(ss, 0) || ss < 1e-30 {
		ss = 0
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return 0, fmt.Errorf("%w: holds %v", ErrVector, x)
			}
			ss += float64(x) * float64(x)
		}
	}
	if ix.o.Metric != Cosine {
		return 1, nil
	}
	if ss == 0 {
		return 0, fmt.Errorf("%w: zero vector has no direction", ErrVector)
	}
	scale := float32(1 / math.Sqrt(ss))
	if math.IsInf(float64(scale), 0) {
		// Normalising would turn the zero components into NaN (0·∞), and
		// the stored record's scale would be NaN: one that Load refuses.
		return 0, fmt.Errorf("%w: norm %g too small to normalise", ErrVector, math.Sqrt(ss))
	}
	return scale, nil
}

// put writes v·scale into dst (len(dst) == len(v)).
func put(dst, v []float32, scale float32) {
	if scale == 1 {
		copy(dst, v)
		return
	}
	vek32.MulNumber_Into(dst, v, scale)
}

// store sets slot s (of id) to v·scale at the precision it is persisted
// with, so that a reloaded index holds the same values, and returns the
// record to persist. The slot's vector is new or was released.
func (ix *Index) store(s, id uint32, v []float32, scale float32, deferred bool) vecRecord {
	var b []byte
	if deferred {
		b = ix.deferredVecRecord(id)
	} else {
		b = ix.newVecRecord(id)
	}
	if len(ix.dense) != ix.dim {
		ix.dense = make([]float32, ix.dim)
	}
	put(ix.dense, v, scale)
	rec := roundAppendVec(b, ix.dense) // rounds ix.dense to the record's values
	ix.place(s, ix.dense)
	return rec
}

func (ix *Index) code(s uint32) []int8 { return ix.codes.at(s) }

// encode (re)computes the codes of slot s from its vector (a writer's,
// or a load's: it writes ix.dense).
func (ix *Index) encode(s uint32) {
	if r := ix.list.refs[s]; r.n != denseRef {
		c := ix.code(s)
		clear(c)
		var ok bool
		if ix.scales[s], ix.qerr[s], ok = quantizeSparse(c, ix.list.sidx[r.at:r.at+r.n], ix.list.sval[r.at:r.at+r.n]); ok {
			return
		}
	}
	if len(ix.dense) != ix.dim {
		ix.dense = make([]float32, ix.dim)
	}
	v := ix.vecInto(s, ix.dense)
	ix.scales[s] = quantize(ix.code(s), v)
	ix.qerr[s] = boundOf(ix.code(s), ix.scales[s], v)
}

// encodeAll sizes the code arrays to the slots and encodes every slot.
func (ix *Index) encodeAll() {
	n := len(ix.ids)
	ix.codes = newSlab[int8](ix.dim)
	ix.scales = make([]float32, n, cap(ix.ids))
	ix.qerr = make([]qbound, n, cap(ix.ids))
	for s := range uint32(n) {
		ix.codes.add()
		ix.encode(s)
	}
}

// links returns the neighbour list of slot s on layer l (a view).
func (ix *Index) links(s uint32, l int) []uint32 {
	if l == 0 {
		o := int(s) * (ix.m0 + 1)
		n := ix.links0[o]
		return ix.links0[o+1 : o+1+int(n)]
	}
	o := (l - 1) * (ix.m + 1)
	u := ix.upper[s]
	n := u[o]
	return u[o+1 : o+1+int(n)]
}

// setLinks replaces the neighbour list of slot s on layer l.
func (ix *Index) setLinks(s uint32, l int, nb []uint32) {
	ix.writeLinks(s, l, nb)
	ix.markDirty(s, l)
}

// writeLinks is setLinks without marking the list dirty.
func (ix *Index) writeLinks(s uint32, l int, nb []uint32) {
	var dst []uint32
	if l == 0 {
		o := int(s) * (ix.m0 + 1)
		dst = ix.links0[o : o+1+ix.m0]
	} else {
		o := (l - 1) * (ix.m + 1)
		dst = ix.upper[s][o : o+1+ix.m]
	}
	dst[0] = uint32(copy(dst[1:], nb))
}

// appendLink adds x to the list of slot s on layer l, which has room
// (without marking it dirty).
func (ix *Index) appendLink(s uint32, l int, x uint32) {
	var dst []uint32
	if l == 0 {
		dst = ix.links0[int(s)*(ix.m0+1):]
	} else {
		dst = ix.upper[s][(l-1)*(ix.m+1):]
	}
	dst[1+dst[0]] = x
	dst[0]++
}

// markDirty notes that the list of slot s on layer l must be written.
// Repeats are dropped by flush.
func (ix *Index) markDirty(s uint32, l int) {
	ix.dirty = append(ix.dirty, uint64(s)<<8|uint64(l))
}

func (ix *Index) maxLinks(l int) int {
	if l == 0 {
		return ix.m0
	}
	return ix.m
}

func (ix *Index) randomLevel() int {
	u := ix.rng.Float64()
	l := int(-math.Log(1-u) * ix.ml)
	if l >= maxLevels {
		l = maxLevels - 1
	}
	return l
}

// alloc returns a slot for id holding v·scale, of the given level, with
// empty neighbour lists when the graph exists, and the record to persist
// (deferred: it waits for a flush).
func (ix *Index) alloc(id uint32, v []float32, scale float32, level int, deferred bool) (uint32, vecRecord) {
	var s uint32
	if n := len(ix.free); n > 0 {
		s = ix.free[n-1]
		ix.free = ix.free[:n-1]
		ix.ids[s] = id
		ix.levels[s] = int8(level)
	} else {
		s = uint32(len(ix.ids))
		ix.ids = append(ix.ids, id)
		ix.levels = append(ix.levels, int8(level))
		if ix.graph {
			ix.links0 = grow(ix.links0, ix.m0+1)
			ix.links0 = ix.links0[:len(ix.links0)+ix.m0+1]
			ix.upper = append(ix.upper, nil)
			ix.codes.add()
			ix.scales = append(ix.scales, 0)
			ix.qerr = append(ix.qerr, qbound{})
		}
	}
	rec := ix.store(s, id, v, scale, deferred)
	if ix.graph {
		ix.encode(s)
		clear(ix.links0[int(s)*(ix.m0+1) : int(s+1)*(ix.m0+1)])
		if level > 0 {
			ix.upper[s] = make([]uint32, level*(ix.m+1))
		} else {
			ix.upper[s] = nil
		}
	}
	ix.slotOf[id] = s
	return s, rec
}

// grow makes room for n more elements, doubling the capacity when full.
func grow[T any](s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	return slices.Grow(s, max(n, len(s)))
}

// Add inserts the vector of id, replacing any vector id already has, and
// writes the changed keys to w. A vector of the wrong length fails with
// ErrDimension; NaN, Inf or (under Cosine) a zero vector, or one too small
// to normalise, with ErrVector.
// vec is not retained.
//
// Below [Options.GraphAt] vectors this stores and writes the vector only.
// The Add that reaches GraphAt builds the graph over every vector and
// writes all of it (about 130 bytes per vector) to w. That takes as long
// as the incremental inserts it replaces together (seconds at 20000 384-d
// vectors); searches of the index go on meanwhile, as exact scans.
//
// With w nil the writes wait for [Index.Flush] (or the next Add or Delete
// with a writer): a batch of Adds then writes each neighbour list it
// changed once, not once per insert that changed it. The node is then also
// linked with its batch, at that flush (or once 256 are queued): the
// batch's candidate searches run in parallel against the graph as it was
// before the batch, and the links are made in add order, so the graph
// depends on the inserts and the flushes, not on scheduling. Searches find
// a queued vector meanwhile (scored exactly, besides the walk).
func (ix *Index) Add(w kv.Writer, id uint32, vec []float32) error {
	scale, err := ix.scaleOf(vec)
	if err != nil {
		return err
	}
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	defer ix.noteBytes()
	ix.mu.Lock()
	ix.own()
	if err := ix.flushPending(w); err != nil {
		ix.mu.Unlock()
		return err
	}
	old, ok := ix.slotOf[id]
	if !ix.graph {
		var rec vecRecord
		if ok {
			// Nothing points at the slot: overwrite it in place.
			ix.list.release(old)
			rec = ix.store(old, id, vec, scale, w == nil)
		} else {
			_, rec = ix.alloc(id, vec, scale, 0, w == nil)
		}
		if len(ix.slotOf) < ix.o.GraphAt {
			defer ix.mu.Unlock()
			return ix.flush(w, rec)
		}
		g := ix.emptyGraph()
		ix.mu.Unlock()
		// Searches go on (exactly) during the build; writers wait on wmu.
		g.buildFrom(ix)
		if err := g.flush(w, g.encodeVecRecord(id, g.vecInto(g.slotOf[id], make([]float32, g.dim)))); err != nil {
			return err
		}
		ix.mu.Lock()
		ix.install(g)
		ix.mu.Unlock()
		return nil
	}
	defer ix.mu.Unlock()
	if ok {
		// Replace: unlink the old node and drop its lists (the new node
		// may top out on a lower layer); the vector key is overwritten.
		level := int(ix.levels[old])
		ix.remove(old)
		for l := 0; l <= level; l++ {
			if w == nil {
				ix.pendingDels = append(ix.pendingDels, ix.linkKey(id, l))
			} else if err := w.Delete(ix.linkKey(id, l)); err != nil {
				return fmt.Errorf("hnsw: delete links %d/%d: %w", id, l, err)
			}
		}
	}
	s, rec := ix.alloc(id, vec, scale, ix.randomLevel(), w == nil)
	if w != nil {
		ix.link(s)
		return ix.flush(w, rec)
	}
	ix.pending = append(ix.pending, s)
	if len(ix.pending) >= maxPending {
		ix.linkPending()
	}
	return ix.flush(w, rec)
}

// Delete removes id (a no-op when it is absent), repairing the neighbour
// lists that pointed at it, and writes the changed keys to w. The graph,
// once built, is kept however small the index gets.
func (ix *Index) Delete(w kv.Writer, id uint32) error {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	defer ix.noteBytes()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.own()
	if err := ix.flushPending(w); err != nil {
		return err
	}
	s, ok := ix.slotOf[id]
	if !ok {
		return nil
	}
	level := int(ix.levels[s])
	ix.remove(s)
	if err := w.Delete(ix.vecKey(id)); err != nil {
		return fmt.Errorf("hnsw: delete vector %d: %w", id, err)
	}
	for l := 0; l <= level && ix.graph; l++ {
		if err := w.Delete(ix.linkKey(id, l)); err != nil {
			return fmt.Errorf("hnsw: delete links %d/%d: %w", id, l, err)
		}
	}
	return ix.flush(w, nil)
}

// Search returns up to k nearest neighbours of q, best first. With allow
// non-nil, only IDs in allow are returned; the filter is applied inside the
// graph walk (never after it), and when the allowed set is small enough an
// exact scan of it is cheaper and is used instead. allow is only read.
func (ix *Index) Search(ctx context.Context, q []float32, k int, allow *roaring.Bitmap) ([]Hit, error) {
	hits, _, err := ix.SearchWithStats(ctx, q, k, allow)
	return hits, err
}

// SearchStats is the work of one search.
type SearchStats struct {
	// Dists is the number of distances computed between the query and the
	// vectors' int8 codes: on every layer of the graph walk (the entry
	// point, the greedy descent, the beam's neighbours not visited
	// before), or one per allowed vector in an exact scan.
	Dists int
	// Exact is the number of float32 distances computed: the beam's
	// re-scoring and the vectors not yet linked, or the scan's vectors
	// whose code distance could not rule them out.
	Exact int
}

// SearchWithStats is Search, also returning the distance computations the
// search made. The counts are kept in the search's own scratch space (an
// add per expanded node), so Search pays nothing for them.
func (ix *Index) SearchWithStats(ctx context.Context, q []float32, k int, allow *roaring.Bitmap) ([]Hit, SearchStats, error) {
	hits, sc, err := ix.search(ctx, q, k, allow)
	if sc == nil {
		return hits, SearchStats{}, err
	}
	st := sc.stats
	ix.pool.Put(sc)
	return hits, st, err
}

// search runs Search, returning its scratch space (nil if the search did
// not get that far) for the caller to read the stats from and put back in
// the pool.
func (ix *Index) search(ctx context.Context, q []float32, k int, allow *roaring.Bitmap) ([]Hit, *searcher, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	scale, err := ix.scaleOf(q)
	if err != nil {
		return nil, nil, err
	}
	if k <= 0 {
		return nil, nil, nil
	}
	sc, _ := ix.pool.Get().(*searcher)
	if sc == nil {
		sc = &searcher{}
	}
	sc.stats = SearchStats{}
	sc.q = slices.Grow(sc.q[:0], len(q))[:len(q)]
	put(sc.q, q, scale)
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	n := len(ix.slotOf)
	if n == 0 {
		return nil, sc, nil
	}
	allowed := n
	if allow != nil {
		allowed = int(min(allow.GetCardinality(), uint64(n)))
		if allowed == 0 {
			return nil, sc, nil
		}
	}
	ef := max(ix.o.EfSearch, k)
	if allowed < n {
		// With a filter the walk must pass through disallowed nodes to
		// reach allowed ones; a wider beam keeps recall as selectivity
		// drops (2× at ≤ 10 %).
		sel := float64(allowed) / float64(n)
		ef = int(float64(ef) * min(2, 1+0.1/sel))
	}
	if ix.useExact(allowed, n, ef) {
		hits, err := ix.exact(ctx, sc, sc.q, k, allow)
		return hits, sc, err
	}
	sc.reset(len(ix.ids))
	hits, err := ix.graphSearch(ctx, sc, sc.q, k, ef, allow)
	return hits, sc, err
}

// useExact decides between an exact scan of the allowed set and the graph.
// Without a graph there is no choice. Beyond ExactBelow, a cost model
// compares the scan (one int8 dot product per allowed vector, read in
// order, see scan8) with the expected walk: reaching ef allowed nodes
// visits about ef·n/allowed nodes, each expanding up to 2M neighbours
// whose codes are scattered, so a visited node costs at least what a
// scanned one does (bench BenchmarkQuery, one tenant of 1M near-duplicate
// facts, 55k of them visible: the walk took 5.4 ms of CPU per search, the
// scan 2.1 ms).
func (ix *Index) useExact(allowed, n, ef int) bool {
	if !ix.graph || ix.entry < 0 {
		return true
	}
	if ix.o.ExactBelow < 0 {
		return false
	}
	if allowed < ix.o.ExactBelow {
		return true
	}
	walk := float64(ef) * float64(ix.m0) * float64(n) / float64(allowed)
	return float64(allowed) <= walk
}
