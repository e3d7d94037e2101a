package memor

import (
	"container/list"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memor-db/memor/embed"
	"github.com/memor-db/memor/extract"
	"github.com/memor-db/memor/graph"
	"github.com/memor-db/memor/index/bm25"
	"github.com/memor-db/memor/index/hnsw"
	"github.com/memor-db/memor/index/temporal"
	"github.com/memor-db/memor/internal/memsize"
	"github.com/memor-db/memor/internal/norm"
	"github.com/memor-db/memor/kv"
)

// Document map values (SubDoc): the first byte says what the document is.
// Their bytes are documented in layout.go.
const (
	docVersion byte = 'v'
	docEpisode byte = 'e'
)

// Flags of an episode's document map value (layout.go).
const (
	episodeHasClaims   byte = 1 << 0
	episodeSaysMore    byte = 1 << 1
	episodeStandsKnown byte = 1 << 2
	// episodeTimed: the episode's At and RecordedAt follow the flags, so
	// that a load does not read the episode for them (a Get of a long
	// message each: most of a conversation's load). A value written
	// before format 12 lacks them.
	episodeTimed byte = 1 << 3
	// episodeVoiced: the episode's speaker follows the times (its length
	// and bytes; empty for the user's own turn), so that a query ranks an
	// episode on what the document map holds and reads only the episodes
	// it serves (Query's reads of long messages it then did not serve
	// were most of a conversation's cold first query). A value written
	// before format 15 lacks it.
	episodeVoiced byte = 1 << 4
)

// appendEpisodeDoc appends an episode's document map value.
func appendEpisodeDoc(dst []byte, d *episodeDoc) []byte {
	dst = kv.AppendUint64(append(dst, docEpisode), d.seq)
	var f byte
	if d.hasClaims {
		f |= episodeHasClaims
	}
	if d.more {
		f |= episodeSaysMore
	}
	if d.standsKnown {
		f |= episodeStandsKnown
	}
	dst = append(dst, f|episodeTimed|episodeVoiced)
	dst = kv.AppendInt64(kv.AppendInt64(dst, d.at), d.rec)
	dst = binary.AppendUvarint(dst, uint64(len(d.speaker)))
	dst = append(dst, d.speaker...)
	for _, id := range d.stands {
		b, _ := hex.DecodeString(id)
		dst = append(dst, b...)
	}
	return dst
}

// decodeEpisodeFlags fills in d's flags and stands from the document map
// value v (at least 9 bytes), its times if v holds them (timed) and its
// speaker if v holds it (d.voiced).
func decodeEpisodeFlags(d *episodeDoc, v []byte) (timed bool, err error) {
	if len(v) < 10 {
		return false, nil
	}
	f := v[9]
	if f&^(episodeHasClaims|episodeSaysMore|episodeStandsKnown|episodeTimed|episodeVoiced) != 0 {
		return false, fmt.Errorf("%w: episode %d: flags %#x", ErrCorrupt, d.seq, f)
	}
	d.hasClaims, d.more, d.standsKnown = f&episodeHasClaims != 0, f&episodeSaysMore != 0, f&episodeStandsKnown != 0
	rest := v[10:]
	if timed = f&episodeTimed != 0; timed {
		if len(rest) < 16 {
			return false, fmt.Errorf("%w: episode %d: %d bytes of times", ErrCorrupt, d.seq, len(rest))
		}
		dec := kv.NewDecoder(rest[:16])
		d.at, d.rec = dec.Int64(), dec.Int64()
		rest = rest[16:]
	}
	if d.voiced = f&episodeVoiced != 0; d.voiced {
		if !timed {
			return false, fmt.Errorf("%w: episode %d: a speaker without times", ErrCorrupt, d.seq)
		}
		n, w := binary.Uvarint(rest)
		if w <= 0 || n > uint64(len(rest)-w) {
			return false, fmt.Errorf("%w: episode %d: speaker cut short", ErrCorrupt, d.seq)
		}
		d.speaker, rest = string(rest[w:w+int(n)]), rest[w+int(n):]
	}
	if len(rest)%idLen != 0 {
		return false, fmt.Errorf("%w: episode %d: %d bytes of stands", ErrCorrupt, d.seq, len(rest))
	}
	for ; len(rest) > 0; rest = rest[idLen:] {
		d.stands = append(d.stands, hex.EncodeToString(rest[:idLen]))
	}
	return timed, nil
}

