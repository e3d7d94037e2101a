package graph

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	realtext "github.com/memor-db/memor/internal/corpus"
	"github.com/memor-db/memor/internal/golden"
	"github.com/memor-db/memor/internal/imagetest"
	"github.com/memor-db/memor/internal/norm"
	"github.com/memor-db/memor/kv/kvtest"
)

// corpusNames cuts the realistic corpus into entity names: runs of one to
// four words of its lines (real sentences, CJK, emoji, RTL, code), each
// with an identity, each identity once.
func corpusNames() []string {
	var out []string
	seen := map[string]bool{}
	r := rand.New(rand.NewPCG(1, 2))
	for _, t := range realtext.MustTexts() {
		for _, line := range strings.Split(t.Body, "\n") {
			fs := strings.Fields(line)
			for i := 0; i < len(fs) && i < 60; {
				n := min(1+r.IntN(4), len(fs)-i)
				name := strings.Join(fs[i:i+n], " ")
				i += n
				if k := norm.Key(name); k != "" && !seen[k] && len(name) < 200 {
					seen[k] = true
					out = append(out, name)
				}
			}
		}
	}
	return out
}

// imageWorkload builds, through the write API against store, a graph of
// names: hubs with many edges, replacements, removals that free edge
// slots and entities, self-loops, names differing only in case.
func imageWorkload(t testing.TB, store kvtest.Map, names []string, edges int) *Graph {
	t.Helper()
	g := New([]byte("img/g/"))
	r := rand.New(rand.NewPCG(3, 4))
	labels := []string{"lives_in", "likes", "works_at", "brother", "has_pet", "  spaced   label ", "說", "يحب", "🙂 emoji"}
	hubs := []string{"user", "Alex", "東京"}
	name := func() string {
		switch r.IntN(10) {
		case 0, 1, 2:
			return hubs[r.IntN(len(hubs))]
		case 3:
			return strings.ToUpper(names[r.IntN(len(names))])
		}
		return names[r.IntN(len(names))]
	}
	maxDoc := uint32(edges + edges/2)
	for i := range 2 * edges {
		doc := r.Uint32N(maxDoc)
		if i < edges {
			doc = uint32(i) // the bulk, then churn
		}
		var err error
		switch {
		case i >= edges && r.IntN(4) == 0:
			err = g.RemoveEdge(store, doc)
		case r.IntN(50) == 0:
			n := name()
			err = g.AddEdge(store, doc, n, labels[r.IntN(len(labels))], n)
		default:
			err = g.AddEdge(store, doc, name(), labels[r.IntN(len(labels))], name())
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return g
}

// sameState fails unless a and b hold the same graph in memory: entities
// and their IDs, edges and their slots, free lists, maps, labels, the CSR
// and the next stored ID (the slabs, spare memory, and the memory
// account, which counts each load's own, may differ).
func sameState(t *testing.T, what string, a, b *Graph) {
	t.Helper()
	a.mu.RLock()
	defer a.mu.RUnlock()
	b.mu.RLock()
	defer b.mu.RUnlock()
	uncounted := func(ents []entity) []entity {
		out := slices.Clone(ents)
		for i := range out {
			out[i].held = 0
		}
		return out
	}
	for _, f := range []struct {
		name string
		x, y any
	}{
		{"ents", uncounted(a.ents), uncounted(b.ents)}, {"byNorm", a.normMap(), b.normMap()}, {"edges", a.edges, b.edges}, {"byDoc", a.docs(), b.docs()},
		{"first", a.firstMap(), b.firstMap()},
		{"nextKey", a.nextKey, b.nextKey}, {"labels", a.labels, b.labels}, {"labelID", a.labelID, b.labelID},
		{"csr.n", a.adj.n, b.adj.n}, {"csr.off", a.adj.off, b.adj.off}, {"csr.e", a.adj.e, b.adj.e},
		{"csr.names", a.adj.names, b.adj.names}, {"csr.nDirty", a.adj.nDirty, b.adj.nDirty},
	} {
		if !reflect.DeepEqual(f.x, f.y) {
			t.Fatalf("%s: %s differ", what, f.name)
		}
	}
	if !slices.Equal(a.free, b.free) || !slices.Equal(a.freeEnts, b.freeEnts) {
		t.Fatalf("%s: free lists differ", what)
	}
}

// reachAll returns what Reach walks: each edge's doc, length and path.
func reachAll(t *testing.T, g *Graph, seeds []string, depth int, allow *roaring.Bitmap) []string {
	t.Helper()
	var out []string
	err := g.Reach(context.Background(), seeds, depth, allow, func(r Reached) bool {
		out = append(out, fmt.Sprintf("%d %d %+v", r.Doc(), r.Len(), r.Path()))
		return len(out) < 2000
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameAnswers fails unless a and b answer every read alike: Len,
// Entities of texts, BFS and Reach from seeds at depths 1 to 4 with and
// without time filters, Out and AddSubjectDocs.
func sameAnswers(t *testing.T, what string, a, b *Graph, r *rand.Rand, names []string, maxDoc uint32) {
	t.Helper()
	ctx := context.Background()
	ea, da := a.Len()
	if eb, db := b.Len(); ea != eb || da != db {
		t.Fatalf("%s: Len %d %d, want %d %d", what, eb, db, ea, da)
	}
	labels := append(a.labels[:len(a.labels):len(a.labels)], "absent label")
	for q := range 300 {
		// A text naming a few entities (some not known), amid words.
		var parts []string
		for range 1 + r.IntN(6) {
			parts = append(parts, names[r.IntN(len(names))], realtext.Words(r, r.IntN(3)))
		}
		text := strings.Join(parts, " ")
		if ga, gb := a.Entities(text), b.Entities(text); !reflect.DeepEqual(ga, gb) {
			t.Fatalf("%s: Entities(%q):\n%q\nwant\n%q", what, text, gb, ga)
		}
		seeds := append(a.Entities(text), "user", names[r.IntN(len(names))])
		seeds = seeds[:min(len(seeds), 1+r.IntN(3))]
		var allow *roaring.Bitmap
		switch q % 3 {
		case 1:
			allow = roaring.New()
			for range 1 + r.IntN(50) {
				allow.Add(r.Uint32N(maxDoc))
			}
		case 2:
			allow = roaring.New()
			for d := range maxDoc {
				if r.IntN(3) != 0 {
					allow.Add(d)
				}
			}
		}
		depth := 1 + q%4
		limit := []int{0, 5, 40, 1000}[r.IntN(4)]
		pa, err := a.BFSLimit(ctx, seeds, depth, limit, allow)
		if err != nil {
			t.Fatal(err)
		}
		pb, err := b.BFSLimit(ctx, seeds, depth, limit, allow)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(pa, pb) {
			t.Fatalf("%s: BFSLimit(%q, %d, %d): %d paths, want %d", what, seeds, depth, limit, len(pb), len(pa))
		}
		if ra, rb := reachAll(t, a, seeds, depth, allow), reachAll(t, b, seeds, depth, allow); !reflect.DeepEqual(ra, rb) {
			t.Fatalf("%s: Reach(%q, %d) differs", what, seeds, depth)
		}
		l := labels[r.IntN(len(labels))]
		if oa, ob := a.Out(seeds[0], l, allow), b.Out(seeds[0], l, allow); !reflect.DeepEqual(oa, ob) {
			t.Fatalf("%s: Out(%q, %q): %v, want %v", what, seeds[0], l, ob, oa)
		}
		da, db := roaring.New(), roaring.New()
		a.AddSubjectDocs(da, seeds...)
		b.AddSubjectDocs(db, seeds...)
		if !da.Equals(db) {
			t.Fatalf("%s: AddSubjectDocs(%q): %v, want %v", what, seeds, db.ToArray(), da.ToArray())
		}
	}
}

// TestImageMatchesLoad: a graph loaded from its image is the graph a load
// of the records makes, field for field, and answers every read alike;
// the same writes then write the same records to both and leave them
// alike: same state and answers, a clean Check, the same image.
func TestImageMatchesLoad(t *testing.T) {
	ctx := context.Background()
	names := corpusNames()
	store := kvtest.Map{}
	built := imageWorkload(t, store, names, 3000)
	prefix := []byte("img/g/")
	ref, err := Load(ctx, store, prefix)
	if err != nil {
		t.Fatal(err)
	}
	img := ref.AppendImage(nil)
	if !bytes.Equal(built.AppendImage(nil), img) {
		t.Fatal("the image of the graph the writes built differs from that of the graph loaded from their records")
	}
	if len(built.free) == 0 || len(built.freeEnts) == 0 {
		t.Fatalf("the workload freed %d slots and %d entities: nothing free to image", len(built.free), len(built.freeEnts))
	}
	ix, err := LoadImage(bytes.Clone(img), prefix)
	if err != nil {
		t.Fatal(err)
	}
	ne, nd := ix.Len()
	t.Logf("%d entities, %d edges, %d labels: image %d bytes", ne, nd, len(ix.labels), len(img))
	if ix.img == nil || ix.byDoc != nil || ix.byNorm != nil || ix.first != nil {
		t.Fatal("LoadImage built the maps, which only writes need")
	}
	sameState(t, "loaded from the image", ref, ix)
	if err := ix.Check(ctx, store); err != nil {
		t.Fatalf("Check of the image's graph: %v", err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	maxDoc := uint32(5000)
	sameAnswers(t, "image", ref, ix, r, names, maxDoc)
	sameAnswers(t, "image vs built", built, ix, r, names, maxDoc)

	// Writes: the same adds, replacements, removals and new entities on
	// both, each into its own copy of the store, logged.
	sa, sb := maps.Clone(store), maps.Clone(store)
	ra, rb := &golden.Recorder{W: sa}, &golden.Recorder{W: sb}
	for i := range 1500 {
		doc := r.Uint32N(maxDoc)
		if i%4 == 0 {
			if err := errors.Join(ref.RemoveEdge(ra, doc), ix.RemoveEdge(rb, doc)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		from, to := names[r.IntN(len(names))], fmt.Sprintf("new entity %d", i)
		if i%3 == 0 {
			to = names[r.IntN(len(names))]
		}
		l := ref.labels[r.IntN(len(ref.labels))]
		if i%7 == 0 {
			l = fmt.Sprintf("new label %d", i%5)
		}
		if err := errors.Join(ref.AddEdge(ra, doc, from, l, to), ix.AddEdge(rb, doc, from, l, to)); err != nil {
			t.Fatal(err)
		}
		if i%500 == 0 {
			sameAnswers(t, fmt.Sprintf("image after %d writes", i), ref, ix, r, names, maxDoc)
		}
	}
	if ra.Log() != rb.Log() {
		t.Fatal("the same writes wrote different records to the two graphs")
	}
	if ix.img != nil || ix.byDoc == nil {
		t.Fatal("the writes left the maps unbuilt")
	}
	sameState(t, "image after writes", ref, ix)
	sameAnswers(t, "image after writes", ref, ix, r, names, maxDoc)
	if err := ix.Check(ctx, sb); err != nil {
		t.Fatalf("Check of the image's graph after writes: %v", err)
	}
	after := ix.AppendImage(nil)
	if !bytes.Equal(after, ref.AppendImage(nil)) {
		t.Fatal("the two graphs' images differ after the same writes")
	}
	reloaded, err := Load(ctx, sb, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(after, reloaded.AppendImage(nil)) {
		t.Fatal("the image after writes differs from that of their records loaded")
	}
	// An empty graph's image loads as an empty graph, which takes writes.
	empty, err := LoadImage(New(prefix).AppendImage(nil), prefix)
	if err != nil {
		t.Fatal(err)
	}
	if e, d := empty.Len(); e != 0 || d != 0 {
		t.Fatalf("empty image: %d entities, %d edges", e, d)
	}
	if err := empty.AddEdge(kvtest.Map{}, 1, "a", "b", "c"); err != nil {
		t.Fatal(err)
	}
}

// TestImageConcurrent: reads of a graph just loaded from its image, from
// many goroutines at once (run with -race), answer as the records' graph
// does, while writes (the first of which builds the doc map) go on
// beside them on entities the reads do not reach.
func TestImageConcurrent(t *testing.T) {
	ctx := context.Background()
	names := corpusNames()
	store := kvtest.Map{}
	imageWorkload(t, store, names, 1000)
	ref, err := Load(ctx, store, []byte("img/g/"))
	if err != nil {
		t.Fatal(err)
	}
	ix, err := LoadImage(ref.AppendImage(nil), []byte("img/g/"))
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 5)
	for q := range 4 {
		go func() {
			r := rand.New(rand.NewPCG(uint64(q), 3))
			for range 200 {
				text := names[r.IntN(len(names))] + " and " + names[r.IntN(len(names))]
				if a, b := ix.Entities(text), ref.Entities(text); !reflect.DeepEqual(a, b) {
					errs <- fmt.Errorf("Entities(%q): %q, want %q", text, a, b)
					return
				}
				seeds, depth := append(ref.Entities(text), "user"), 1+r.IntN(3)
				got, err := ix.BFS(ctx, seeds, depth, nil)
				if err != nil {
					errs <- err
					return
				}
				if want, _ := ref.BFS(ctx, seeds, depth, nil); !reflect.DeepEqual(got, want) {
					errs <- fmt.Errorf("BFS(%q, %d): %d paths, want %d", seeds, depth, len(got), len(want))
					return
				}
				ix.Len()
				ix.AddSubjectDocs(roaring.New(), seeds...)
			}
			errs <- nil
		}()
	}
	go func() {
		for i := range 200 {
			if err := ix.AddEdge(discard{}, uint32(100000+i), fmt.Sprintf("island %d", i%10), "near", fmt.Sprintf("islet %d", i)); err != nil {
				errs <- err
				return
			}
		}
		errs <- ix.RemoveEdge(discard{}, 100000)
	}()
	for range 5 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// damagedImage is the image TestLoadImageDamaged and FuzzLoadImage damage.
func damagedImage(t testing.TB, edges int) []byte {
	return imageWorkload(t, kvtest.Map{}, corpusNames()[:200], edges).AppendImage(nil)
}

// serves exercises the read APIs and writes of a graph an image loaded,
// which must not panic, and reports whether its own image loads back.
func serves(t testing.TB, g *Graph) error {
	ctx := context.Background()
	g.Entities("user Alex 東京 likes the golden retriever")
	if _, err := g.BFS(ctx, []string{"user", "alex", "東京"}, 4, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := g.BFS(ctx, []string{"user"}, 2, roaring.BitmapOf(1, 2, 3, 50, 70)); err != nil {
		t.Fatal(err)
	}
	_ = g.Reach(ctx, []string{"alex"}, 3, nil, func(r Reached) bool { r.Path(); return true })
	g.Out("user", "likes", nil)
	g.AddSubjectDocs(roaring.New(), "user")
	g.Len()
	for doc := range uint32(4) {
		if err := g.RemoveEdge(discard{}, doc); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 100 {
		if err := g.AddEdge(discard{}, uint32(i*7), "user", "likes", fmt.Sprintf("thing %d", i%9)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := g.BFS(ctx, []string{"user"}, 3, nil); err != nil {
		t.Fatal(err)
	}
	_, err := LoadImage(g.AppendImage(nil), g.prefix)
	return err
}

// TestLoadImageDamaged: an image cut anywhere fails with ErrCorrupt; one
// with bytes changed fails with ErrCorrupt or loads a graph that serves
// reads and writes without a panic (a changed letter of a name is a
// different name, noticed by Check against the records).
func TestLoadImageDamaged(t *testing.T) {
	img := damagedImage(t, 120)
	load := func(b []byte) (*Graph, error) { return LoadImage(b, []byte("p")) }
	imagetest.Cuts(t, img, ErrCorrupt, load)
	refused := imagetest.Damage(t, rand.New(rand.NewPCG(8, 9)), img, 3000, ErrCorrupt, load, func(g *Graph) {
		if err := serves(t, g); err != nil {
			t.Fatalf("the image of a graph a damaged image loaded: %v", err)
		}
	})
	t.Logf("%d of 3000 damaged images refused (%d bytes)", refused, len(img))
	if refused < 1000 {
		t.Fatalf("only %d of 3000 damaged images refused", refused)
	}
}

// FuzzLoadImage: LoadImage never panics, and a graph it accepts serves
// reads and writes, and images to bytes that load.
func FuzzLoadImage(f *testing.F) {
	f.Add(damagedImage(f, 40))
	g := New([]byte("p"))
	for i, fc := range family {
		if err := g.AddEdge(discard{}, uint32(i), fc.from, fc.l, fc.to); err != nil {
			f.Fatal(err)
		}
	}
	f.Add(g.AppendImage(nil))
	f.Add([]byte{imageVersion, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, img []byte) {
		g, err := LoadImage(img, []byte("p"))
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%v, not ErrCorrupt", err)
			}
			return
		}
		if err := serves(t, g); err != nil {
			t.Fatalf("the image of an accepted graph: %v", err)
		}
	})
}

// TestImageGolden pins the image format: a small graph's image, in hex,
// then its answers loaded from it. Run with -update to rewrite it (only
// when a change of format is intended, with imageVersion bumped).
func TestImageGolden(t *testing.T) {
	g := New([]byte("golden/graph/"))
	store := kvtest.Map{}
	facts := append(family[:len(family):len(family)],
		fact{6, "Alex", "lives_in", "東京"}, fact{7, "東京", "说", "مرحبا بالعالم"},
		fact{8, "user", "likes", "🙂"}, fact{9, "Rex", "named", "rex"}, fact{10, "Golden Retriever", "likes", "user"})
	for _, fc := range facts {
		if err := g.AddEdge(store, fc.doc, fc.from, fc.l, fc.to); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.RemoveEdge(store, 3); err != nil { // frees Paris and a slot
		t.Fatal(err)
	}
	img := g.AppendImage(nil)
	var out strings.Builder
	for i := 0; i < len(img); i += 32 {
		fmt.Fprintf(&out, "%x\n", img[i:min(i+32, len(img))])
	}
	loaded, err := LoadImage(img, []byte("golden/graph/"))
	if err != nil {
		t.Fatal(err)
	}
	if err := loaded.Check(context.Background(), store); err != nil {
		t.Fatal(err)
	}
	out.WriteString("-- loaded\n")
	goldenQueries(loaded, &out)
	golden.Check(t, "testdata/image.txt", out.String(), *updateGolden)
}
