package hnsw

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// logKV is a kv.Writer that records every write, in order, as one
// readable line (see describeWrite).
type logKV struct{ lines []string }

func (l *logKV) Set(k, v []byte) error {
	l.lines = append(l.lines, describeWrite(k, v, true))
	return nil
}

func (l *logKV) Delete(k []byte) error {
	l.lines = append(l.lines, describeWrite(k, nil, false))
	return nil
}

// goldenPrefix is the key prefix of every index in the golden run.
const goldenPrefix = "user/v"

// describeWrite renders one write with its key decoded into its parts
// (see the key layout in doc.go) and its value decoded where it is short
// (meta fields, neighbour IDs) or summarised where it is not (a vector's
// encoding, scale, length and the first 8 bytes of its SHA-256), so that
// any change of a written byte changes the line. The decoding is written
// here from doc.go, not borrowed from the package, so the golden does not
// follow a change of the codec.
func describeWrite(k, v []byte, set bool) string {
	op := "del"
	if set {
		op = "set"
	}
	rest, ok := bytes.CutPrefix(k, []byte(goldenPrefix))
	var key string
	switch {
	case !ok || len(rest) == 0:
		key = fmt.Sprintf("raw %x", k)
	case rest[0] == 'm' && len(rest) == 1:
		key = "meta"
	case rest[0] == 'v' && len(rest) == 5:
		key = fmt.Sprintf("vec %d", binary.BigEndian.Uint32(rest[1:]))
	case rest[0] == 'l' && len(rest) == 6:
		key = fmt.Sprintf("links %d/L%d", binary.BigEndian.Uint32(rest[1:5]), rest[5])
	default:
		key = fmt.Sprintf("raw %x", k)
	}
	if !set {
		return op + " " + key
	}
	return op + " " + key + ": " + describeValue(rest, v)
}