// userIndex is one user's retrieval indexes, loaded lazily from the store
// and kept in step by the write path (same batch as the facts).
type userIndex struct {
	bm  *bm25.Index
	vec *hnsw.Index
	tmp *temporal.Index
	g   *graph.Graph

	mu sync.RWMutex
	// episodes: document → what Query needs to decide whether a raw
	// episode may be served.
	episodes map[uint32]*episodeDoc
	// factsOf: episode seq → what the episode produced (the documents of
	// its facts' versions, their subjects and contexts); versionsOf: fact
	// ID → the documents of its versions. Keyed by the ID's bytes, not
	// its hex: a load decodes them from the document map, and a key costs
	// no allocation of its own.
	factsOf    map[uint64]*episodeFacts
	versionsOf map[[idLen]byte]*factDocs
	factChunk  []factDocs // where newFactDocs carves the next one
	// speakers: normalised speaker → the first episode they said and
	// their name; nil until read from the episode log (see participants).
	speakers map[string]spoke
	// The document map (what each document names), held so that Query
	// reads a candidate's version without first reading the map from the
	// store; pointer-free, so a large tenant costs the collector nothing.
	// docAt[doc] is 1 + the offset in docArena of the value (uvarint
	// length, bytes); 0 means not held. Values are never rewritten.
	docArena []byte
	docAt    []uint32
	// held is what the structures above hold (the indexes' own memory
	// aside: see size), as of the last noteHeldLocked: after a load, a
	// write's commit, a reader's change. entries is the part their maps'
	// entries point to (episodes' and facts' records, their sets and
	// strings), summed as they are added (under mu); versionsHint is the
	// size versionsOf was made for; factChunks counts newFactDocs'
	// allocations.
	held         atomic.Int64
	entries      int64
	versionsHint int
	factChunks   int
	// tokBytes is what pathTok holds (see tokens).
	tokBytes atomic.Int64
	// grown: a reader added to pathTok (see tokens), which the cache has
	// not counted yet.
	grown atomic.Bool
	// imaged: the user's image is worth keeping (these indexes were
	// loaded from one, or their load from the records asked for one, or
	// their writes since made them as heavy as such a load: written), so
	// a write, which deletes it, makes Close write it anew
	// (imageWriter.written). written: what the load from the records read
	// (when it was counted) and the writes since put in their batches,
	// until imaged. Both set before the indexes are shared, then by
	// writes (under the user's lock).
	imaged  bool
	written int64
	// pathTok is bm25.Tokenize of the labels and entity names the user's
	// queries reached in graph paths (see tokens), under its own lock: a
	// query reads it while others may add to it.
	pathTokMu sync.RWMutex
	pathTok   map[string][]string
	// pending holds the documents that a write in progress changed in
	// these indexes and has not committed yet (a new version, episode or
	// document map entry, an expired version): for them the indexes may
	// be ahead of the store, and Query reads them from its snapshot
	// (see queryView). A write marks a document before changing it and
	// clears the set once it committed; a write that fails leaves it, on
	// indexes it drops. Nil when empty.
	pending *roaring.Bitmap
}

// tokens returns bm25.Tokenize(s) for a label or an entity name of a
// graph path, and holds it in pathTok for the user's later queries (a
// caller looks there first: tokensHeld). Tokenize depends on its
// argument only, so an entry is never stale.
func (ui *userIndex) tokens(s string) []string {
	ts := bm25.Tokenize(s)
	ui.pathTokMu.Lock()
	defer ui.pathTokMu.Unlock()
	if held, ok := ui.pathTok[s]; ok {
		return held // another query made it meanwhile
	}
	if ui.pathTok == nil {
		ui.pathTok = map[string][]string{}
	}
	before := memsize.Map(len(ui.pathTok), pathTokSlot)
	ui.pathTok[s] = ts
	n := memsize.Map(len(ui.pathTok), pathTokSlot) - before + memsize.String(len(s)) + memsize.Slice(cap(ts), 16)
	for _, t := range ts {
		n += memsize.String(len(t))
	}
	ui.tokBytes.Add(int64(n))
	ui.grown.Store(true)
	return ts
}

// tokensHeld returns bm25.Tokenize(s) if an earlier query made it (see
// tokens).
func (ui *userIndex) tokensHeld(s string) ([]string, bool) {
	ui.pathTokMu.RLock()
	defer ui.pathTokMu.RUnlock()
	ts, ok := ui.pathTok[s]
	return ts, ok
}

// pathTokSlot is a slot of pathTok: a string's header and a slice's.
const pathTokSlot = 16 + 24

// touch marks doc as changed by the write in progress (see pending).
func (ui *userIndex) touch(doc uint32) {
	ui.mu.Lock()
	defer ui.mu.Unlock()
	if ui.pending == nil {
		ui.pending = roaring.New()
	}
	ui.pending.Add(doc)
}

// settle forgets the pending documents: their write committed.
func (ui *userIndex) settle() {
	ui.mu.Lock()
	defer ui.mu.Unlock()
	ui.pending = nil
	ui.noteHeldLocked()
}

// pendingDocs returns a copy of the pending documents, or nil if none.
func (ui *userIndex) pendingDocs() *roaring.Bitmap {
	ui.mu.RLock()
	defer ui.mu.RUnlock()
	if ui.pending == nil || ui.pending.IsEmpty() {
		return nil
	}
	return ui.pending.Clone()
}

// size estimates the memory these indexes hold, for the cache's budget:
// each index's account of its own, and what the document map and the
// maps built from it hold.
func (ui *userIndex) size() int64 {
	n := ui.held.Load() + ui.tokBytes.Load()
	if ui.bm != nil {
		n += int64(ui.bm.Bytes())
	}
	if ui.vec != nil {
		n += int64(ui.vec.Bytes())
	}
	if ui.tmp != nil {
		n += int64(ui.tmp.Bytes())
	}
	if ui.g != nil {
		n += int64(ui.g.Bytes())
	}
	return n
}

// noteHeldLocked refreshes held (ui.mu held). It costs the same at any
// size: the maps' entries are summed as they come, and their tables are
// estimated from their lengths.
func (ui *userIndex) noteHeldLocked() {
	n := memsize.Slice(cap(ui.docArena), 1) + memsize.Slice(cap(ui.docAt), 4) +
		memsize.Map(len(ui.episodes), 16) + memsize.Map(len(ui.factsOf), 16) +
		memsize.MapSized(ui.versionsHint, len(ui.versionsOf), idLen+8) +
		ui.factChunks*memsize.Slice(factChunk, int(unsafe.Sizeof(factDocs{}))) +
		memsize.Map(len(ui.speakers), 16+int(unsafe.Sizeof(spoke{})))
	ui.held.Store(int64(n) + ui.entries)
}

// episodeDocBytes is what an episode's record in episodes points to.
func episodeDocBytes(d *episodeDoc) int64 {
	n := memsize.Alloc(int(unsafe.Sizeof(*d))) + memsize.Slice(cap(d.stands), 16) + memsize.String(len(d.speaker))
	for _, id := range d.stands {
		n += memsize.String(len(id))
	}
	return int64(n)
}

