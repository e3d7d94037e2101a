package hnsw

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/memor-db/memor/kv"
	"github.com/memor-db/memor/kv/kvtest"
)

// clustered returns n vectors of dimension dim around c Gaussian centres
// (topics), the shape embeddings have; within a cluster the spread is
// isotropic, the hard case for a graph index.
func clustered(seed uint64, n, dim, c int) [][]float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	centres := make([][]float32, c)
	for i := range centres {
		centres[i] = make([]float32, dim)
		for j := range centres[i] {
			centres[i][j] = float32(r.NormFloat64())
		}
	}
	out := make([][]float32, n)
	for i := range out {
		ctr := centres[r.IntN(c)]
		v := make([]float32, dim)
		for j := range v {
			v[j] = ctr[j] + 0.6*float32(r.NormFloat64())
		}
		out[i] = v
	}
	return out
}

// dataset returns n vectors and nq queries drawn from the same clusters.
func dataset(seed uint64, n, nq, dim, c int) (vecs, queries [][]float32) {
	all := clustered(seed, n+nq, dim, c)
	return all[:n], all[n:]
}

func normalised(v []float32) []float32 {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) / math.Sqrt(ss))
	}
	return out
}

var normMemo sync.Map // *float32 → normalised copy

func normCache(v []float32) []float32 {
	if n, ok := normMemo.Load(&v[0]); ok {
		return n.([]float32)
	}
	n := normalised(v)
	normMemo.Store(&v[0], n)
	return n
}

// bruteForce returns the IDs of the k most cosine-similar vectors among
// those allowed (nil = all).
func bruteForce(vecs [][]float32, q []float32, k int, allow *roaring.Bitmap) []uint32 {
	qn := normalised(q)
	type sc struct {
		id uint32
		s  float64
	}
	var all []sc
	for i, v := range vecs {
		if allow != nil && !allow.Contains(uint32(i)) {
			continue
		}
		vn := normCache(v)
		var s float64
		for j := range vn {
			s += float64(vn[j]) * float64(qn[j])
		}
		all = append(all, sc{uint32(i), s})
	}
	slices.SortFunc(all, func(a, b sc) int {
		if a.s > b.s {
			return -1
		}
		if a.s < b.s {
			return 1
		}
		return int(a.id) - int(b.id)
	})
	out := make([]uint32, 0, k)
	for i := 0; i < k && i < len(all); i++ {
		out = append(out, all[i].id)
	}
	return out
}

func recallOf(got []Hit, want []uint32) float64 {
	if len(want) == 0 {
		return 1
	}
	n := 0
	for _, h := range got {
		if slices.Contains(want, h.ID) {
			n++
		}
	}
	return float64(n) / float64(len(want))
}

func build(t testing.TB, w kv.Writer, vecs [][]float32, o Options) *Index {
	t.Helper()
	ix := New(len(vecs[0]), []byte("p/"), o)
	for i, v := range vecs {
		if err := ix.Add(w, uint32(i), v); err != nil {
			t.Fatal(err)
		}
	}
	return ix
}

const recallN, recallDim = 20000, 64

var (
	bigOnce    sync.Once
	bigVecs    [][]float32
	bigQueries [][]float32
	bigIx      *Index
	bigKV      kvtest.Map
)

// big builds the 20k-vector index once for the recall tests (graph only:
// ExactBelow < 0).
func big(t *testing.T) ([][]float32, *Index, kvtest.Map) {
	bigOnce.Do(func() {
		bigVecs, bigQueries = dataset(7, recallN, 300, recallDim, 40)
		bigKV = kvtest.Map{}
		bigIx = build(t, bigKV, bigVecs, Options{Seed: 1, ExactBelow: -1})
	})
	if bigIx == nil {
		t.Fatal("build failed")
	}
	return bigVecs, bigIx, bigKV
}

func measure(t *testing.T, ix *Index, vecs [][]float32, nq int, allowFor func(i int) *roaring.Bitmap) float64 {
	t.Helper()
	queries := bigQueries[:nq]
	var sum float64
	for i, q := range queries {
		allow := allowFor(i)
		got, err := ix.Search(context.Background(), q, 10, allow)
		if err != nil {
			t.Fatal(err)
		}
		sum += recallOf(got, bruteForce(vecs, q, 10, allow))
	}
	return sum / float64(nq)
}

func TestRecall(t *testing.T) {
	t.Parallel()
	vecs, ix, _ := big(t)
	if ix.Len() != recallN {
		t.Fatalf("Len = %d", ix.Len())
	}
	r := measure(t, ix, vecs, 200, func(int) *roaring.Bitmap { return nil })
	t.Logf("recall@10 = %.4f", r)
	if r < 0.95 {
		t.Errorf("recall@10 = %.4f, want ≥ 0.95", r)
	}
}

