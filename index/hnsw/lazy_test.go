package hnsw

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/memor-db/memor/kv"
	"github.com/memor-db/memor/kv/kvtest"
)

// Tests of the lazy graph: below Options.GraphAt an index is a list of
// vectors searched exactly; the Add that reaches GraphAt builds the graph.

// recorder is a kv.Writer that applies writes to a kvtest.Map and remembers the
// keys written since the last reset: one "batch".
type recorder struct {
	store kvtest.Map
	sets  map[string]bool
	dels  map[string]bool
}

func newRecorder(store kvtest.Map) *recorder {
	return &recorder{store: store, sets: map[string]bool{}, dels: map[string]bool{}}
}

func (r *recorder) Set(k, v []byte) error { r.sets[string(k)] = true; return r.store.Set(k, v) }
func (r *recorder) Delete(k []byte) error { r.dels[string(k)] = true; return r.store.Delete(k) }
func (r *recorder) reset()                { clear(r.sets); clear(r.dels) }

// keysWithTag counts the store's keys under prefix with the given tag.
func keysWithTag(store kvtest.Map, prefix []byte, tag byte) int {
	n := 0
	for k := range store {
		if len(k) > len(prefix) && k[:len(prefix)] == string(prefix) && k[len(prefix)] == tag {
			n++
		}
	}
	return n
}

// ids of hits, for comparing result sets.
func hitIDs(hs []Hit) []uint32 {
	out := make([]uint32, len(hs))
	for i, h := range hs {
		out[i] = h.ID
	}
	return out
}

// sameSearches fails unless a and b answer every query identically, with
// and without a filter.
func sameSearches(t *testing.T, a, b *Index, queries [][]float32, allow *roaring.Bitmap) {
	t.Helper()
	ctx := context.Background()
	for _, al := range []*roaring.Bitmap{nil, allow} {
		for _, q := range queries {
			x, err := a.Search(ctx, q, 10, al)
			if err != nil {
				t.Fatal(err)
			}
			y, err := b.Search(ctx, q, 10, al)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(x, y) || len(x) == 0 {
				t.Fatalf("answers differ:\n%v\n%v", x, y)
			}
		}
	}
}

