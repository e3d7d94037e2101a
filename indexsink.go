package memor

import (
	"context"
	"fmt"
	"sync"

	"github.com/memor-db/memor/embed"
	"github.com/memor-db/memor/internal/norm"
	"github.com/memor-db/memor/kv"
)

// indexSink is what a write tells the user's indexes: the last stage of
// the write pipeline (write API → applying an episode → resolving a slot
// → index sink). Its records go into the write's batch; it knows nothing
// of the transaction that calls it.
type indexSink interface {
	// setDoc holds document doc's map value v (the caller writes it to
	// the store): the first call for any document a write indexes.
	setDoc(doc uint32, v []byte) error
	// putVersion indexes a new version f (f.Doc set).
	putVersion(f *Fact) error
	// expireVersion records that f's belief ended (f.ExpiredAt set).
	expireVersion(f *Fact) error
	// putEpisode indexes text, the text of episode ep, as document doc.
	putEpisode(ep *Episode, doc uint32, text string, d *episodeDoc) error
	// flush writes what the indexes held back until the commit.
	flush() error
}

var _ indexSink = (*indexWrite)(nil)

// indexWrite is the index set's sink for one write of one user: the
// user's cached indexes, looked up once when first needed (if the cache
// evicts them meanwhile, the write finishes on them, see indexSet). It
// also holds the vectors embedded ahead for the write (see prefetch). (A
// new user's large first write writes its index records without the
// indexes: see bulkIndex.)
type indexWrite struct {
	s    *indexSet
	ctx  context.Context
	b    *kv.Batch
	user string
	// ui: the user's indexes, once needed. indexed: the write changed
	// them (or replaces them), so they must be dropped from the cache
	// unless it commits.
	ui                 *userIndex
	indexed, committed bool
	// vectors: embeddings of the write's fact texts, fetched in one call
	// (see prefetch). vecBuf holds them, if pooled; returned by close.
	vectors map[string][]float32
	vecBuf  *vectorBuf
}

// writer returns the sink of a write of user through b.
func (s *indexSet) writer(ctx context.Context, b *kv.Batch, user string) *indexWrite {
	return &indexWrite{s: s, ctx: ctx, b: b, user: user}
}

// indexes returns the user's indexes for this write, loading them through
// the batch on a miss.
func (w *indexWrite) indexes() (*userIndex, error) {
	w.indexed = true
	if w.ui == nil {
		ui, err := w.s.get(w.ctx, w.b, w.user)
		if err != nil {
			return nil, err
		}
		w.ui = ui
	}
	return w.ui, nil
}

// replace makes the write build ui, indexes outside the cache (a Rebuild's
// replay), instead of the cached ones.
func (w *indexWrite) replace(ui *userIndex) {
	w.ui, w.indexed = ui, true
}

func (w *indexWrite) setDoc(doc uint32, v []byte) error {
	ui, err := w.indexes()
	if err != nil {
		return err
	}
	// Every document this write indexes (a version, an episode) is
	// mapped here first: marked pending before any index holds it.
	ui.touch(doc)
	ui.setDoc(doc, v)
	return nil
}

// flush writes the vector index's held-back records: a batch writes each
// neighbour list it changed once.
func (w *indexWrite) flush() error {
	if w.ui != nil {
		if err := w.ui.vec.Flush(w.b); err != nil {
			return err
		}
	}
	return nil
}

// done records that the write committed.
func (w *indexWrite) done() {
	w.committed = true
	if w.ui != nil {
		w.ui.settle()
		w.s.grew(w.user, w.ui)
		if w.s.e.images == nil {
			return
		}
		if !w.ui.imaged {
			// A user its writes made heavy (one created this session,
			// say) is imaged by Close like one loaded heavy: its next
			// session's first query would otherwise read the records.
			// What the batches set of the indexes stands for what a
			// load would read.
			w.ui.written += int64(w.b.ImagedBytes())
			w.ui.imaged = w.ui.written >= int64(w.s.e.tune.imageMinBytes)
		}
		if w.ui.imaged {
			w.s.e.images.noteWritten(w.user)
		}
	}
}

// close returns the pooled vectors. A write that changed the cached
// indexes and did not commit (an error, a cancelled context) drops them,
// so that the next use reloads what was committed instead of building on
// changes that never were.
func (w *indexWrite) close() {
	if w.vecBuf != nil {
		w.vectors = nil
		w.vecBuf.release()
		w.vecBuf = nil
	}
	if w.indexed && !w.committed {
		w.s.dropUser(w.user)
	}
}

// prefetch embeds the texts of the new assertions of a write (see
// factText) in one call before they are resolved, so that a batch of facts
// costs an HTTP embedder one request (split as it batches), not one per
// fact.
func (w *indexWrite) prefetch(all []string) error {
	s := w.s
	texts := distinctTexts(all)
	if len(texts) < 2 {
		return nil
	}
	// A local embedder writes into a buffer this write returns when it
	// ends (the indexes copy what they keep).
	vs, err := s.embedTexts(w.ctx, texts, func(n, dim int) [][]float32 {
		w.vecBuf = vectorPool.Get().(*vectorBuf)
		return w.vecBuf.slices(n, dim)
	})
	if err != nil {
		return err
	}
	if w.vectors == nil {
		w.vectors = make(map[string][]float32, len(texts))
	}
	for i, text := range texts {
		w.vectors[text] = vs[i]
	}
	return nil
}