// setDoc holds document doc's map value v.
func (ui *userIndex) setDoc(doc uint32, v []byte) {
	ui.mu.Lock()
	defer ui.mu.Unlock()
	ui.setDocLocked(doc, v)
}

// setDocLocked is setDoc with ui.mu held.
func (ui *userIndex) setDocLocked(doc uint32, v []byte) {
	if n := int(doc) + 1; n > len(ui.docAt) {
		if n > 2*len(ui.docAt)+1024 {
			return // not the next documents (a damaged key?): read from the store
		}
		ui.docAt = append(ui.docAt, make([]uint32, n-len(ui.docAt))...)
	}
	if ui.docArena == nil && cap(ui.docAt) > 1 {
		// A load sized docAt from the user's document count: the arena
		// is sized once from the first value (bounded, should it be an
		// outlier), not grown by doubling, which allocated twice what
		// it kept.
		ui.docArena = make([]byte, 0, (cap(ui.docAt)-1)*min(len(v)+2, 160)*5/4)
	}
	ui.docAt[doc] = uint32(len(ui.docArena)) + 1
	ui.docArena = binary.AppendUvarint(ui.docArena, uint64(len(v)))
	ui.docArena = append(ui.docArena, v...)
}

// docValue returns document doc's map value, if held. The bytes are
// shared: callers must not modify them.
func (ui *userIndex) docValue(doc uint32) ([]byte, bool) {
	ui.mu.RLock()
	defer ui.mu.RUnlock()
	if int(doc) >= len(ui.docAt) || ui.docAt[doc] == 0 {
		return nil, false
	}
	b := ui.docArena[ui.docAt[doc]-1:]
	n, w := binary.Uvarint(b)
	if w <= 0 || uint64(len(b)-w) < n {
		return nil, false
	}
	return b[w : w+int(n) : w+int(n)], true
}

// episodeDocOf returns what the document map holds of the episode
// document doc names (nil if it names none).
func (ui *userIndex) episodeDocOf(doc uint32) *episodeDoc {
	ui.mu.RLock()
	defer ui.mu.RUnlock()
	return ui.episodes[doc]
}

type episodeDoc struct {
	seq       uint64
	at, rec   int64
	hasClaims bool
	// more: the episode says more than its claims state (see txn.saysMore).
	more bool
	// stands: the IDs of the facts its claims stand on; standsKnown: they
	// were recorded (not a value written before they were).
	stands      []string
	standsKnown bool
	// speaker is the episode's Speaker, if voiced: recorded (a value
	// written before format 15 is not, and its episode is read for it).
	speaker string
	voiced  bool
}

// indexSet is the engine's indexer: per-user indexes behind a cache.
//
// A user's indexes are loaded and changed only under the user's lock
// (Engine.lockUser): a load then never interleaves with a commit, so the
// cache never holds a state from before a write that later writes build on.
//
// With a budget (Options.IndexCacheBytes), loading a user evicts the least
// recently used others until the cache's estimated size fits. Eviction
// only forgets the pointer: a write holding an evicted user's indexes
// finishes on them and commits, and the next use reloads what was
// committed (under the user's lock, so after that write).
type indexSet struct {
	e     *Engine
	emb   embed.Embedder
	hnswO hnsw.Options
	bmO   bm25.Options
	mu    sync.Mutex
	users map[string]*list.Element // of *cachedIndex
	lru   *list.List               // front: most recently used
	// budget bounds the estimated bytes of the cached indexes; 0: none.
	budget int64
	// total is the sum of the entries' counted bytes. Writes grow an
	// index without telling the set, so an entry's count is refreshed
	// whenever it is used (cached, put): the total lags by at most the
	// last write of each user, and no operation sums every user.
	total int64
	// evictions counts the entries put dropped to fit the budget.
	evictions atomic.Uint64
	// imageLoads counts the loads read from an index image.
	imageLoads atomic.Uint64
}

type cachedIndex struct {
	user    string
	ui      *userIndex
	counted int64 // ui.size() when last added to total
}

// recount brings c's share of the total up to date (s.mu held).
func (s *indexSet) recount(c *cachedIndex) {
	n := c.ui.size()
	s.total += n - c.counted
	c.counted = n
}

func newIndexSet(e *Engine, emb embed.Embedder, budget int64) *indexSet {
	return &indexSet{e: e, emb: emb, users: map[string]*list.Element{}, lru: list.New(), budget: budget}
}

func (s *indexSet) cached(user string) *userIndex {
	s.mu.Lock()
	defer s.mu.Unlock()
	el := s.users[user]
	if el == nil {
		return nil
	}
	s.lru.MoveToFront(el)
	c := el.Value.(*cachedIndex)
	s.recount(c)
	// Writes grow a cached user's indexes after they were put: the total
	// is brought back within the budget here too, not only at a load.
	s.shrinkLocked(el)
	return c.ui
}

// grew brings user's share of the total up to date after a write grew
// ui, its cached indexes, and evicts others while the total exceeds the
// budget: a user written once and not read since (an import of many
// users) would otherwise stay counted at the size it was loaded with.
func (s *indexSet) grew(user string, ui *userIndex) {
	s.mu.Lock()
	defer s.mu.Unlock()
	el := s.users[user]
	if el == nil || el.Value.(*cachedIndex).ui != ui {
		return // evicted meanwhile, or a Rebuild's indexes
	}
	s.recount(el.Value.(*cachedIndex))
	s.shrinkLocked(el)
}