func randomAllow(seed uint64, n int, frac float64) *roaring.Bitmap {
	r := rand.New(rand.NewPCG(seed, 3))
	b := roaring.New()
	for i := range n {
		if r.Float64() < frac {
			b.Add(uint32(i))
		}
	}
	return b
}

func TestFilteredRecall(t *testing.T) {
	t.Parallel()
	vecs, ix, _ := big(t)
	for _, frac := range []float64{0.01, 0.05, 0.10} {
		// ix has ExactBelow < 0: this is the filtered graph walk.
		r := measure(t, ix, vecs, 100, func(i int) *roaring.Bitmap { return randomAllow(uint64(i), recallN, frac) })
		t.Logf("graph walk, %.0f%% allowed: recall@10 = %.4f", 100*frac, r)
		if r < 0.95 {
			t.Errorf("graph walk at %.0f%%: recall@10 = %.4f, want ≥ 0.95", 100*frac, r)
		}
	}
	// With default options the same index decides by itself; at 5 % the
	// allowed set (1000) is under ExactBelow, so the scan is exact.
	ix.o.ExactBelow = DefaultExactBelow
	defer func() { ix.o.ExactBelow = -1 }()
	r := measure(t, ix, vecs, 50, func(i int) *roaring.Bitmap { return randomAllow(uint64(i), recallN, 0.05) })
	if r != 1 {
		t.Errorf("exact scan at 5%%: recall@10 = %.4f, want 1", r)
	}
}

func TestFilterOnlyReturnsAllowed(t *testing.T) {
	t.Parallel()
	vecs, ix, _ := big(t)
	allow := roaring.BitmapOf(3, 500, 9000, 19999, 4_000_000) // last ID is not in the index
	got, err := ix.Search(context.Background(), vecs[3], 10, allow)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0].ID != 3 {
		t.Fatalf("got %v, want the 4 allowed IDs with 3 first", got)
	}
	for _, h := range got {
		if !allow.Contains(h.ID) {
			t.Errorf("hit %d is not allowed", h.ID)
		}
	}
	if got, err := ix.Search(context.Background(), vecs[3], 10, roaring.New()); err != nil || len(got) != 0 {
		t.Errorf("empty allow-list returned %v, %v", got, err)
	}
}