// bruteForceHeld ranks the vectors ix holds (normalised, then rounded to
// the half precision they are persisted at) by their dot product with the
// normalised q: what an exact scan must return.
func bruteForceHeld(ix *Index, q []float32, k int, allow *roaring.Bitmap) []uint32 {
	qn := normalised(q)
	type sc struct {
		id uint32
		s  float64
	}
	var all []sc
	for id, s := range ix.slotOf {
		if allow != nil && !allow.Contains(id) {
			continue
		}
		d := 0.0
		for j, x := range vecOf(ix, s) {
			d += float64(x) * float64(qn[j])
		}
		all = append(all, sc{id, d})
	}
	slices.SortFunc(all, func(a, b sc) int {
		if c := cmp.Compare(b.s, a.s); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	out := make([]uint32, 0, k)
	for i := 0; i < k && i < len(all); i++ {
		out = append(out, all[i].id)
	}
	return out
}

func TestSmallIndexHasNoGraph(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := kvtest.Map{}
	vecs, queries := dataset(71, 1500, 40, 32, 8)
	ix := build(t, store, vecs, Options{Seed: 1}) // default GraphAt = 20000
	if ix.graph || ix.entry >= 0 || len(ix.links0) != 0 {
		t.Fatal("an index under GraphAt built a graph")
	}
	if n := keysWithTag(store, []byte("p/"), tagLinks); n != 0 {
		t.Fatalf("%d neighbour lists persisted under GraphAt", n)
	}
	if n := keysWithTag(store, []byte("p/"), tagVector); n != len(vecs) {
		t.Fatalf("%d vectors persisted, want %d", n, len(vecs))
	}
	if md, err := decodeMeta(store[string(ix.metaKey())]); err != nil || md.graph || md.hasEntry {
		t.Fatalf("meta %+v %v, want no graph", md, err)
	}
	if err := ix.Check(ctx, store); err != nil {
		t.Fatal(err)
	}
	// Even with ExactBelow < 0 (graph only), no graph means an exact scan.
	for _, eb := range []int{DefaultExactBelow, -1} {
		ix.o.ExactBelow = eb
		allow := randomAllow(3, len(vecs), 0.3)
		for i, q := range queries {
			al := allow
			if i%2 == 0 {
				al = nil
			}
			got, err := ix.Search(ctx, q, 10, al)
			if err != nil {
				t.Fatal(err)
			}
			if want := bruteForceHeld(ix, q, 10, al); !slices.Equal(hitIDs(got), want) {
				t.Fatalf("ExactBelow %d: got %v, want exactly %v", eb, hitIDs(got), want)
			}
		}
	}
	// Replacing a vector rewrites it in place.
	if err := ix.Add(store, 7, vecs[8]); err != nil {
		t.Fatal(err)
	}
	if got, _ := ix.Search(ctx, vecs[8], 2, nil); len(got) != 2 || got[0].Score != got[1].Score || got[0].ID != 7 {
		t.Fatalf("after replacing 7 by 8's vector: %v", got)
	}
	if err := ix.Check(ctx, store); err != nil {
		t.Fatal(err)
	}
}

func TestBuildAtThreshold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n, at = 4000, 3000
	store := kvtest.Map{}
	w := newRecorder(store)
	vecs, queries := dataset(81, n, 100, 32, 12)
	// Added in a shuffled ID order: the build is in ID order regardless.
	order := rand.New(rand.NewPCG(5, 5)).Perm(n)
	ix := New(32, []byte("p/"), Options{Seed: 4, GraphAt: at})
	for i, id := range order {
		w.reset()
		if err := ix.Add(w, uint32(id), vecs[id]); err != nil {
			t.Fatal(err)
		}
		switch {
		case i+1 < at:
			if i > 0 && len(w.sets) != 1 || ix.graph {
				t.Fatalf("Add %d under GraphAt wrote %d keys", i, len(w.sets))
			}
		case i+1 == at:
			// The crossing Add writes the whole graph into its own batch:
			// its vector, every node's lists and the meta key.
			if !ix.graph {
				t.Fatalf("no graph after %d Adds", at)
			}
			links := keysWithTag(store, []byte("p/"), tagLinks)
			if links < at || len(w.sets) != links+2 {
				t.Fatalf("the crossing Add wrote %d keys; %d lists are persisted", len(w.sets), links)
			}
			if err := ix.Check(ctx, store); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := ix.Check(ctx, store); err != nil {
		t.Fatal(err)
	}
	// Recall of the graph walk itself (ExactBelow < 0) against brute force.
	ix.o.ExactBelow = -1
	var sum float64
	for _, q := range queries {
		got, err := ix.Search(ctx, q, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		sum += recallOf(got, bruteForce(vecs, q, 10, nil))
	}
	r := sum / float64(len(queries))
	t.Logf("recall@10 after a lazy build at %d and %d incremental inserts: %.4f", at, n-at, r)
	if r < 0.95 {
		t.Errorf("recall@10 = %.4f, want ≥ 0.95", r)
	}
}

// The lazy build depends only on the vectors present and the seed: added
// in ID order it is byte for byte the graph an always-built index makes,
// and added in any order (or reloaded before the build) it is the same.
func TestBuildIsDeterministic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n, at = 1500, 1000
	vecs := clustered(91, n, 16, 6)
	always := kvtest.Map{}
	build(t, always, vecs, Options{Seed: 7, ExactBelow: -1})

	inOrder := kvtest.Map{}
	build(t, inOrder, vecs, Options{Seed: 7, GraphAt: at})
	if !maps.EqualFunc(always, inOrder, bytes.Equal) {
		t.Fatal("a lazy build in ID order differs from the always-built graph")
	}

	// Shuffled within the first GraphAt IDs, with a reload in between and a
	// replaced and a deleted-then-re-added vector (free slots, renumbering).
	shuffled := kvtest.Map{}
	o := Options{Seed: 7, GraphAt: at}
	ix := New(16, []byte("p/"), o)
	perm := rand.New(rand.NewPCG(1, 2)).Perm(at)
	for i, id := range perm[:at-1] {
		if err := ix.Add(shuffled, uint32(id), vecs[id]); err != nil {
			t.Fatal(err)
		}
		if i == at/2 {
			if err := ix.Add(shuffled, uint32(perm[0]), vecs[0]); err != nil {
				t.Fatal(err)
			}
			if err := ix.Delete(shuffled, uint32(perm[1])); err != nil {
				t.Fatal(err)
			}
			var err error
			if ix, err = Load(ctx, shuffled, []byte("p/"), o); err != nil {
				t.Fatal(err)
			}
			if err := ix.Add(shuffled, uint32(perm[1]), vecs[perm[1]]); err != nil {
				t.Fatal(err)
			}
			if err := ix.Add(shuffled, uint32(perm[0]), vecs[perm[0]]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if ix.graph {
		t.Fatal("graph built before GraphAt")
	}
	// The last of the first GraphAt IDs crosses the threshold; the rest
	// are inserted incrementally, in order.
	rest := []int{perm[at-1]}
	for id := at; id < n; id++ {
		rest = append(rest, id)
	}
	for _, id := range rest {
		if err := ix.Add(shuffled, uint32(id), vecs[id]); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Check(ctx, shuffled); err != nil {
		t.Fatal(err)
	}
	if !maps.EqualFunc(always, shuffled, bytes.Equal) {
		t.Fatal("a lazy build after shuffled adds, a reload and a delete differs")
	}
}

func TestReloadBothStates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vecs, queries := dataset(101, 2500, 40, 32, 10)
	allow := randomAllow(9, len(vecs), 0.2)
	for _, c := range []struct {
		name  string
		o     Options
		graph bool
	}{
		{"vectors", Options{Seed: 3}, false},
		{"graph", Options{Seed: 3, GraphAt: 1000}, true},
		{"graph-always", Options{Seed: 3, ExactBelow: -1}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := kvtest.Map{}
			ix := build(t, store, vecs, c.o)
			if ix.graph != c.graph {
				t.Fatalf("graph = %v", ix.graph)
			}
			for id := uint32(0); id < 100; id += 3 {
				if err := ix.Delete(store, id); err != nil {
					t.Fatal(err)
				}
			}
			// Reload with other options: the state comes from the store. A
			// capacity hint below, at and above the size changes nothing.
			hinted := func(n int) Options { o := c.o; o.Capacity = n; return o }
			for _, lo := range []Options{c.o, {ExactBelow: -1}, {GraphAt: 10}, hinted(7), hinted(len(vecs)), hinted(100_000)} {
				re, err := Load(ctx, store, []byte("p/"), lo)
				if err != nil {
					t.Fatal(err)
				}
				if re.graph != c.graph || re.Len() != ix.Len() {
					t.Fatalf("reloaded graph = %v, Len %d, want %v, %d", re.graph, re.Len(), c.graph, ix.Len())
				}
				if err := re.Check(ctx, store); err != nil {
					t.Fatal(err)
				}
				re.o.ExactBelow = ix.o.ExactBelow
				sameSearches(t, ix, re, queries, allow)
			}
			// With the graph forced on for searches too.
			re, _ := Load(ctx, store, []byte("p/"), c.o)
			ix.o.ExactBelow, re.o.ExactBelow = -1, -1
			sameSearches(t, ix, re, queries, allow)
		})
	}
}

// An index loaded without its graph builds it on the next Add once it is
// at GraphAt, in that Add's batch, and not before.
func TestLoadDoesNotBuild(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := kvtest.Map{}
	vecs := clustered(111, 600, 16, 4)
	build(t, store, vecs[:500], Options{Seed: 2})
	before := maps.Clone(store)
	re, err := Load(ctx, store, []byte("p/"), Options{Seed: 2, GraphAt: 100})
	if err != nil {
		t.Fatal(err)
	}
	if re.graph || !maps.EqualFunc(before, store, bytes.Equal) {
		t.Fatal("Load built or wrote something")
	}
	if err := re.Add(store, 500, vecs[500]); err != nil {
		t.Fatal(err)
	}
	if !re.graph || keysWithTag(store, []byte("p/"), tagLinks) < 501 {
		t.Fatal("the next Add did not build and persist the graph")
	}
	if err := re.Check(ctx, store); err != nil {
		t.Fatal(err)
	}
}

func TestDeleteBothStates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n, at = 3000, 2000
	vecs, queries := dataset(121, n, 50, 32, 10)
	store := kvtest.Map{}
	ix := New(32, []byte("p/"), Options{Seed: 6, GraphAt: at})
	live := roaring.New()
	check := func(wantGraph bool) {
		t.Helper()
		if ix.graph != wantGraph {
			t.Fatalf("graph = %v, want %v", ix.graph, wantGraph)
		}
		if ix.Len() != int(live.GetCardinality()) {
			t.Fatalf("Len = %d, want %d", ix.Len(), live.GetCardinality())
		}
		if err := ix.Check(ctx, store); err != nil {
			t.Fatal(err)
		}
		if !wantGraph && keysWithTag(store, []byte("p/"), tagLinks) != 0 {
			t.Fatal("neighbour lists persisted without a graph")
		}
		re, err := Load(ctx, store, []byte("p/"), ix.o)
		if err != nil {
			t.Fatal(err)
		}
		var sum float64
		for _, q := range queries {
			got, err := ix.Search(ctx, q, 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range got {
				if !live.Contains(h.ID) {
					t.Fatalf("deleted %d returned", h.ID)
				}
			}
			sum += recallOf(got, bruteForce(vecs, q, 10, live))
			if again, _ := re.Search(ctx, q, 10, nil); !slices.Equal(got, again) {
				t.Fatalf("reloaded index answers differently:\n%v\n%v", got, again)
			}
		}
		r := sum / float64(len(queries))
		if !wantGraph && r != 1 || r < 0.95 {
			t.Fatalf("recall@10 = %.4f (graph %v)", r, wantGraph)
		}
	}
	// Without a graph: add 1500, delete every third, re-add some (free
	// slots are reused).
	for i := range 1500 {
		if err := ix.Add(store, uint32(i), vecs[i]); err != nil {
			t.Fatal(err)
		}
		live.Add(uint32(i))
	}
	for i := 0; i < 1500; i += 3 {
		if err := ix.Delete(store, uint32(i)); err != nil {
			t.Fatal(err)
		}
		live.Remove(uint32(i))
	}
	if err := ix.Delete(store, 1_000_000); err != nil { // absent: no-op
		t.Fatal(err)
	}
	check(false)
	for i := 0; i < 300; i += 3 {
		if err := ix.Add(store, uint32(i), vecs[i]); err != nil {
			t.Fatal(err)
		}
		live.Add(uint32(i))
	}
	check(false)
	// Cross GraphAt with free slots left by the deletes.
	for i := 1500; i < n; i++ {
		if err := ix.Add(store, uint32(i), vecs[i]); err != nil {
			t.Fatal(err)
		}
		live.Add(uint32(i))
	}
	check(true)
	// With a graph: delete down below GraphAt; the graph stays.
	for i := 0; i < n; i += 2 {
		if err := ix.Delete(store, uint32(i)); err != nil {
			t.Fatal(err)
		}
		live.Remove(uint32(i))
	}
	ix.o.ExactBelow = -1 // search through the graph
	check(true)
	// Deleting everything leaves only the meta key, in both states.
	for i := range n {
		if err := ix.Delete(store, uint32(i)); err != nil {
			t.Fatal(err)
		}
	}
	small := New(32, []byte("q/"), Options{})
	for i := range 10 {
		if err := small.Add(store, uint32(i), vecs[i]); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		if err := small.Delete(store, uint32(i)); err != nil {
			t.Fatal(err)
		}
	}
	if len(store) != 2 {
		t.Fatalf("%d keys left after deleting everything", len(store))
	}
	for _, x := range []*Index{ix, small} {
		if err := x.Check(ctx, store); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMetaFormats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vecs := clustered(131, 200, 8, 3)
	// A version-1 meta (written before the graph flag existed) is a graph.
	store := kvtest.Map{}
	ix := build(t, store, vecs, Options{Seed: 1, ExactBelow: -1})
	mk := string(ix.metaKey())
	v2 := store[mk]
	store[mk] = append([]byte{formatV1}, v2[1:metaLengthV1]...)
	re, err := Load(ctx, store, []byte("p/"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !re.graph || re.Len() != len(vecs) {
		t.Fatalf("v1 meta loaded as graph = %v", re.graph)
	}
	if err := re.Check(ctx, store); err != nil {
		t.Fatal(err)
	}
	if err := re.Add(store, 1000, vecs[0]); err != nil {
		t.Fatal(err)
	}
	if m := store[mk]; len(m) != metaLength || m[0] != formatV2 {
		t.Fatalf("meta not upgraded: %x", m)
	}
	// Damage specific to the state without a graph.
	flat := kvtest.Map{}
	ix = build(t, flat, vecs, Options{Seed: 1})
	bad := []struct {
		name string
		key  string
		val  []byte
	}{
		{"links without a graph", string(ix.linkKey(3, 0)), []byte{}},
		{"bad graph flag", string(ix.metaKey()), append(bytes.Clone(flat[string(ix.metaKey())][:14]), 2)},
		{"entry without a graph", string(ix.metaKey()), func() []byte {
			m := bytes.Clone(flat[string(ix.metaKey())])
			m[8] = 1
			return m
		}()},
	}
	for _, b := range bad {
		old, had := flat[b.key]
		flat[b.key] = b.val
		if _, err := Load(ctx, flat, []byte("p/"), Options{}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Load: %v, want ErrCorrupt", b.name, err)
		}
		if err := ix.Check(ctx, flat); !errors.Is(err, ErrCheck) {
			t.Errorf("%s: Check: %v, want ErrCheck", b.name, err)
		}
		if had {
			flat[b.key] = old
		} else {
			delete(flat, b.key)
		}
	}
	if err := ix.Check(ctx, flat); err != nil {
		t.Fatal(err)
	}
}

// The engine's shape: a real store, several batches, the threshold crossed
// inside one of them.
func TestLazyPebble(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := kv.Open(t.TempDir(), kv.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	prefix := kv.UserKey("carol", kv.SubVector)
	vecs, queries := dataset(141, 1800, 30, 32, 8)
	o := Options{Seed: 8, GraphAt: 1200}
	ix := New(32, prefix, o)
	b := db.NewBatch()
	for i, v := range vecs {
		if err := ix.Add(b, uint32(i), v); err != nil {
			t.Fatal(err)
		}
		if i%500 == 499 || i == len(vecs)-1 {
			if err := b.Commit(); err != nil {
				t.Fatal(err)
			}
			if err := ix.Check(ctx, db); err != nil {
				t.Fatalf("after %d adds: %v", i+1, err)
			}
			re, err := Load(ctx, db, prefix, o)
			if err != nil {
				t.Fatal(err)
			}
			if re.graph != (i+1 >= 1200) {
				t.Fatalf("after %d adds the reloaded graph = %v", i+1, re.graph)
			}
			sameSearches(t, ix, re, queries, randomAllow(1, i+1, 0.5))
			b = db.NewBatch()
		}
	}
}

// Searches run while an Add builds the graph (the build does not hold the
// read-exclusive lock): they must see either state whole. Run with -race.
func TestSearchDuringBuild(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const at = 1500
	vecs, queries := dataset(151, at+200, 50, 16, 6)
	store := kvtest.Map{}
	ix := build(t, store, vecs[:at-1], Options{Seed: 2, GraphAt: at})
	done := make(chan struct{})
	var during, total int
	var building atomic.Bool // the crossing Add is running
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			q := queries[i%len(queries)]
			got, err := ix.Search(ctx, q, 10, nil)
			if err != nil {
				t.Error(err)
				return
			}
			if len(got) != 10 || !slices.IsSortedFunc(got, func(a, b Hit) int { return cmp.Compare(b.Score, a.Score) }) {
				t.Errorf("search during build: %v", got)
				return
			}
			total++
			if building.Load() {
				during++
			}
		}
	})
	var mu sync.Mutex // kvtest.Map is not safe for concurrent use
	for i := at - 1; i < len(vecs); i++ {
		mu.Lock()
		building.Store(i == at-1)
		err := ix.Add(store, uint32(i), vecs[i])
		building.Store(false)
		mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	t.Logf("%d searches, %d of them while the graph was being built", total, during)
	if err := ix.Check(ctx, store); err != nil {
		t.Fatal(err)
	}
}