// put caches user's freshly loaded indexes and evicts the least recently
// used others while the estimated total exceeds the budget.
func (s *indexSet) put(user string, ui *userIndex) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if el := s.users[user]; el != nil {
		s.removeLocked(el)
	}
	c := &cachedIndex{user: user, ui: ui}
	keep := s.lru.PushFront(c)
	s.users[user] = keep
	s.recount(c)
	s.shrinkLocked(keep)
}

// shrinkLocked evicts the least recently used users but keep while the
// estimated total exceeds the budget (s.mu held).
func (s *indexSet) shrinkLocked(keep *list.Element) {
	if s.budget <= 0 {
		return
	}
	for el := s.lru.Back(); el != nil && s.total > s.budget; {
		prev := el.Prev()
		if el != keep {
			s.removeLocked(el)
			s.evictions.Add(1)
		}
		el = prev
	}
}

// removeLocked drops an entry and its share of the total (s.mu held).
func (s *indexSet) removeLocked(el *list.Element) {
	c := el.Value.(*cachedIndex)
	s.total -= c.counted
	s.lru.Remove(el)
	delete(s.users, c.user)
}

// size returns how many users' indexes are cached and their estimated
// bytes, summed afresh.
func (s *indexSet) size() (int, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	total := int64(0)
	for el := s.lru.Front(); el != nil; el = el.Next() {
		total += el.Value.(*cachedIndex).ui.size()
	}
	return s.lru.Len(), total
}

// get returns user's indexes for a caller that holds the user's lock,
// loading them through r on a miss (a write's batch, so that a Rebuild's
// range deletions are seen).
func (s *indexSet) get(ctx context.Context, r kv.Reader, user string) (*userIndex, error) {
	if ui := s.cached(user); ui != nil {
		return ui, nil
	}
	ui, err := s.load(ctx, r, user, false)
	if err != nil {
		return nil, err
	}
	s.put(user, ui)
	return ui, nil
}

// view returns user's indexes for a reader that does not hold the user's
// lock; a miss takes the lock to load.
func (s *indexSet) view(ctx context.Context, user string) (*userIndex, error) {
	if ui := s.cached(user); ui != nil {
		return ui, nil
	}
	unlock := s.e.lockUser(user)
	defer unlock()
	return s.get(ctx, s.e.db, user)
}

// load reads user's indexes through r. A user whose counters say no
// document was ever made (a new user's first episode, before it is
// applied) has empty indexes: unless full, they are made without the
// half-dozen scans that would find nothing.
func (s *indexSet) load(ctx context.Context, r kv.Reader, user string, full bool) (*userIndex, error) {
	m, err := loadMeta(r, user)
	if err != nil {
		return nil, err
	}
	return s.loadWith(ctx, r, user, m, full)
}

