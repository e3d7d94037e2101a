package hnsw

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"testing"
)

// TestWriterEqualsIndex: a Writer stores exactly the keys and values of an
// index that added the same vectors (deferred, then flushed), for both
// metrics, dense and sparse vectors, any count below GraphAt; the result
// loads, checks clean and answers searches like the index; the vector
// that would need the graph is refused, and so is an ID out of order.
func TestWriterEqualsIndex(t *testing.T) {
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
			ix, want := New(48, prefix, o), memKV{}
			wr, got := NewWriter(48, prefix, o), memKV{}
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