func describeValue(key, v []byte) string {
	sum := sha256.Sum256(v)
	opaque := fmt.Sprintf("%d bytes sha256:%x", len(v), sum[:8])
	switch {
	case len(key) == 1 && key[0] == 'm' && len(v) == 15:
		metric := map[byte]string{0: "cosine", 1: "dot"}[v[1]]
		if metric == "" {
			metric = fmt.Sprintf("metric(%d)", v[1])
		}
		var entry string
		switch {
		case v[8] == 1:
			entry = fmt.Sprintf("%d@L%d", binary.LittleEndian.Uint32(v[9:13]), v[13])
		case v[8] == 0 && bytes.Equal(v[9:14], make([]byte, 5)):
			entry = "none"
		default:
			entry = fmt.Sprintf("raw(%x)", v[8:14])
		}
		return fmt.Sprintf("format=%d %s M=%d dim=%d entry=%s built=%d",
			v[0], metric, binary.LittleEndian.Uint16(v[2:4]), binary.LittleEndian.Uint32(v[4:8]), entry, v[14])
	case key[0] == 'l' && len(v)%4 == 0:
		ids := make([]string, len(v)/4)
		for i := range ids {
			ids[i] = strconv.FormatUint(uint64(binary.LittleEndian.Uint32(v[4*i:])), 10)
		}
		return "[" + strings.Join(ids, " ") + "]"
	case key[0] == 'v' && len(v) >= 5 && (v[0] == 0xF1 || v[0] == 0xF2):
		kind := "half"
		if v[0] == 0xF2 {
			kind = fmt.Sprintf("sparse nnz=%d", (len(v)-5)/4)
		}
		scale := math.Float32frombits(binary.LittleEndian.Uint32(v[1:5]))
		return fmt.Sprintf("%s s=%s, %s", kind, strconv.FormatFloat(float64(scale), 'g', -1, 32), opaque)
	}
	return opaque
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
// testdata/golden_writes) and must never change: it is the persisted
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
				fmt.Fprintf(&sb, " %d(%s)", h.ID, strconv.FormatFloat(float64(h.Score), 'g', -1, 32))
			}
			out = append(out, sb.String())
		}
	}
	for _, dim := range []int{384, 16} {
		for _, metric := range []Metric{Cosine, Dot} {
			name := fmt.Sprintf("%d/%v", dim, metric)
			vecs := goldenVecs(uint64(dim)+uint64(metric), 260, dim)
			qs := vecs[len(vecs)-6:]
			vecs = vecs[:len(vecs)-6]
			var l logKV

			// The bulk path: Reserve, Adds with a nil writer, one Flush.
			ix := New(dim, []byte(goldenPrefix), Options{Seed: 1, Metric: metric})
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
			g := New(dim, []byte(goldenPrefix), Options{Seed: 3, Metric: metric, GraphAt: 120})
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
		ix := New(dim, []byte(goldenPrefix), Options{Seed: 1, Metric: Dot})
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
		section(fmt.Sprintf("%d/edge", dim), &l)
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
	ix := New(384, []byte(goldenPrefix), Options{Seed: 1})
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
	section("384/sparse", &l)
	searches(ix, vecs[:6])
	return out
}

// TestGoldenWrites: the keys and values the index writes, and the results
// of searches, are byte for byte those of the implementation the golden
// file was captured from. testdata/golden_writes holds one directive per
// section of goldenRun (its name is the directive's argument), each
// expecting that section's writes, one per line (see describeWrite), and
// the searches that follow it (ID and exact float32 score). A change of
// the format is a new store format: rewrite the file with
//
//	go test ./index/hnsw -run TestGoldenWrites -rewrite
//
// and review the diff.
func TestGoldenWrites(t *testing.T) {
	sections := map[string]string{}
	var order []string
	name := ""
	var block []string
	flush := func() {
		if name == "" {
			if len(block) > 0 {
				t.Errorf("goldenRun wrote before its first section: %q", block)
			}
		} else {
			sections[name] = strings.Join(block, "\n") + "\n"
			order = append(order, name)
		}
		block = nil
	}
	for _, line := range goldenRun(t) {
		if n, ok := strings.CutPrefix(line, "== "); ok {
			flush()
			name = n
			continue
		}
		block = append(block, line)
	}
	flush()
	seen := map[string]bool{}
	datadriven.RunTest(t, filepath.Join("testdata", "golden_writes"), func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "section" || len(d.CmdArgs) != 1 {
			d.Fatalf(t, "want: section <name>, got %s", d.Cmd)
		}
		n := d.CmdArgs[0].Key
		out, ok := sections[n]
		if !ok {
			d.Fatalf(t, "goldenRun has no section %q", n)
		}
		seen[n] = true
		return out
	})
	for _, n := range order {
		if !seen[n] {
			t.Errorf("section %q of goldenRun is not in testdata/golden_writes", n)
		}
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

// TestDescribeWriteSeesEveryByte: the golden's readable lines still pin
// every byte: flipping any bit of a record's key or value, of every kind
// the index writes, changes its line.
func TestDescribeWriteSeesEveryByte(t *testing.T) {
	p := []byte(goldenPrefix)
	meta := []byte{2, 1, 16, 0, 0x80, 1, 0, 0, 1, 63, 0, 0, 0, 2, 1}
	empty := []byte{2, 0, 16, 0, 0x80, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	links := []byte{29, 0, 0, 0, 28, 1, 0, 0}
	half := append([]byte{0xF1, 0, 0, 0x80, 0x3f}, make([]byte, 32)...)
	sparse := []byte{0xF2, 0, 0, 0x80, 0x3f, 3, 0, 0, 0x3c}
	for _, r := range [][2][]byte{
		{append(slices.Clone(p), 'm'), meta},
		{append(slices.Clone(p), 'm'), empty},
		{append(slices.Clone(p), 'l', 0, 0, 1, 2, 0), links},
		{append(slices.Clone(p), 'v', 0, 0, 0, 7), half},
		{append(slices.Clone(p), 'v', 0, 0, 0, 7), sparse},
	} {
		k, v := r[0], r[1]
		want := describeWrite(k, v, true)
		for i := range len(k) + len(v) {
			for bit := range 8 {
				k2, v2 := slices.Clone(k), slices.Clone(v)
				if i < len(k) {
					k2[i] ^= 1 << bit
				} else {
					v2[i-len(k)] ^= 1 << bit
				}
				if got := describeWrite(k2, v2, true); got == want {
					t.Errorf("%s: flipping bit %d of byte %d leaves the line unchanged", want, bit, i)
				}
			}
		}
	}
}