func TestCheckAndReload(t *testing.T) {
	t.Parallel()
	vecs, ix, store := big(t)
	ctx := context.Background()
	if err := ix.Check(ctx, store); err != nil {
		t.Fatal(err)
	}
	re, err := Load(ctx, store, []byte("p/"), Options{ExactBelow: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := re.Check(ctx, store); err != nil {
		t.Fatal(err)
	}
	for _, q := range bigQueries[200:] {
		a, _ := ix.Search(ctx, q, 10, nil)
		b, _ := re.Search(ctx, q, 10, nil)
		if !slices.Equal(a, b) {
			t.Fatalf("reloaded index answers differently:\n%v\n%v", a, b)
		}
	}
	_ = vecs
}

func TestPersistPebble(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := kv.Open(t.TempDir(), kv.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	prefix := kv.UserKey("alice", kv.SubVector)
	vecs, queries := dataset(11, 3000, 30, 32, 10)
	ix := New(32, prefix, Options{Seed: 3})
	b := db.NewBatch()
	for i, v := range vecs {
		if err := ix.Add(b, uint32(i)*7, v); err != nil {
			t.Fatal(err)
		}
		if i%500 == 499 { // several commits, as the engine would do
			if err := b.Commit(); err != nil {
				t.Fatal(err)
			}
			b = db.NewBatch()
		}
	}
	for id := uint32(0); id < 700; id += 7 * 3 {
		if err := ix.Delete(b, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := ix.Check(ctx, db); err != nil {
		t.Fatal(err)
	}
	// Another user's keys next to ours must not confuse Load or Check.
	other := New(32, kv.UserKey("alice\x00", kv.SubVector), Options{})
	b = db.NewBatch()
	if err := other.Add(b, 1, vecs[0]); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	re, err := Load(ctx, db, prefix, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := re.Check(ctx, db); err != nil {
		t.Fatal(err)
	}
	if re.Len() != ix.Len() || re.Dim() != 32 {
		t.Fatalf("reloaded Len %d Dim %d, want %d 32", re.Len(), re.Dim(), ix.Len())
	}
	for _, o := range []Options{{ExactBelow: -1}, {}} {
		ix.o.ExactBelow, re.o.ExactBelow = o.withDefaults().ExactBelow, o.withDefaults().ExactBelow
		for _, q := range queries {
			a, err := ix.Search(ctx, q, 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			c, _ := re.Search(ctx, q, 10, nil)
			if !slices.Equal(a, c) || len(a) != 10 {
				t.Fatalf("reloaded index answers differently:\n%v\n%v", a, c)
			}
		}
	}
	if _, err := Load(ctx, db, kv.UserKey("bob", kv.SubVector), Options{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Load of empty prefix: %v, want ErrNotFound", err)
	}
}

func TestDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := kvtest.Map{}
	vecs, queries := dataset(21, 4000, 100, 32, 12)
	ix := build(t, store, vecs, Options{Seed: 9, ExactBelow: -1})
	allow := roaring.New()
	for i := range vecs {
		if i%3 == 0 {
			if err := ix.Delete(store, uint32(i)); err != nil {
				t.Fatal(err)
			}
		} else {
			allow.Add(uint32(i))
		}
	}
	if err := ix.Delete(store, 1_000_000); err != nil { // absent: no-op
		t.Fatal(err)
	}
	if ix.Len() != int(allow.GetCardinality()) {
		t.Fatalf("Len = %d, want %d", ix.Len(), allow.GetCardinality())
	}
	if err := ix.Check(ctx, store); err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, q := range queries {
		got, err := ix.Search(ctx, q, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range got {
			if h.ID%3 == 0 {
				t.Fatalf("deleted %d returned", h.ID)
			}
		}
		sum += recallOf(got, bruteForce(vecs, q, 10, allow))
	}
	if r := sum / float64(len(queries)); r < 0.95 {
		t.Errorf("recall@10 after deleting a third = %.4f", r)
	}
	// Slots freed by deletes are reused, and the graph stays valid.
	for i := 0; i < len(vecs); i += 3 {
		if err := ix.Add(store, uint32(i), vecs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if ix.Len() != len(vecs) || len(ix.ids) != len(vecs) {
		t.Fatalf("Len %d slots %d, want %d", ix.Len(), len(ix.ids), len(vecs))
	}
	if err := ix.Check(ctx, store); err != nil {
		t.Fatal(err)
	}
	// Delete everything: the index empties cleanly and persists nothing but
	// its meta key.
	for i := range vecs {
		if err := ix.Delete(store, uint32(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Check(ctx, store); err != nil {
		t.Fatal(err)
	}
	if len(store) != 1 {
		t.Fatalf("%d keys left after deleting everything", len(store))
	}
	if got, err := ix.Search(ctx, vecs[0], 5, nil); err != nil || len(got) != 0 {
		t.Fatalf("empty index: %v %v", got, err)
	}
	re, err := Load(ctx, store, []byte("p/"), Options{})
	if err != nil || re.Len() != 0 {
		t.Fatalf("reload empty: %v", err)
	}
	if err := re.Add(store, 5, vecs[5]); err != nil {
		t.Fatal(err)
	}
	if got, _ := re.Search(ctx, vecs[5], 1, nil); len(got) != 1 || got[0].ID != 5 {
		t.Fatalf("after re-adding: %v", got)
	}
}

func TestReplace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := kvtest.Map{}
	vecs := clustered(31, 800, 16, 5)
	ix := build(t, store, vecs, Options{Seed: 2, ExactBelow: -1})
	// Re-adding every ID with a different vector replaces it.
	for i := range vecs {
		if err := ix.Add(store, uint32(i), vecs[len(vecs)-1-i]); err != nil {
			t.Fatal(err)
		}
	}
	if ix.Len() != len(vecs) {
		t.Fatalf("Len = %d", ix.Len())
	}
	if err := ix.Check(ctx, store); err != nil {
		t.Fatal(err)
	}
	got, _ := ix.Search(ctx, vecs[0], 1, nil)
	if len(got) != 1 || got[0].ID != uint32(len(vecs)-1) {
		t.Fatalf("got %v, want ID %d", got, len(vecs)-1)
	}
}

func TestDeterministic(t *testing.T) {
	t.Parallel()
	vecs := clustered(41, 1500, 16, 6)
	a, b := kvtest.Map{}, kvtest.Map{}
	// ExactBelow < 0: the graph is built from the first Add.
	build(t, a, vecs, Options{Seed: 5, ExactBelow: -1})
	build(t, b, vecs, Options{Seed: 5, ExactBelow: -1})
	if len(a) != len(b) {
		t.Fatalf("%d keys vs %d", len(a), len(b))
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			t.Fatalf("key %x differs between two builds with one seed", k)
		}
	}
	c := kvtest.Map{}
	build(t, c, vecs, Options{Seed: 6, ExactBelow: -1})
	same := true
	for k, v := range a {
		same = same && bytes.Equal(v, c[k])
	}
	if same {
		t.Error("a different seed built the same graph")
	}
}

func TestInvalidInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ix := New(4, nil, Options{})
	w := kvtest.Map{}
	if err := ix.Add(w, 1, []float32{1, 2, 3}); !errors.Is(err, ErrDimension) {
		t.Errorf("short vector: %v", err)
	}
	if err := ix.Add(w, 1, []float32{0, 0, 0, 0}); !errors.Is(err, ErrVector) {
		t.Errorf("zero vector under cosine: %v", err)
	}
	if err := ix.Add(w, 1, []float32{1, float32(math.NaN()), 0, 0}); !errors.Is(err, ErrVector) {
		t.Errorf("NaN: %v", err)
	}
	// A norm so small that 1/‖v‖ overflows float32: normalising would
	// turn its zero components into NaN and persist a record that Load
	// refuses as corrupt.
	if err := ix.Add(w, 1, []float32{math.SmallestNonzeroFloat32, 0, 0, 0}); !errors.Is(err, ErrVector) {
		t.Errorf("vector too small to normalise under cosine: %v", err)
	}
	if _, err := ix.Search(ctx, []float32{1}, 3, nil); !errors.Is(err, ErrDimension) {
		t.Errorf("search with short vector: %v", err)
	}
	if len(w) != 0 {
		t.Errorf("rejected adds wrote %d keys", len(w))
	}
	dotIx := New(4, nil, Options{Metric: Dot})
	if err := dotIx.Add(w, 1, []float32{0, 0, 0, 0}); err != nil {
		t.Errorf("zero vector under dot: %v", err)
	}
	if err := dotIx.Add(w, 2, []float32{2, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	got, _ := dotIx.Search(ctx, []float32{1, 0, 0, 0}, 2, nil)
	if len(got) != 2 || got[0].ID != 2 || got[0].Score != 2 {
		t.Errorf("dot search: %v", got)
	}
	if got, err := New(0, nil, Options{}).Search(ctx, nil, 1, nil); !errors.Is(err, ErrDimension) {
		t.Errorf("dim 0: %v %v", got, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := dotIx.Search(cctx, []float32{1, 0, 0, 0}, 1, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestCheckFindsDamage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := kvtest.Map{}
	vecs := clustered(51, 300, 8, 3)
	ix := build(t, store, vecs, Options{Seed: 1, ExactBelow: -1})
	if err := ix.Check(ctx, store); err != nil {
		t.Fatal(err)
	}
	// A neighbour list pointing at an ID that has no vector.
	key := string(ix.linkKey(10, 0))
	good := store[key]
	bad := bytes.Clone(good)
	copy(bad, []byte{0xEE, 0xEE, 0xEE, 0x0E})
	store[key] = bad
	if err := ix.Check(ctx, store); !errors.Is(err, ErrCheck) {
		t.Errorf("Check missed a damaged list: %v", err)
	}
	if _, err := Load(ctx, store, []byte("p/"), Options{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Load of a dangling link: %v", err)
	}
	store[key] = good
	// A vector missing from the store.
	vk := string(ix.vecKey(20))
	v := store[vk]
	delete(store, vk)
	if err := ix.Check(ctx, store); !errors.Is(err, ErrCheck) {
		t.Errorf("Check missed a missing vector: %v", err)
	}
	store[vk] = v
	// A newer format.
	mk := string(ix.metaKey())
	m := store[mk]
	store[mk] = append([]byte{9}, m[1:]...)
	if _, err := Load(ctx, store, []byte("p/"), Options{}); !errors.Is(err, ErrFormat) {
		t.Errorf("Load of a newer format: %v", err)
	}
	store[mk] = m
	if err := ix.Check(ctx, store); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vecs := clustered(61, 2000, 16, 8)
	store := kvtest.Map{}
	ix := build(t, store, vecs[:1000], Options{Seed: 4, ExactBelow: -1})
	var mu sync.Mutex // kvtest.Map itself is not safe for concurrent use
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				if _, err := ix.Search(ctx, vecs[(g*200+i)%2000], 5, nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for i := 1000; i < 2000; i++ {
			mu.Lock()
			err := ix.Add(store, uint32(i), vecs[i])
			mu.Unlock()
			if err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	if err := ix.Check(ctx, store); err != nil {
		t.Fatal(err)
	}
}