// loadWith is load for a caller that has read the user's counters m
// through r.
func (s *indexSet) loadWith(ctx context.Context, r kv.Reader, user string, m userMeta, full bool) (*userIndex, error) {
	if m.Doc == 0 && !full {
		return s.newUserIndex(bm25.New(kv.UserKey(user, kv.SubBM25), s.bmO),
			hnsw.New(s.emb.Dim(), kv.UserKey(user, kv.SubVector), s.hnswO),
			temporal.New(kv.UserKey(user, kv.SubTemporal)), graph.New(kv.UserKey(user, kv.SubGraph))), nil
	}
	if m.Doc < uint32(s.e.tune.imageMinDocs) || s.e.images == nil {
		return s.loadFrom(ctx, r, r, nil, user, m)
	}
	// A user with an image is read from it (see image.go); one without
	// is read from its records, and its image written after if that load
	// was heavy enough.
	img, err := openImage(r, user)
	if err == nil && img != nil {
		var ui *userIndex
		if ui, err = s.loadFrom(ctx, r, r, img, user, m); err == nil {
			s.imageLoads.Add(1)
			ui.imaged = true
			return ui, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		// Whatever failed (the image's own checks, or a loader refusing
		// what it served), the records decide: if they load, the image
		// was wrong and is replaced.
		err = errors.Join(errImageDamaged, err)
	}
	damaged := errors.Is(err, errImageDamaged)
	if err != nil && !damaged {
		return nil, err
	}
	switch {
	case errors.Is(err, errImageOutdated):
		s.e.log.Debug("memor: a user's index image is of an older version; its indexes are loaded from the records", "user", user)
	case damaged:
		s.e.log.Warn("memor: a user's index image is damaged; its indexes are loaded from the records", "user", user, "err", err)
	}
	cr := &countingReader{Reader: r}
	ui, err := s.loadFrom(ctx, r, cr, nil, user, m)
	read := cr.n.Load()
	if err != nil {
		return nil, err
	}
	if m.Doc <= imageMaxDocs && read <= int64(s.e.tune.imageMaxBytes) && (damaged || read >= int64(s.e.tune.imageMinBytes)) {
		s.e.images.request(user, damaged)
		ui.imaged = true
	}
	ui.written = read
	return ui, nil
}

// countingReader is a Reader that counts the bytes of the keys and values
// it serves: what a load from the records read, which decides whether the
// user's image is worth writing. The time of a load follows its bytes
// more than its documents: a user of a few hundred long messages reads as
// much as one of thousands of short facts. (Safe for the concurrent parts
// of a load.)
type countingReader struct {
	kv.Reader
	n atomic.Int64
}

func (c *countingReader) Get(key []byte) ([]byte, error) {
	v, err := c.Reader.Get(key)
	c.n.Add(int64(len(key) + len(v)))
	return v, err
}

func (c *countingReader) Scan(ctx context.Context, prefix []byte, fn func(k, v []byte) error) error {
	var n int64
	err := c.Reader.Scan(ctx, prefix, func(k, v []byte) error {
		n += int64(len(k) + len(v))
		return fn(k, v)
	})
	c.n.Add(n)
	return err
}

// loadFrom is load from the image img if not nil, else from the records
// through src (r itself, or r counted).
func (s *indexSet) loadFrom(ctx context.Context, r, src kv.Reader, img *imageReader, user string, m userMeta) (*userIndex, error) {
	var (
		bm  *bm25.Index
		vec *hnsw.Index
		tmp *temporal.Index
		g   *graph.Graph
		// ui holds the document map and the maps built from it until the
		// indexes are in.
		ui = s.newUserIndex(nil, nil, nil, nil)
	)
	// Every document up to the counter is in the map, and most are
	// versions of distinct facts: sized once, not grown as they come.
	if img == nil { // (an image holds the document map's arena whole)
		ui.docAt = make([]uint32, 0, int(m.Doc)+1)
	}
	ui.versionsOf = make(map[[idLen]byte]*factDocs, m.Doc)
	ui.versionsHint = int(m.Doc)
	// The parts read disjoint key ranges and build disjoint structures,
	// so they run at once; the document map needs the temporal index
	// (which versions are active) and follows it. The first part's error
	// in this order is the load's, whichever finished first.
	_, atOnce := r.(*kv.DB)
	fromImage := img != nil
	err := s.loadParts(atOnce && (m.Doc >= loadAtOnceDocs || fromImage), user,
		func() (err error) {
			bo := s.bmO
			bo.Capacity = int(m.Doc)
			if fromImage {
				// The index's own image: its postings are decoded as
				// queries ask for them.
				b, err := img.blob(ctx, kv.SubBM25)
				if err != nil {
					return err
				}
				bm, err = bm25.LoadImage(b, kv.UserKey(user, kv.SubBM25), bo)
				return err
			}
			bm, err = bm25.Load(ctx, src, kv.UserKey(user, kv.SubBM25), bo)
			return err
		},
		func() (err error) {
			ho := s.hnswO
			ho.Capacity = int(m.Doc) // every document but a contested version has a vector
			if fromImage {
				b, err := img.blob(ctx, kv.SubVector)
				if err != nil {
					return err
				}
				if len(b) == 0 { // the user has no vector index
					vec = hnsw.New(s.emb.Dim(), kv.UserKey(user, kv.SubVector), s.hnswO)
					return nil
				}
				vec, err = hnsw.LoadImage(b, kv.UserKey(user, kv.SubVector), ho)
				return err
			}
			vec, err = hnsw.Load(ctx, src, kv.UserKey(user, kv.SubVector), ho)
			if errors.Is(err, hnsw.ErrNotFound) {
				vec, err = hnsw.New(s.emb.Dim(), kv.UserKey(user, kv.SubVector), s.hnswO), nil
			}
			return err
		},
		func() (err error) {
			if fromImage {
				b, err := img.blob(ctx, kv.SubTemporal)
				if err != nil {
					return err
				}
				if tmp, err = temporal.LoadImage(b, kv.UserKey(user, kv.SubTemporal)); err != nil {
					return err
				}
				if b, err = img.blob(ctx, kv.SubDoc); err != nil {
					return err
				}
				return loadDocImage(b, r, user, ui, tmp)
			}
			if tmp, err = temporal.Load(ctx, src, kv.UserKey(user, kv.SubTemporal)); err != nil {
				return err
			}
			return loadDocs(ctx, src, user, ui, tmp)
		},
		func() (err error) {
			if fromImage {
				b, err := img.blob(ctx, kv.SubGraph)
				if err != nil {
					return err
				}
				g, err = graph.LoadImage(b, kv.UserKey(user, kv.SubGraph))
				return err
			}
			g, err = graph.LoadSized(ctx, src, kv.UserKey(user, kv.SubGraph), int(m.Doc))
			return err
		},
	)
	if err != nil {
		return nil, err
	}
	ui.bm, ui.vec, ui.tmp, ui.g = bm, vec, tmp, g
	ui.mu.Lock()
	ui.noteHeldLocked()
	ui.mu.Unlock()
	return ui, nil
}

// loadAtOnceDocs is the size from which a load's parts run at once: for
// a larger user that saves milliseconds, while for a small one it saves
// tens of microseconds and, on a busy machine, makes each part wait for a
// core: the tail of small users' loads grows. A load from an image runs
// them at once whatever the documents: a user has one only if its
// records are heavy (a conversation of 190 long messages: p50 1.27 ->
// 1.10 ms for its first query).
const loadAtOnceDocs = 512

// loadParts runs the parts of a load and returns the first error in their
// order. With atOnce (a load through the store, which may be read
// concurrently, of a large user) they run at once: the load is most of a
// first query's time, and its parts are about the same size; otherwise
// (a write's batch, a small user) one after the other. A part that panics
// fails the load with ErrInternal, as a panic in the caller's goroutine
// would through its recovered.
func (s *indexSet) loadParts(atOnce bool, user string, parts ...func() error) error {
	errs := make([]error, len(parts))
	run := func(i int) {
		defer func() {
			if p := recover(); p != nil {
				errs[i] = s.e.panicError(p, "load", user)
			}
		}()
		errs[i] = parts[i]()
	}
	if !atOnce || len(parts) == 1 {
		for i := range parts {
			if run(i); errs[i] != nil {
				return errs[i]
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	for i := range parts[1:] {
		wg.Go(func() { run(i + 1) })
	}
	run(0)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// loadDocs reads user's document map into ui from its records (before
// its indexes are set), with the versions that tmp holds as active.
func loadDocs(ctx context.Context, r kv.Reader, user string, ui *userIndex, tmp *temporal.Index) error {
	// No one else sees ui before the load returns: its lock is held once,
	// not per document, and so is tmp's (Reading).
	ui.mu.Lock()
	defer ui.mu.Unlock()
	return tmp.Reading(func(active func(uint32) bool) error {
		docs := kv.UserKey(user, kv.SubDoc)
		dl := docLoad{r: r, user: user, ui: ui, active: active}
		return r.Scan(ctx, docs, func(k, v []byte) error {
			doc := kv.NewDecoder(k[len(docs):]).Uint32()
			if len(v) < 9 {
				return fmt.Errorf("%w: document %d", ErrCorrupt, doc)
			}
			ui.setDocLocked(doc, v)
			return dl.add(doc, v)
		})
	})
}

// docLoad builds, document by document, what a userIndex derives from its
// document map (the episodes, what each produced, the fact versions),
// with ui.mu held and active reporting whether the interval index holds a
// version. The subject and the context are decoded into buffers reused
// across documents (see addFact), and an episode's facts are looked up
// once for a run of its documents (a batch's are consecutive). r reads
// the episodes whose values hold no times (written before format 12).
type docLoad struct {
	r            kv.Reader
	user         string
	ui           *userIndex
	active       func(uint32) bool
	subj, ctxKey []byte
	run          *episodeFacts
}

// add derives what document doc's map value v (at least 9 bytes) says.
func (dl *docLoad) add(doc uint32, v []byte) error {
	ui := dl.ui
	seq := kv.NewDecoder(v[1:9]).Uint64()
	switch v[0] {
	case docVersion:
		if dl.active(doc) && len(v) >= 9+idLen+8 {
			d := kv.NewDecoder(v[9:])
			dl.subj = d.AppendBytes(dl.subj[:0])
			dl.ctxKey = d.AppendBytes(dl.ctxKey[:0]) // the predicate, not kept
			dl.ctxKey = d.AppendBytes(dl.ctxKey[:0])
			id := [idLen]byte(v[len(v)-8-idLen : len(v)-8])
			if dl.run == nil || dl.run.seq != seq {
				dl.run = ui.episodeFactsLocked(seq)
			}
			addFact(ui, dl.run, id, dl.subj, dl.ctxKey, doc)
		}
	case docEpisode:
		d := &episodeDoc{seq: seq}
		timed, err := decodeEpisodeFlags(d, v)
		if err != nil {
			return err
		}
		if !timed {
			ep, err := getEpisode(dl.r, dl.user, seq)
			if err != nil {
				return fmt.Errorf("%w: episode %d of document %d: %v", ErrCorrupt, seq, doc, err)
			}
			d.at, d.rec = nanos(ep.At), nanos(ep.RecordedAt)
		}
		ui.episodes[doc] = d
		ui.entries += episodeDocBytes(d)
	default:
		return fmt.Errorf("%w: document %d of kind %#x", ErrCorrupt, doc, v[0])
	}
	return nil
}

func (s *indexSet) newUserIndex(bm *bm25.Index, vec *hnsw.Index, tmp *temporal.Index, g *graph.Graph) *userIndex {
	return &userIndex{bm: bm, vec: vec, tmp: tmp, g: g, episodes: map[uint32]*episodeDoc{},
		factsOf: map[uint64]*episodeFacts{}, versionsOf: map[[idLen]byte]*factDocs{}}
}

// addFactOf records that document doc is a version of fact id (hex),
// produced by episode seq, with the subject and context keys given.
func (ui *userIndex) addFactOf(seq uint64, id, subjKey, ctxKey string, doc uint32) error {
	key, err := parseID(id)
	if err != nil {
		return err
	}
	ui.mu.Lock()
	defer ui.mu.Unlock()
	addFact(ui, ui.episodeFactsLocked(seq), key, subjKey, ctxKey, doc)
	return nil
}

// episodeFacts is what ui holds of the facts one episode produced.
type episodeFacts struct {
	seq uint64
	// facts: the documents of each fact's versions (a fact's factDocs
	// once, unless the episode's versions of it were added apart);
	// subjects and contexts: their normalised subjects and contexts.
	// A list, not a map by fact ID: a load adds every fact, and the only
	// question asked of them is whether all have a visible version.
	facts              []*factDocs
	subjects, contexts map[string]bool
	// subj and ctx: the subject and context added last (if held): the
	// next fact of the episode most often shares them (a batch's facts
	// are about a few subjects), and then costs no lookup.
	subj, ctx       string
	hasSubj, hasCtx bool
}

// episodeFactsLocked returns what ui holds of episode seq, made if new
// (ui.mu held).
func (ui *userIndex) episodeFactsLocked(seq uint64) *episodeFacts {
	ef := ui.factsOf[seq]
	if ef == nil {
		ef = &episodeFacts{seq: seq, subjects: map[string]bool{}, contexts: map[string]bool{}}
		ui.factsOf[seq] = ef
		ui.entries += int64(memsize.Alloc(int(unsafe.Sizeof(*ef))) + 2*memsize.Map(0, setSlot))
	}
	return ef
}

// addFact records in ef, episode ef.seq's facts, that document doc is a
// version of fact id with the subject and context keys given (ui.mu
// held): keys as strings or, from a load's reused buffers, bytes (a map
// lookup with string(b) does not copy b, so a key is allocated only the
// first time it is stored).
func addFact[K string | []byte](ui *userIndex, ef *episodeFacts, id [idLen]byte, subjKey, ctxKey K, doc uint32) {
	if !ef.hasSubj || string(subjKey) != ef.subj {
		if k, added := addKey(ef.subjects, subjKey); added {
			ef.subj, ef.hasSubj = k, true
			ui.entries += setKeyBytes(len(ef.subjects), len(k))
		}
	}
	if !ef.hasCtx || string(ctxKey) != ef.ctx {
		if k, added := addKey(ef.contexts, ctxKey); added {
			ef.ctx, ef.hasCtx = k, true
			ui.entries += setKeyBytes(len(ef.contexts), len(k))
		}
	}
	d := ui.versionsOf[id]
	if d == nil {
		d = ui.newFactDocs()
		ui.versionsOf[id] = d
	}
	if d.lastSeq != ef.seq || d.n == 0 {
		d.lastSeq = ef.seq
		c := cap(ef.facts)
		ef.facts = append(ef.facts, d)
		if cap(ef.facts) != c {
			ui.entries += int64(memsize.Slice(cap(ef.facts), 8) - memsize.Slice(c, 8))
		}
	}
	// (Most versions leave the capacities as they were: only a growth
	// is priced.)
	c := cap(d.rest)
	d.add(doc)
	if cap(d.rest) != c {
		ui.entries += int64(memsize.Slice(cap(d.rest), 4) - memsize.Slice(c, 4))
	}
}

// setSlot is a slot of an episode's subjects or contexts: a string's
// header and a bool.
const setSlot = 24

// setKeyBytes is what a set's n-th key, of k bytes, added to it.
func setKeyBytes(n, k int) int64 {
	return int64(memsize.Map(n, setSlot) - memsize.Map(n-1, setSlot) + memsize.String(k))
}

// addKey adds key to set if it is new, and returns the string it
// allocated for it (a lookup with string(b) does not copy b).
func addKey[K string | []byte](set map[string]bool, key K) (string, bool) {
	if set[string(key)] {
		return "", false
	}
	k := string(key)
	set[k] = true
	return k, true
}

// newFactDocs returns an empty factDocs carved from a chunk (ui.mu
// held): a user's facts cost one allocation per factChunk of them.
func (ui *userIndex) newFactDocs() *factDocs {
	if len(ui.factChunk) == cap(ui.factChunk) {
		ui.factChunk = make([]factDocs, 0, factChunk)
		ui.factChunks++
	}
	ui.factChunk = ui.factChunk[:len(ui.factChunk)+1]
	return &ui.factChunk[len(ui.factChunk)-1]
}

// factChunk is how many factDocs one allocation holds.
const factChunk = 128

// factDocs is the documents of one fact's versions. A fact has one or a
// few, so a list with the first inline (one allocation) stands where a
// roaring bitmap per fact (five) made most of a large user's load's
// allocations.
type factDocs struct {
	first uint32
	n     int // documents held: first, then rest
	rest  []uint32
	// lastSeq: the episode whose facts list holds it last (see addFact).
	lastSeq uint64
}

// add adds doc, once.
func (d *factDocs) add(doc uint32) {
	if d.has(doc) {
		return
	}
	if d.n == 0 {
		d.first = doc
	} else {
		d.rest = append(d.rest, doc)
	}
	d.n++
}

func (d *factDocs) has(doc uint32) bool {
	return d.n > 0 && d.first == doc || slices.Contains(d.rest, doc)
}

// intersects reports whether one of the documents is in b.
func (d *factDocs) intersects(b *roaring.Bitmap) bool {
	if d.n == 0 {
		return false
	}
	if b.Contains(d.first) {
		return true
	}
	for _, doc := range d.rest {
		if b.Contains(doc) {
			return true
		}
	}
	return false
}

func (s *indexSet) dropUser(user string) {
	s.mu.Lock()
	if el := s.users[user]; el != nil {
		s.removeLocked(el)
	}
	s.mu.Unlock()
}

func (s *indexSet) embedOne(ctx context.Context, text string) ([]float32, error) {
	vs, err := s.emb.Embed(ctx, []string{text})
	if err != nil {
		return nil, fmt.Errorf("memor: embed: %w", err)
	}
	if len(vs) != 1 {
		return nil, fmt.Errorf("memor: embed: %d vectors for 1 text", len(vs))
	}
	return vs[0], nil
}

func interval(f *Fact) temporal.Interval {
	return temporal.Interval{ValidFrom: f.ValidFrom, ValidTo: f.ValidTo, RecordedAt: f.RecordedAt, ExpiredAt: f.ExpiredAt}
}

// spoke is when a participant first spoke, and the name they go by.
type spoke struct {
	seq  uint64
	name string
}

// noteSpeaker records ep's speaker in ui.speakers once they are read
// (ui.mu held): an episode applied before that is in the log they are
// read from.
func (ui *userIndex) noteSpeaker(ep *Episode) {
	if ui.speakers == nil {
		return
	}
	v := ep.voice()
	if v == extract.User {
		return
	}
	k := norm.Key(v)
	s, ok := ui.speakers[k]
	if !ok {
		ui.entries += int64(memsize.String(len(k)) + memsize.String(len(v)))
	}
	if !ok || ep.Seq < s.seq {
		ui.speakers[k] = spoke{ep.Seq, v}
	}
}

// participants returns the names of the user's participants (see Speaker)
// who spoke in an episode before seq (0: an episode not yet in the log,
// which comes after all of them), the owner aside, from the episode log
// read through r: they depend on the log alone, so a replay finds the
// same. The log is read once per loaded index.
func (ui *userIndex) participants(ctx context.Context, r kv.Reader, user string, seq uint64) ([]string, error) {
	ui.mu.RLock()
	loaded := ui.speakers != nil
	ui.mu.RUnlock()
	if !loaded {
		seen := map[string]spoke{}
		err := r.Scan(ctx, kv.UserKey(user, kv.SubEpisode), func(_, v []byte) error {
			ep, err := decodeEpisode(user, v)
			if err != nil {
				return err
			}
			if v := ep.voice(); v != extract.User {
				if s, ok := seen[norm.Key(v)]; !ok || ep.Seq < s.seq {
					seen[norm.Key(v)] = spoke{ep.Seq, v}
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		ui.mu.Lock()
		if ui.speakers == nil {
			ui.speakers = seen
			for k, s := range seen {
				ui.entries += int64(memsize.String(len(k)) + memsize.String(len(s.name)))
			}
			ui.noteHeldLocked()
		}
		ui.mu.Unlock()
	}
	ui.mu.RLock()
	defer ui.mu.RUnlock()
	var out []string
	for _, s := range ui.speakers {
		if seq == 0 || s.seq < seq {
			out = append(out, s.name)
		}
	}
	return out, nil
}

// check verifies each index against what is persisted, and the indexes
// against the fact versions: every active version is in the temporal
// index with its exact intervals, in BM25, in the vector index and in the
// graph; every text episode is in BM25 and the vector index.
func (s *indexSet) check(ctx context.Context, r kv.Reader, user string) error {
	s.dropUser(user) // check what is on disk, not a cache
	ui, err := s.load(ctx, r, user, true)
	if err != nil {
		return err
	}
	s.put(user, ui)
	var errs []error
	for _, c := range []interface {
		Check(context.Context, kv.Reader) error
	}{ui.bm, ui.vec, ui.tmp, ui.g} {
		if err := c.Check(ctx, r); err != nil {
			errs = append(errs, err)
		}
	}
	active := 0
	for _, sub := range []kv.Sub{kv.SubLive, kv.SubHistory, kv.SubArchive} {
		err := r.Scan(ctx, kv.UserKey(user, sub), func(_, v []byte) error {
			f, err := decodeFact(user, v)
			if err != nil || f.Status != Active {
				return err
			}
			active++
			if iv, ok := ui.tmp.Get(f.Doc); !ok || iv != interval(&f) {
				errs = append(errs, fmt.Errorf("user %q: temporal index has %+v for version %s, want %+v", user, iv, f.ID, interval(&f)))
			}
			return nil
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	docs := active + len(ui.episodes)
	if ui.tmp.Len() != active {
		errs = append(errs, fmt.Errorf("user %q: temporal index has %d versions, want %d", user, ui.tmp.Len(), active))
	}
	if ui.bm.Len() != docs {
		errs = append(errs, fmt.Errorf("user %q: bm25 has %d documents, want %d", user, ui.bm.Len(), docs))
	}
	if ui.vec.Len() != docs {
		errs = append(errs, fmt.Errorf("user %q: vector index has %d documents, want %d", user, ui.vec.Len(), docs))
	}
	if _, edges := ui.g.Len(); edges != active {
		errs = append(errs, fmt.Errorf("user %q: graph has %d edges, want %d", user, edges, active))
	}
	return errors.Join(errs...)
}

// visibleEpisodes returns the episode documents that may be served at
// (validAt, knownAt): said by then, and not stale. Raw text must not
// smuggle a superseded, ended, corrected or contested fact back in: "My
// brother Alex lives in Austin" is not served once Alex has moved, even
// though "user brother Alex" still holds (that fact is served on its
// own). But hiding an episode hides everything it says, so one is
// withheld only when
//
//   - a fact its claims stand on — one it asserted, the fact a
//     restatement of it reinforced, the value an end of it closed — has
//     no version visible in the view (no longer believed, no longer true,
//     or never believed: contested), and
//   - it says nothing else: at most half of its distinct index terms
//     are none of the terms its claims state (see txn.saysMore).
//
// So a restatement is served while what it restates holds, an end with
// nothing to close ("I also lost my job at Door Dash") is served, an
// episode nothing was extracted from is served, and "I live in Boston"
// alone is withheld once Boston is superseded — and served as of a time
// when it held. An episode written before the stands were recorded keeps
// the older rule: withheld unless every fact it produced is visible.
func (ui *userIndex) visibleEpisodes(validAt, knownAt int64, facts *roaring.Bitmap) *roaring.Bitmap {
	out := roaring.New()
	ui.mu.RLock()
	defer ui.mu.RUnlock()
	for doc, ep := range ui.episodes {
		if ep.at > validAt || ep.rec > knownAt {
			continue
		}
		if !ep.standsKnown {
			if ep.hasClaims && !allVisible(ui.factsOf[ep.seq], facts) {
				continue
			}
		} else if !ep.more && ui.stale(ep.stands, facts) {
			continue
		}
		out.Add(doc)
	}
	return out
}

// stale reports whether one of the facts ids has no version in visible
// (ui.mu held).
func (ui *userIndex) stale(ids []string, visible *roaring.Bitmap) bool {
	for _, id := range ids {
		key, err := parseID(id)
		if err != nil {
			return true
		}
		if vs := ui.versionsOf[key]; vs == nil || !vs.intersects(visible) {
			return true
		}
	}
	return false
}

// episodeSubjects returns the subjects of the facts an episode produced.
func (ui *userIndex) episodeSubjects(seq uint64) map[string]bool {
	ui.mu.RLock()
	defer ui.mu.RUnlock()
	if ef := ui.factsOf[seq]; ef != nil {
		return ef.subjects
	}
	return nil
}

// episodeContexts returns the contexts of the facts an episode produced.
func (ui *userIndex) episodeContexts(seq uint64) map[string]bool {
	ui.mu.RLock()
	defer ui.mu.RUnlock()
	if ef := ui.factsOf[seq]; ef != nil {
		return ef.contexts
	}
	return nil
}

func allVisible(ef *episodeFacts, visible *roaring.Bitmap) bool {
	if ef == nil || len(ef.facts) == 0 {
		return false
	}
	for _, versions := range ef.facts {
		if !versions.intersects(visible) {
			return false
		}
	}
	return true
}