// vector returns text's embedding: prefetched, or embedded now.
func (w *indexWrite) vector(text string) ([]float32, error) {
	if v, ok := w.vectors[text]; ok {
		return v, nil
	}
	return w.s.embedOne(w.ctx, text)
}

// vectorBuf is a write's pooled memory for the vectors of its facts:
// dense, or for a bulk load sparse (see bulkIndex), with the vector of
// each text.
type vectorBuf struct {
	flat     []float32
	vs       [][]float32
	sparse   embed.Sparse
	sparseOf map[string]int
}

// release returns b to the pool, forgetting the texts it names.
func (b *vectorBuf) release() {
	clear(b.sparseOf)
	b.sparse.Reset()
	vectorPool.Put(b)
}

// slices returns n vectors of length dim in the buffer.
func (b *vectorBuf) slices(n, dim int) [][]float32 {
	if cap(b.flat) < n*dim {
		b.flat = make([]float32, n*dim)
	}
	flat := b.flat[:n*dim]
	b.vs = b.vs[:0]
	for i := range n {
		b.vs = append(b.vs, flat[i*dim:(i+1)*dim:(i+1)*dim])
	}
	return b.vs
}

var vectorPool = sync.Pool{New: func() any { return new(vectorBuf) }}

// maxPooledVectors is the most float32s of vectors a write takes from the
// pool (16 MB); a larger batch allocates its own.
const maxPooledVectors = 4 << 20

// putVersion indexes a new version. Only active versions are indexed:
// contested and retracted ones are never served.
func (w *indexWrite) putVersion(f *Fact) error {
	if f.Status != Active {
		return nil
	}
	text := w.s.e.preds.factText(f)
	ui, err := w.indexes()
	if err != nil {
		return err
	}
	if err := ui.tmp.Put(w.b, f.Doc, interval(f)); err != nil {
		return err
	}
	if err := ui.bm.Add(w.b, f.Doc, text); err != nil {
		return err
	}
	v, err := w.vector(text)
	if err != nil {
		return err
	}
	// The vector index's writes wait for the commit (see flush).
	if err := ui.vec.Add(nil, f.Doc, v); err != nil {
		return err
	}
	if err := ui.g.AddEdge(w.b, f.Doc, f.Subject, f.Predicate, f.Object); err != nil {
		return err
	}
	return ui.addFactOf(f.Episode, f.ID, norm.Key(f.Subject), norm.Key(f.Context), f.Doc)
}

// expireVersion records the version's ExpiredAt in the temporal index; the
// text, vector and graph entries stay for as-of queries.
func (w *indexWrite) expireVersion(f *Fact) error {
	if f.Status != Active {
		return nil
	}
	ui, err := w.indexes()
	if err != nil {
		return err
	}
	ui.touch(f.Doc)
	return ui.tmp.Put(w.b, f.Doc, interval(f))
}

// spokenText is what BM25 indexes of a text episode: its text, after its
// speaker's name when it has one, as a transcript line reads ("Caroline:
// I live in Boston"), so that a question naming a participant matches
// their turns. The vector index embeds the text alone: a name shared by
// half the turns would make them all alike.
func spokenText(ep *Episode, text string) string {
	if ep.Speaker == "" {
		return text
	}
	return ep.Speaker + ": " + text
}

// putEpisode indexes the text of a text episode.
func (w *indexWrite) putEpisode(ep *Episode, doc uint32, text string, d *episodeDoc) error {
	ui, err := w.indexes()
	if err != nil {
		return err
	}
	if err := ui.bm.Add(w.b, doc, spokenText(ep, text)); err != nil {
		return err
	}
	v, err := w.s.embedOne(w.ctx, text)
	if err != nil {
		return err
	}
	if err := ui.vec.Add(nil, doc, v); err != nil {
		return err
	}
	ui.mu.Lock()
	ui.episodes[doc] = d
	ui.entries += episodeDocBytes(d)
	ui.noteSpeaker(ep)
	ui.mu.Unlock()
	return nil
}

// embedTexts embeds texts in one call. An embedder that writes into memory
// it is given (embed.IntoEmbedder) gets slices from pooled(len(texts),
// dim) when they fit a pooled buffer; any other embeds into its own. One
// vector must come back per text.
func (s *indexSet) embedTexts(ctx context.Context, texts []string, pooled func(n, dim int) [][]float32) ([][]float32, error) {
	var vs [][]float32
	var err error
	if into, ok := s.emb.(embed.IntoEmbedder); ok && into.Dim() > 0 && len(texts)*into.Dim() <= maxPooledVectors {
		vs = pooled(len(texts), into.Dim())
		err = into.EmbedInto(ctx, texts, vs)
	} else {
		vs, err = s.emb.Embed(ctx, texts)
	}
	if err != nil {
		return nil, fmt.Errorf("memor: embed: %w", err)
	}
	if len(vs) != len(texts) {
		return nil, fmt.Errorf("memor: embed: %d vectors for %d texts", len(vs), len(texts))
	}
	return vs, nil
}

// distinctTexts returns all without repeats, in first-seen order: the
// texts of a write to embed, each once.
func distinctTexts(all []string) []string {
	var texts []string
	seen := make(map[string]bool, len(all))
	for _, text := range all {
		if !seen[text] {
			seen[text] = true
			texts = append(texts, text)
		}
	}
	return texts
}
