package hnsw

import (
	"bufio"
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden_writes.txt from this build")

// logKV is a kv.Writer that records every write, in order, as one line:
// the op, the key in hex and the SHA-256 of the value.
type logKV struct{ lines []string }

func (l *logKV) Set(k, v []byte) error {
	l.lines = append(l.lines, fmt.Sprintf("set %x %d %x", k, len(v), sha256.Sum256(v)))
	return nil
}

func (l *logKV) Delete(k []byte) error {
	l.lines = append(l.lines, fmt.Sprintf("del %x", k))
	return nil
}

// goldenVecs returns n vectors of dim mixing clustered embeddings with the
// magnitudes that take encodeHalf's slow paths: exact zeros, components
// that scale to subnormal halves, one dominating component and components
// on a rounding tie.
func goldenVecs(seed uint64, n, dim int) [][]float32 {
	r := rand.New(rand.NewPCG(seed, 3))
	vecs := clustered(seed, n, dim, 7)
	for i, v := range vecs {
		switch i % 11 {
		case 1:
			for j := range v {
				if r.IntN(3) == 0 {
					v[j] = 0
				}
			}
		case 2:
			for j := range v {
				v[j] *= float32(math.Pow(10, float64(r.IntN(12)-8)))
			}
		case 3:
			v[r.IntN(dim)] = 1e4
		case 5:
			v[r.IntN(dim)] = math.Float32frombits(0x1000 | uint32(r.IntN(3)) - 1 + 0x3f800000)
		}
	}
	return vecs
}

// goldenRun drives the write paths the engine uses and logs every write
// and the answers of a few searches. Its output was captured from the
// implementation before the session-6 speed work (see
// testdata/golden_writes.txt) and must never change: it is the persisted
// format and the query results. (Format 4 changed the records of mostly
// zero vectors, the edge section's zero vectors among them, and added the
// sparse section.)
func goldenRun(t *testing.T) []string {
	ctx := context.Background()
	var out []string
	section := func(name string, l *logKV) {
		out = append(out, "== "+name)
		out = append(out, l.lines...)
		l.lines = l.lines[:0]
	}
	searches := func(ix *Index, qs [][]float32) {
		for qi, q := range qs {
			hits, err := ix.Search(ctx, q, 5, nil)
			if err != nil {
				out = append(out, fmt.Sprintf("search %d: %v", qi, err))
				continue
			}
			var sb strings.Builder
			fmt.Fprintf(&sb, "search %d:", qi)
			for _, h := range hits {
				fmt.Fprintf(&sb, " %d/%08x", h.ID, math.Float32bits(h.Score))
			}
			out = append(out, sb.String())
		}
	}
	for _, dim := range []int{384, 16} {
		for _, metric := range []Metric{Cosine, Dot} {
			name := fmt.Sprintf("dim=%d/metric=%v", dim, metric)
			vecs := goldenVecs(uint64(dim)+uint64(metric), 260, dim)
			qs := vecs[len(vecs)-6:]
			vecs = vecs[:len(vecs)-6]
			var l logKV

			// The bulk path: Reserve, Adds with a nil writer, one Flush.
			ix := New(dim, []byte("user/v"), Options{Seed: 1, Metric: metric})
			ix.Reserve(len(vecs))
			for i, v := range vecs {
				if err := ix.Add(nil, uint32(i), v); err != nil {
					out = append(out, fmt.Sprintf("add %d: %v", i, err))
				}
			}
			if err := ix.Flush(&l); err != nil {
				t.Fatal(err)
			}
			section(name+"/bulk", &l)
			searches(ix, qs)

			// Replacements and deletes, deferred then immediate.
			for i := 0; i < len(vecs); i += 7 {
				if err := ix.Add(nil, uint32(i), vecs[(i+3)%len(vecs)]); err != nil {
					out = append(out, fmt.Sprintf("replace %d: %v", i, err))
				}
			}
			if err := ix.Flush(&l); err != nil {
				t.Fatal(err)
			}
			for i := 1; i < len(vecs); i += 13 {
				if err := ix.Delete(&l, uint32(i)); err != nil {
					t.Fatal(err)
				}
				if err := ix.Add(&l, uint32(1000+i), vecs[i]); err != nil {
					out = append(out, fmt.Sprintf("add %d: %v", 1000+i, err))
				}
			}
			section(name+"/replace", &l)
			searches(ix, qs)

			// Immediate Adds that cross GraphAt, then deferred graph
			// inserts.
			g := New(dim, []byte("user/v"), Options{Seed: 3, Metric: metric, GraphAt: 120})
			for i, v := range vecs[:150] {
				if err := g.Add(&l, uint32(i), v); err != nil {
					out = append(out, fmt.Sprintf("graph add %d: %v", i, err))
				}
			}
			section(name+"/graph-build", &l)
			for i, v := range vecs[150:] {
				if err := g.Add(nil, uint32(150+i), v); err != nil {
					out = append(out, fmt.Sprintf("graph add %d: %v", 150+i, err))
				}
			}
			if err := g.Flush(&l); err != nil {
				t.Fatal(err)
			}
			section(name+"/graph-deferred", &l)
			searches(g, qs)
		}
		// Dot accepts vectors of subnormal float32s, whose scale inverts
		// to +Inf (their components round to ±Inf and NaN): odd, but
		// persisted as they are.
		r := rand.New(rand.NewPCG(uint64(dim), 9))
		var l logKV
		ix := New(dim, []byte("user/v"), Options{Seed: 1, Metric: Dot})
		for i := range 8 {
			v := make([]float32, dim)
			for j := range v {
				switch i % 4 {
				case 0:
					v[j] = math.Float32frombits(r.Uint32() & 0x8000ffff)
				case 1:
					v[j] = math.Float32frombits(r.Uint32() & 0x807fffff)
				case 2:
					v[j] = math.Float32frombits(r.Uint32()&0x83ffffff) * float32(r.IntN(2))
				default:
					v[j] = 0
				}
			}
			if err := ix.Add(&l, uint32(i), v); err != nil {
				out = append(out, fmt.Sprintf("edge add %d: %v", i, err))
			}
		}
		section(fmt.Sprintf("dim=%d/edge", dim), &l)
	}
	// Sparse vectors (format 4): a hashing embedder's, persisted as
	// their non-zero halves, written at once and deferred.
	r := rand.New(rand.NewPCG(384, 11))
	vecs := make([][]float32, 80)
	for i := range vecs {
		vecs[i] = sparseVec(r, 384, 1+r.IntN(40))
		vecs[i][r.IntN(384)] = 1
	}
	var l logKV
	ix := New(384, []byte("user/v"), Options{Seed: 1})
	for i, v := range vecs[:40] {
		if err := ix.Add(&l, uint32(i), v); err != nil {
			out = append(out, fmt.Sprintf("sparse add %d: %v", i, err))
		}
	}
	for i, v := range vecs[40:] {
		if err := ix.Add(nil, uint32(40+i), v); err != nil {
			out = append(out, fmt.Sprintf("sparse add %d: %v", 40+i, err))
		}
	}
	if err := ix.Flush(&l); err != nil {
		t.Fatal(err)
	}
	section("dim=384/sparse", &l)
	searches(ix, vecs[:6])
	return out
}

// TestGoldenWrites: the keys and values the index writes, and the results
// of searches, are byte for byte those of the implementation the golden
// file was captured from.
func TestGoldenWrites(t *testing.T) {
	got := goldenRun(t)
	path := filepath.Join("testdata", "golden_writes.txt")
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	i := 0
	for sc.Scan() {
		if i >= len(got) {
			t.Fatalf("line %d: golden has %q, this build wrote nothing more", i+1, sc.Text())
		}
		if sc.Text() != got[i] {
			t.Fatalf("line %d: golden has\n\t%s\nthis build wrote\n\t%s", i+1, sc.Text(), got[i])
		}
		i++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if i != len(got) {
		t.Fatalf("golden has %d lines, this build wrote %d", i, len(got))
	}
}

// keepKV is a kv.Writer that keeps the slices it is given (as the
// kv.Writer contract allows) and their hashes at the time of the call.
type keepKV struct {
	keys, vals [][]byte
	sums       [][32]byte
}

func (k *keepKV) Set(key, val []byte) error {
	k.keys, k.vals = append(k.keys, key), append(k.vals, val)
	k.sums = append(k.sums, sha256.Sum256(append(append([]byte(nil), key...), val...)))
	return nil
}

func (k *keepKV) Delete([]byte) error { return nil }

// TestDeferredRecordsNotShared: vector records carved from one chunk
// never share bytes: a writer that keeps every key and value, and even
// appends to them, sees each unchanged after later Adds and flushes.
func TestDeferredRecordsNotShared(t *testing.T) {
	vecs := goldenVecs(5, 300, 24)
	var w keepKV
	ix := New(24, []byte("user/v"), Options{Seed: 1})
	ix.Reserve(100)
	for i, v := range vecs {
		if err := ix.Add(nil, uint32(i%250), v); err != nil {
			t.Fatal(err)
		}
		if i%37 == 36 {
			if err := ix.Flush(&w); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := ix.Flush(&w); err != nil {
		t.Fatal(err)
	}
	for i := range w.vals {
		_ = append(w.keys[i], 0xEE)
		_ = append(w.vals[i], 0xEE)
	}
	for i := range w.vals {
		if sha256.Sum256(append(append([]byte(nil), w.keys[i]...), w.vals[i]...)) != w.sums[i] {
			t.Fatalf("write %d (key %x) changed after it was made", i, w.keys[i])
		}
	}
	if len(w.vals) < len(vecs) {
		t.Fatalf("%d writes for %d Adds", len(w.vals), len(vecs))
	}
}
