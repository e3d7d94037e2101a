package hnsw

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/memor-db/memor/kv/kvtest"
)

// TestWriterEqualsIndex: a Writer stores exactly the keys and values of an
// index that added the same vectors (deferred, then flushed), for both
// metrics, dense and sparse vectors, any count below GraphAt; the result
// loads, checks clean and answers searches like the index; the vector
// that would need the graph is refused, and so is an ID out of order.
func TestWriterEqualsIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	prefix := []byte("u/n")
	for _, metric := range []Metric{Cosine, Dot} {
		for _, n := range []int{0, 1, 7, 300} {
			o := Options{Metric: metric, GraphAt: 301, ExactBelow: 301}
			rng := rand.New(rand.NewPCG(uint64(n), uint64(metric)))
			vecs := make([][]float32, n)
			for i := range vecs {
				vecs[i] = make([]float32, 48)
				for j := range vecs[i] {
					if i%3 != 0 || rng.IntN(8) == 0 { // every third sparse
						vecs[i][j] = float32(rng.NormFloat64())
					}
				}
				vecs[i][i%48] += 0.5 // never the zero vector
			}
			ix, want := New(48, prefix, o), kvtest.Map{}
			wr, got := NewWriter(48, prefix, o), kvtest.Map{}
			for i, v := range vecs {
				id := uint32(3*i + 1)
				if err := ix.Add(nil, id, v); err != nil {
					t.Fatal(err)
				}
				if err := wr.Add(got, id, v); err != nil {
					t.Fatal(err)
				}
			}
			if err := ix.Flush(want); err != nil {
				t.Fatal(err)
			}
			if err := wr.Finish(got); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) || wr.Len() != n {
				t.Fatalf("%v n=%d: writer stored %d keys (Len %d), index %d", metric, n, len(got), wr.Len(), len(want))
			}
			for k, v := range want {
				if !bytes.Equal(got[k], v) {
					t.Fatalf("%v n=%d: key %x: writer %x, index %x", metric, n, k, got[k], v)
				}
			}
			if n == 0 {
				continue
			}
			loaded, err := Load(ctx, got, prefix, o)
			if err != nil {
				t.Fatal(err)
			}
			if err := loaded.Check(ctx, got); err != nil {
				t.Fatal(err)
			}
			a, _ := ix.Search(ctx, vecs[0], 5, nil)
			b, _ := loaded.Search(ctx, vecs[0], 5, nil)
			if len(a) != len(b) || a[0] != b[0] {
				t.Fatalf("%v n=%d: search %v, index %v", metric, n, b, a)
			}
			if n == 300 {
				if err := wr.Add(got, 10_000, vecs[0]); !errors.Is(err, ErrWriterFull) {
					t.Fatalf("vector %d of GraphAt %d: %v, want ErrWriterFull", n+1, o.GraphAt, err)
				}
			} else if err := wr.Add(got, 1, vecs[0]); err == nil {
				t.Fatal("an ID out of order was written")
			}
		}
	}
}

// TestWriterAddSparse: AddSparse writes, byte for byte, the record Add
// writes for the dense vector, over both metrics, dimensions on both
// sides of the SIMD block sizes, vectors from one component to dense
// (which go through Add), components of every magnitude (subnormal, -0,
// explicit zeros) and vectors Add refuses (zero under Cosine, NaN, Inf),
// which AddSparse refuses alike; bad indexes are refused without leaving
// anything behind for the next vector.
func TestWriterAddSparse(t *testing.T) {
	t.Parallel()
	prefix := []byte("u/n")
	r := rand.New(rand.NewPCG(6, 7))
	for _, metric := range []Metric{Cosine, Dot} {
		for _, dim := range []int{5, 16, 37, 384} {
			o := Options{Metric: metric, GraphAt: 5000}
			dense, sparse := NewWriter(dim, prefix, o), NewWriter(dim, prefix, o)
			want, got := kvtest.Map{}, kvtest.Map{}
			for id := uint32(1); id < 1500; id++ {
				nnz := r.IntN(dim/2 + 1)
				if id%10 == 0 {
					nnz = r.IntN(dim + 1) // some dense enough for Add
				}
				var idx []int32
				var val []float32
				v := make([]float32, dim)
				for _, i := range r.Perm(dim)[:nnz] {
					v[i] = float32(r.NormFloat64()) * float32(math.Pow(2, float64(r.IntN(60)-40)))
					switch r.IntN(20) {
					case 0:
						v[i] = 0
					case 1:
						v[i] = float32(math.Copysign(0, -1))
					case 2:
						v[i] = math.Float32frombits(r.Uint32() & 0x807fffff) // subnormal
					}
				}
				switch id % 97 {
				case 5:
					v[r.IntN(dim)] = float32(math.NaN())
				case 6:
					v[r.IntN(dim)] = float32(math.Inf(-1))
				}
				for i, x := range v {
					if x != 0 || math.Signbit(float64(x)) || r.IntN(dim) == 0 {
						idx, val = append(idx, int32(i)), append(val, x)
					}
				}
				errDense := dense.Add(want, id, v)
				errSparse := sparse.AddSparse(got, id, idx, val)
				if (errDense == nil) != (errSparse == nil) || errDense != nil && errDense.Error() != errSparse.Error() {
					t.Fatalf("%v dim %d vector %d: Add says %v, AddSparse %v", metric, dim, id, errDense, errSparse)
				}
				if id%13 == 0 { // bad input changes nothing
					bad := [][]int32{{int32(dim)}, {-1}, {2, 1}, {1, 1}}
					for _, b := range bad {
						if err := sparse.AddSparse(got, id+10000, b, make([]float32, len(b))); !errors.Is(err, ErrDimension) {
							t.Fatalf("indexes %v: %v", b, err)
						}
					}
					if err := sparse.AddSparse(got, id+10000, []int32{1}, nil); !errors.Is(err, ErrDimension) {
						t.Fatalf("values short: %v", err)
					}
				}
			}
			if dense.Len() != sparse.Len() || len(got) != len(want) {
				t.Fatalf("%v dim %d: %d records (Len %d), want %d (Len %d)", metric, dim, len(got), sparse.Len(), len(want), dense.Len())
			}
			for k, v := range want {
				if !bytes.Equal(got[k], v) {
					t.Fatalf("%v dim %d: key %x: AddSparse wrote %x, Add %x", metric, dim, k, got[k], v)
				}
			}
		}
	}
}
