package hnsw

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/cockroachdb/datadriven"

	"github.com/memor-db/memor/embed"
	realtext "github.com/memor-db/memor/internal/corpus"
	"github.com/memor-db/memor/internal/imagetest"
	"github.com/memor-db/memor/kv/kvtest"
)

// factVecs returns up to n vectors of the default embedder (384-d,
// sparse: a few dozen components) of the realistic corpus's sentences and
// lines, the shape of a user's facts; texts without a letter or a digit
// (zero vectors) are left out.
func factVecs(t testing.TB, n int) [][]float32 {
	t.Helper()
	var texts []string
	for _, tx := range realtext.MustTexts() {
		for _, line := range strings.Split(tx.Body, "\n") {
			for _, s := range strings.SplitAfter(line, ". ") {
				if s = strings.TrimSpace(s); s != "" {
					texts = append(texts, s)
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for len(texts) < n {
		texts = append(texts, realtext.Words(r, 3+r.IntN(30)))
	}
	vecs, err := embed.NewHash(0).Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	out := vecs[:0]
	for _, v := range vecs {
		if len(out) < n && slices.ContainsFunc(v, func(x float32) bool { return x != 0 }) {
			out = append(out, v)
		}
	}
	return out
}

// imageCase is an index to image: its vectors (ID i holds vecs[i]) and
// options, written to a store with replacements and deletions.
type imageCase struct {
	name string
	vecs [][]float32
	o    Options
	// graph: the records hold a graph.
	graph bool
}

func imageCases(t testing.TB) []imageCase {
	facts := factVecs(t, 1100)
	dense := clustered(21, 700, 48, 9)
	// A user of the default embedder with a few dense vectors among the
	// sparse ones (another embedder's, or long texts).
	mixed := slices.Clone(facts[:1000])
	for i := 0; i < len(mixed); i += 97 {
		mixed[i] = clustered(uint64(i), 1, 384, 1)[0]
	}
	return []imageCase{
		{name: "list/sparse", vecs: mixed, o: Options{Seed: 1}},
		{name: "list/dense", vecs: dense[:400], o: Options{Seed: 2, Metric: Dot, GraphAt: 420}},
		// ExactBelow < 0: searches walk the graph.
		{name: "graph/walk", vecs: dense, o: Options{Seed: 3, M: 6, ExactBelow: -1, GraphAt: 300}, graph: true},
		// Searches of a graph this small scan its codes (scan8).
		{name: "graph/scan", vecs: dense[:500], o: Options{Seed: 4, Metric: Dot, GraphAt: 200}, graph: true},
		{name: "graph/sparse", vecs: facts[:600], o: Options{Seed: 5, M: 5, ExactBelow: -1, GraphAt: 256}, graph: true},
	}
}

// write stores c's index under prefix: its vectors (some Adds deferred
// to a flush), then replacements and deletions, so that the writer's
// slots are not those of a load. It returns the writing index.
func (c imageCase) write(t testing.TB, store kvtest.Map, prefix []byte) *Index {
	t.Helper()
	ix := New(len(c.vecs[0]), prefix, c.o)
	for i, v := range c.vecs {
		var err error
		if i%3 == 0 {
			err = ix.Add(nil, uint32(2*i), v)
		} else {
			err = ix.Add(store, uint32(2*i), v)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Flush(store); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(c.vecs); i += 11 {
		if err := ix.Delete(store, uint32(2*i)); err != nil {
			t.Fatal(err)
		}
		if err := ix.Add(store, uint32(2*((i+5)%len(c.vecs))), c.vecs[(i+7)%len(c.vecs)]); err != nil {
			t.Fatal(err)
		}
	}
	// IDs between the others, into the slots the deletions freed: every
	// slot is live, and not in ID order.
	for i := 0; i < len(c.vecs); i += 11 {
		if err := ix.Add(store, uint32(2*i+1), c.vecs[(i+3)%len(c.vecs)]); err != nil {
			t.Fatal(err)
		}
	}
	if ix.graph != c.graph || len(ix.free) != 0 || slices.IsSorted(ix.ids) {
		t.Fatalf("%s: graph %v, %d free slots, slots in ID order %v", c.name, ix.graph, len(ix.free), slices.IsSorted(ix.ids))
	}
	return ix
}

// sameState fails unless a and b hold the same index: every slot's ID,
// level, vector (as held: sparse entries or dense, to the bit), codes,
// bounds and lists, and the same shape, entry point and pending state.
// Capacities may differ.
func sameState(t *testing.T, what string, a, b *Index) {
	t.Helper()
	a.mu.RLock()
	defer a.mu.RUnlock()
	b.mu.RLock()
	defer b.mu.RUnlock()
	fail := func(f string, args ...any) { t.Helper(); t.Fatalf(what+": "+f, args...) }
	if a.dim != b.dim || a.m != b.m || a.m0 != b.m0 || a.ml != b.ml || a.graph != b.graph || a.vnni != b.vnni ||
		a.entry != b.entry || a.top != b.top || a.metaOK != b.metaOK || a.o != b.o {
		fail("shape %v %v %v %v %v %v / %v %v %v %v %v %v", a.dim, a.m, a.graph, a.entry, a.top, a.o, b.dim, b.m, b.graph, b.entry, b.top, b.o)
	}
	if !slices.Equal(a.ids, b.ids) || !slices.Equal(a.levels, b.levels) || !maps.Equal(a.slotOf, b.slotOf) ||
		!slices.Equal(a.free, b.free) || len(a.dirty)+len(b.dirty)+len(a.pending)+len(b.pending) != 0 {
		fail("slots differ")
	}
	bitsEq := func(x, y []float32) bool { return slices.Equal(f32bits(x), f32bits(y)) }
	if !slices.Equal(a.list.refs, b.list.refs) || !slices.Equal(a.list.sidx, b.list.sidx) || !bitsEq(a.list.sval, b.list.sval) ||
		a.list.dead != b.list.dead || !slices.Equal(a.list.dfree, b.list.dfree) || a.vecs.n != b.vecs.n || a.vecs.width != b.vecs.width {
		fail("list vectors differ")
	}
	for s := range a.vecs.n {
		if !bitsEq(a.vecs.at(uint32(s)), b.vecs.at(uint32(s))) {
			fail("vector slot %d differs", s)
		}
	}
	if a.codes.n != b.codes.n || !bitsEq(a.scales, b.scales) || !slices.Equal(f32bits(qerrFloats(a.qerr)), f32bits(qerrFloats(b.qerr))) {
		fail("codes differ")
	}
	for s := range a.codes.n {
		if !slices.Equal(a.code(uint32(s)), b.code(uint32(s))) {
			fail("codes of slot %d differ", s)
		}
	}
	if len(a.links0) != len(b.links0) || len(a.upper) != len(b.upper) {
		fail("lists differ")
	}
	for s, lv := range a.levels {
		for l := 0; l <= int(lv) && a.graph; l++ {
			if !slices.Equal(a.links(uint32(s), l), b.links(uint32(s), l)) {
				fail("links of slot %d on layer %d differ", s, l)
			}
		}
	}
}

// inImage says, of each array of ix that LoadImage may leave in img
// where it lies (but the sparse entries), whether it does: the ones the
// index holds at all.
func inImage(ix *Index, img []byte) map[string]bool {
	out := map[string]bool{}
	if ix.vecs.n > 0 {
		out["dense vectors"] = inside(ix.vecs.chunks[0], img)
	}
	if ix.graph && len(ix.ids) > 0 {
		out["layer-0 lists"] = inside(ix.links0, img)
		for _, u := range ix.upper {
			if u != nil {
				out["upper lists"] = inside(u, img)
				break
			}
		}
		if ix.vecs.n == len(ix.ids) {
			out["codes"] = inside(ix.codes.chunks[0], img)
		}
	}
	return out
}

// within reports whether v's memory lies in b's.
func within(v []float32, b []byte) bool {
	p, lo := uintptr(unsafe.Pointer(unsafe.SliceData(v))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= lo && p+4*uintptr(len(v)) <= lo+uintptr(len(b))
}

func qerrFloats(q []qbound) []float32 {
	out := make([]float32, 0, 2*len(q))
	for _, x := range q {
		out = append(out, x.err, x.norm)
	}
	return out
}

// sameAnswers fails unless a and b answer alike, to the bit: Len, Dim,
// Metric, and searches (results and their work) with every kind of allow
// list.
func sameAnswers(t *testing.T, what string, a, b *Index, r *rand.Rand, queries [][]float32, maxID uint32) {
	t.Helper()
	ctx := context.Background()
	if a.Len() != b.Len() || a.Dim() != b.Dim() || a.Metric() != b.Metric() {
		t.Fatalf("%s: Len %d / %d, Dim %d / %d, Metric %v / %v", what, a.Len(), b.Len(), a.Dim(), b.Dim(), a.Metric(), b.Metric())
	}
	for i := range 300 {
		q := queries[r.IntN(len(queries))]
		if i%5 == 4 {
			// A query of its own, dense.
			q = slices.Clone(q)
			for j := range q {
				q[j] += float32(r.NormFloat64()) * 0.1
			}
		}
		var allow *roaring.Bitmap
		switch i % 4 {
		case 1:
			allow = roaring.New()
			for range 1 + r.IntN(30) {
				allow.Add(r.Uint32N(maxID))
			}
		case 2:
			allow = roaring.New()
			for id := range maxID {
				if r.IntN(3) != 0 {
					allow.Add(id)
				}
			}
		}
		k := 1 + r.IntN(40)
		ha, sa, err := a.SearchWithStats(ctx, q, k, allow)
		if err != nil {
			t.Fatal(err)
		}
		hb, sb, err := b.SearchWithStats(ctx, q, k, allow)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ha, hb) || sa != sb || len(ha) == 0 && allow == nil {
			t.Fatalf("%s: Search(k=%d) %v %v, want %v %v", what, k, hb, sb, ha, sa)
		}
	}
}

// TestImageMatchesLoad: an index loaded from its image holds, slot for
// slot and bit for bit, what a load of its records holds, answers every
// search alike and passes Check against the records; the writing index,
// whose slots its deletions reordered, has the same image. The same
// writes on both (adds, replacements, deletions, for the list the build
// of its graph) then write the same records and leave them alike: same
// state, same answers, a clean Check, the same image.
func TestImageMatchesLoad(t *testing.T) {
	ctx := context.Background()
	prefix := []byte("user/v")
	for _, c := range imageCases(t) {
		t.Run(c.name, func(t *testing.T) {
			store := kvtest.Map{}
			w := c.write(t, store, prefix)
			ref, err := Load(ctx, store, prefix, c.o)
			if err != nil {
				t.Fatal(err)
			}
			img := ref.AppendImage(nil)
			if !bytes.Equal(w.AppendImage(nil), img) {
				t.Fatal("the writing index's image differs from its reload's")
			}
			ix, err := LoadImage(img, prefix, Options{Seed: c.o.Seed, ExactBelow: c.o.ExactBelow, GraphAt: c.o.GraphAt, Capacity: len(c.vecs) + 10})
			if err != nil {
				t.Fatal(err)
			}
			ix.o.Capacity = ref.o.Capacity // a hint, not state
			sameState(t, "image", ref, ix)
			if len(ix.list.sval) > 0 && !within(ix.list.sval, img) {
				t.Fatal("the sparse entries were copied out of an aligned image")
			}
			// What else a search reads lies in the image too: the dense
			// vectors, the lists, and the codes when every vector is dense.
			for what, in := range inImage(ix, img) {
				if !in {
					t.Errorf("the %s were copied out of an aligned image", what)
				}
			}
			// Not aligned for them, they are copied.
			moved := append([]byte{0}, img...)[1:]
			if ix2, err := LoadImage(moved, prefix, ix.o); err != nil {
				t.Fatal(err)
			} else {
				sameState(t, "image, not aligned", ix, ix2)
				for what, in := range inImage(ix2, moved) {
					if in && what != "codes" { // bytes: never misaligned
						t.Errorf("the %s lie in an image not aligned for them", what)
					}
				}
			}
			kept := slices.Clone(img)
			if err := ix.Check(ctx, store); err != nil {
				t.Fatalf("Check of the image's index: %v", err)
			}
			r := rand.New(rand.NewPCG(5, 6))
			maxID := uint32(2*len(c.vecs) + 40)
			sameAnswers(t, "image", ref, ix, r, c.vecs, maxID)
			t.Logf("%d vectors, image %d bytes (records %d)", ix.Len(), len(img), store.Size())

			// The same writes on both, each to its own copy of the store.
			sa, sb := maps.Clone(store), maps.Clone(store)
			extra := clustered(31, 60, len(c.vecs[0]), 3)
			for i := range 120 {
				id := r.Uint32N(maxID)
				if i%2 == 1 {
					id = maxID + uint32(i) // new
				}
				if i%4 == 0 {
					if err := ref.Delete(sa, id); err != nil {
						t.Fatal(err)
					}
					if err := ix.Delete(sb, id); err != nil {
						t.Fatal(err)
					}
					continue
				}
				v := c.vecs[r.IntN(len(c.vecs))]
				if i%3 == 0 {
					v = extra[r.IntN(len(extra))]
				}
				if err := ref.Add(sa, id, v); err != nil {
					t.Fatal(err)
				}
				if err := ix.Add(sb, id, v); err != nil {
					t.Fatal(err)
				}
			}
			if c.name == "list/dense" && !ix.graph {
				t.Fatal("the writes did not build the graph")
			}
			ix.o.Capacity = ref.o.Capacity
			sameState(t, "image, after writes", ref, ix)
			sameAnswers(t, "image, after writes", ref, ix, r, c.vecs, maxID+120)
			if err := ix.Check(ctx, sb); err != nil {
				t.Fatalf("Check of the image's index after writes: %v", err)
			}
			if !bytes.Equal(img, kept) {
				t.Fatal("the index wrote into its image")
			}
			for what, in := range inImage(ix, img) {
				if in {
					t.Errorf("after writes, the %s still lie in the image", what)
				}
			}
			if !maps.EqualFunc(sa, sb, bytes.Equal) {
				t.Fatal("the same writes wrote different records")
			}
			if !bytes.Equal(ix.AppendImage(nil), ref.AppendImage(nil)) {
				t.Fatal("the two indexes' images differ after the same writes")
			}
		})
	}
}

// TestImageFormats: a store whose meta is format 1 (rewritten by the next
// write) images as such, and the image's index rewrites it as the
// records' does; an index that never wrote its meta, and an empty one,
// image and load too.
func TestImageFormats(t *testing.T) {
	ctx := context.Background()
	prefix := []byte("p/") // build's
	vecs := clustered(8, 40, 16, 3)
	store := kvtest.Map{}
	build(t, store, vecs, Options{Seed: 1, ExactBelow: -1})
	mk := string(append(slices.Clone(prefix), 'm'))
	store[mk] = store[mk][:metaLengthV1]
	store[mk][0] = formatV1
	ref, err := Load(ctx, store, prefix, Options{})
	if err != nil {
		t.Fatal(err)
	}
	img := ref.AppendImage(nil)
	if img[1] != imageGraph|imageMetaStale {
		t.Fatalf("flags %x", img[1])
	}
	ix, err := LoadImage(img, prefix, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sameState(t, "format 1", ref, ix)
	sa, sb := maps.Clone(store), maps.Clone(store)
	if err := ref.Delete(sa, 3); err != nil {
		t.Fatal(err)
	}
	if err := ix.Delete(sb, 3); err != nil {
		t.Fatal(err)
	}
	if !maps.EqualFunc(sa, sb, bytes.Equal) || sb[mk][0] != formatV2 {
		t.Fatal("the image's index did not rewrite the meta as the records' did")
	}
	for _, o := range []Options{{}, {GraphAt: -1}} {
		ix := New(16, prefix, o)
		again, err := LoadImage(ix.AppendImage(nil), prefix, o)
		if err != nil {
			t.Fatal(err)
		}
		ix.noteBytes()
		sameState(t, "empty", ix, again)
		if err := again.Add(kvtest.Map{}, 1, vecs[0]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestImagePortable: the element-by-element conversions (a big-endian
// CPU's) read and write the bytes the native copies do.
func TestImagePortable(t *testing.T) {
	if !littleEndian {
		t.Skip("the native copies are the portable path here")
	}
	r := rand.New(rand.NewPCG(3, 4))
	u32 := make([]uint32, 37)
	u16 := make([]uint16, 37)
	for i := range u32 {
		u32[i], u16[i] = r.Uint32(), uint16(r.Uint32())
	}
	b32, b16 := appendU32s(nil, u32, true), appendU16s(nil, u16, true)
	if !bytes.Equal(appendU32s(nil, u32, false), b32) || !bytes.Equal(appendU16s(nil, u16, false), b16) {
		t.Fatal("appends differ")
	}
	g32, g16 := make([]uint32, len(u32)), make([]uint16, len(u16))
	getU32s(g32, b32, false)
	getU16s(g16, b16, false)
	if !slices.Equal(g32, u32) || !slices.Equal(g16, u16) {
		t.Fatal("reads differ")
	}
}

// smallImages are images of small indexes of each form, for damaging and
// fuzzing.
func smallImages(t testing.TB) [][]byte {
	prefix := []byte("p")
	r := rand.New(rand.NewPCG(6, 7))
	var out [][]byte
	sparse := New(64, prefix, Options{})
	for i := range 12 {
		if err := sparse.Add(discardKV{}, uint32(3*i), sparseVec(r, 64, 1+r.IntN(20))); err != nil {
			t.Fatal(err)
		}
	}
	if err := sparse.Add(discardKV{}, 5, clustered(1, 1, 64, 1)[0]); err != nil {
		t.Fatal(err)
	}
	out = append(out, sparse.AppendImage(nil))
	dense := New(8, prefix, Options{Metric: Dot})
	for i, v := range clustered(2, 10, 8, 2) {
		if err := dense.Add(discardKV{}, uint32(i), v); err != nil {
			t.Fatal(err)
		}
	}
	out = append(out, dense.AppendImage(nil))
	graph := New(8, prefix, Options{M: 3, Seed: 9, ExactBelow: -1})
	for i, v := range clustered(3, 40, 8, 3) {
		if err := graph.Add(discardKV{}, uint32(i), v); err != nil {
			t.Fatal(err)
		}
	}
	if graph.top == 0 {
		t.Fatal("the small graph has one layer")
	}
	out = append(out, graph.AppendImage(nil))
	// A graph of sparse vectors with a few dense ones: the codes imaged
	// at the sparse entries only.
	mixed := New(32, prefix, Options{M: 3, Seed: 10, ExactBelow: -1})
	for i := range 30 {
		v := sparseVec(r, 32, 1+r.IntN(12))
		if i%7 == 0 {
			v = clustered(uint64(i), 1, 32, 1)[0]
		}
		if err := mixed.Add(discardKV{}, uint32(i), v); err != nil {
			t.Fatal(err)
		}
	}
	return append(out, mixed.AppendImage(nil))
}

// discardKV is a kv.Writer that keeps nothing.
type discardKV struct{}

func (discardKV) Set(k, v []byte) error { return nil }
func (discardKV) Delete([]byte) error   { return nil }

// exercise runs what an accepted image's index must serve without a
// panic: searches with and without a filter, exact and through the
// graph, an Add, a replacement, a Delete, another image.
func exercise(t *testing.T, ix *Index) {
	t.Helper()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(uint64(ix.Len()), 1))
	q := make([]float32, ix.Dim())
	for i := range q {
		q[i] = float32(r.NormFloat64())
	}
	allow := roaring.BitmapOf(0, 1, 2, 3, 5, 7, 30)
	for _, exact := range []int{DefaultExactBelow, -1} {
		ix.o.ExactBelow = exact
		for _, al := range []*roaring.Bitmap{nil, allow} {
			if _, err := ix.Search(ctx, q, 5, al); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := ix.Add(discardKV{}, 1<<20, q); err != nil {
		t.Fatal(err)
	}
	if err := ix.Add(discardKV{}, 3, q); err != nil {
		t.Fatal(err)
	}
	if err := ix.Delete(discardKV{}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Search(ctx, q, 5, nil); err != nil {
		t.Fatal(err)
	}
	_ = ix.Check(ctx, kvtest.Map{})
	if again, err := LoadImage(ix.AppendImage(nil), []byte("p"), Options{}); err != nil || again.Len() != ix.Len() {
		t.Fatalf("the image of an accepted index: %v", err)
	}
}

// TestLoadImageDamaged: an image cut anywhere fails with ErrCorrupt; one
// with random bytes changed fails with ErrCorrupt or, where the change
// keeps the structure (a vector's value, a neighbour swapped for
// another), loads an index that serves searches and writes.
func TestLoadImageDamaged(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	load := func(b []byte) (*Index, error) { return LoadImage(b, []byte("p"), Options{}) }
	for k, img := range smallImages(t) {
		imagetest.Cuts(t, img, ErrCorrupt, load)
		const tries = 3000
		refused := imagetest.Damage(t, r, img, tries, ErrCorrupt, load, func(ix *Index) { exercise(t, ix) })
		t.Logf("image %d (%d bytes): %d of %d damaged images refused", k, len(img), refused, tries)
	}
	// Values that are not finite load and serve (Dot stores them).
	img := smallImages(t)[2]
	bad := slices.Clone(img)
	n, dim := 40, 8
	vecs := imageHeader + 8*n // after the IDs and the counts: every vector dense
	for s := range n {
		if binary.LittleEndian.Uint32(bad[imageHeader+4*n+4*s:]) != denseCount {
			t.Fatalf("vector %d of the image is held sparse", s)
		}
	}
	for i := range n * dim {
		if i%3 == 0 {
			copy(bad[vecs+4*i:], []byte{0, 0, 0xc0, 0x7f}) // NaN
		} else if i%3 == 1 {
			copy(bad[vecs+4*i:], []byte{0, 0, 0x80, 0xff}) // -Inf
		}
	}
	ix, err := LoadImage(bad, []byte("p"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(float64(vecOf(ix, 0)[0])) {
		t.Fatal("the damage missed the vectors")
	}
	exercise(t, ix)
}

// FuzzLoadImage: LoadImage never panics, fails only with ErrCorrupt, and
// an index it accepts serves searches and writes.
func FuzzLoadImage(f *testing.F) {
	for _, img := range smallImages(f) {
		f.Add(img)
	}
	v2, _ := filepath.Glob(filepath.Join("testdata", "image-v2-*.bin"))
	for _, name := range v2 {
		img, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(img)
	}
	f.Add([]byte{imageVersion, imageGraph, 0, 2, 4, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, img []byte) {
		ix, err := LoadImage(img, []byte("p"), Options{})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%v, not ErrCorrupt", err)
			}
			return
		}
		kept := slices.Clone(img)
		exercise(t, ix) // writes among what it does
		if !bytes.Equal(img, kept) {
			t.Fatal("the index wrote into its image")
		}
	})
}

// TestImageGolden pins the bytes of small images of each form
// (testdata/image.txt, one directive per index, its image as a hex dump):
// the format is part of the engine's store. Rewrite it with
//
//	go test ./index/hnsw -run TestImageGolden -rewrite
//
// after a deliberate change of the format (and a new imageVersion).
func TestImageGolden(t *testing.T) {
	prefix := []byte(goldenPrefix)
	images := map[string]*Index{}
	// Sparse and dense vectors without a graph, one deleted, one replaced.
	r := rand.New(rand.NewPCG(12, 13))
	list := New(16, prefix, Options{})
	for i := range 5 {
		v := sparseVec(r, 16, 1+i)
		v[r.IntN(16)] = 1
		if err := list.Add(discardKV{}, uint32(10*i), v); err != nil {
			t.Fatal(err)
		}
	}
	if err := list.Add(discardKV{}, 7, clustered(4, 1, 16, 1)[0]); err != nil {
		t.Fatal(err)
	}
	if err := list.Delete(discardKV{}, 20); err != nil {
		t.Fatal(err)
	}
	if err := list.Add(discardKV{}, 0, []float32{3: -2, 9: 0.5, 15: 1e-3}); err != nil {
		t.Fatal(err)
	}
	images["list"] = list
	graph := New(4, prefix, Options{M: 2, Seed: 3, GraphAt: -1, Metric: Dot})
	for i, v := range clustered(5, 9, 4, 2) {
		if err := graph.Add(discardKV{}, uint32(i), v); err != nil {
			t.Fatal(err)
		}
	}
	if err := graph.Delete(discardKV{}, 4); err != nil {
		t.Fatal(err)
	}
	images["graph"] = graph
	seen := map[string]bool{}
	datadriven.RunTest(t, filepath.Join("testdata", "image.txt"), func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "image" || len(d.CmdArgs) != 1 || images[d.CmdArgs[0].Key] == nil {
			d.Fatalf(t, "want: image list|graph, got %s", d.Input)
		}
		seen[d.CmdArgs[0].Key] = true
		img := images[d.CmdArgs[0].Key].AppendImage(nil)
		if _, err := LoadImage(img, prefix, Options{}); err != nil {
			t.Fatal(err)
		}
		return hex.Dump(img)
	})
	for name := range images {
		if !seen[name] {
			t.Errorf("image %q is not in testdata/image.txt", name)
		}
	}
}

// TestImageConcurrent: searches of an index just loaded from its image
// from several goroutines, with images taken and a write among them
// (run with -race), answer as the records' index does.
func TestImageConcurrent(t *testing.T) {
	ctx := context.Background()
	prefix := []byte("user/v")
	c := imageCases(t)[0]
	store := kvtest.Map{}
	c.write(t, store, prefix)
	ref, err := Load(ctx, store, prefix, c.o)
	if err != nil {
		t.Fatal(err)
	}
	img := ref.AppendImage(nil)
	ix, err := LoadImage(img, prefix, c.o)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 6)
	for g := range 4 {
		go func() {
			for i := range 50 {
				q := c.vecs[(g*50+i)%len(c.vecs)]
				got, err := ix.Search(ctx, q, 10, nil)
				if err != nil {
					errs <- err
					return
				}
				if want, _ := ref.Search(ctx, q, 10, nil); !reflect.DeepEqual(got, want) {
					errs <- fmt.Errorf("Search: %v, want %v", got, want)
					return
				}
			}
			errs <- nil
		}()
	}
	go func() {
		for range 5 {
			if !bytes.Equal(ix.AppendImage(nil), img) {
				errs <- errors.New("the image changed")
				return
			}
		}
		errs <- nil
	}()
	go func() {
		// Replacing a vector with itself changes no answer.
		errs <- ix.Add(discardKV{}, 2, c.vecs[1])
	}()
	for range 6 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestIndexesBelow: the four-at-a-time check of sparse indexes agrees
// with comparing each, for every dimension class (at, around and above
// 2¹⁵, where the lanes' top bits are indexes' own) and lengths on both
// sides of a word.
func TestIndexesBelow(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 11))
	for range 20000 {
		dim := []int{1, 2, 3, 384, 1 << 15, 1<<15 + 1, 1 << 16, 1 << 17}[r.IntN(8)]
		n := r.IntN(14)
		xs := make([]uint16, n)
		for i := range xs {
			switch r.IntN(4) {
			case 0:
				xs[i] = uint16(r.Uint32())
			case 1:
				xs[i] = uint16(min(dim-1, 0xffff) + r.IntN(3) - 1)
			default:
				xs[i] = uint16(r.IntN(min(dim, 1<<16)))
			}
		}
		want := !slices.ContainsFunc(xs, func(x uint16) bool { return int(x) >= dim })
		b := appendU16s(nil, xs, false)
		x, ok := indexesBelow(b, dim)
		if ok != want || !ok && int(x) < dim {
			t.Fatalf("indexesBelow(%v, %d) = %d, %v", xs, dim, x, ok)
		}
	}
}

// TestImageVersion2: images of version 2 (no padding, which stores
// written before version 3 hold) still load, into the index the same
// records' version-3 image loads. testdata/image-v2-*.bin are
// smallImages as version 2 wrote them.
func TestImageVersion2(t *testing.T) {
	prefix := []byte("p")
	for i, img := range smallImages(t) {
		old, err := os.ReadFile(filepath.Join("testdata", fmt.Sprintf("image-v2-%d.bin", i)))
		if err != nil {
			t.Fatal(err)
		}
		if old[0] != 2 {
			t.Fatalf("image-v2-%d.bin is of version %d", i, old[0])
		}
		v2, err := LoadImage(old, prefix, Options{})
		if err != nil {
			t.Fatalf("image-v2-%d.bin: %v", i, err)
		}
		v3, err := LoadImage(img, prefix, Options{})
		if err != nil {
			t.Fatal(err)
		}
		sameState(t, fmt.Sprintf("image-v2-%d.bin", i), v3, v2)
		if got := v2.AppendImage(nil); !bytes.Equal(got, img) {
			t.Fatalf("image-v2-%d.bin's index images as %d bytes, not as its version 3 (%d)", i, len(got), len(img))
		}
		exercise(t, v2)
	}
}
