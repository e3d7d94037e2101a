package memor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor/extract"
	"github.com/memor-db/memor/internal/norm"
)

// refFactID is fact identity as DESIGN §3 defines it, written plainly:
// SHA-256 of the length-prefixed fields and ValidFrom, first 16 bytes.
// factID and endID must give the same bytes (fact IDs are stored and
// named by callers).
func refFactID(user, subjKey, pred, objKey, ctxKey string, vf int64) [idLen]byte {
	var msg []byte
	for _, s := range []string{user, subjKey, pred, objKey, ctxKey} {
		msg = append(binary.BigEndian.AppendUint64(msg, uint64(len(s))), s...)
	}
	sum := sha256.Sum256(binary.BigEndian.AppendUint64(msg, uint64(vf)))
	return [idLen]byte(sum[:idLen])
}

// randField is a random string of up to max bytes: empty, ASCII,
// multi-byte, NUL bytes; long enough, with the others, to pass factID's
// stack buffer.
func randField(r *rand.Rand, max int) string {
	alphabet := []string{"a", "Z", "0", " ", "_", "\x00", "é", "🙂", "end", "\xff"}
	var b strings.Builder
	for n := r.IntN(max + 1); b.Len() < n; {
		b.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

// TestFactIDEqualsReference: factID and endID hash exactly what the
// straightforward field-by-field hash does, for random fields from empty
// to longer than the stack buffer, and valid times of both signs.
func TestFactIDEqualsReference(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 20_000 {
		max := 12
		if i%10 == 0 {
			max = 200
		}
		f := [5]string{randField(r, max), randField(r, max), randField(r, max), randField(r, max), randField(r, max)}
		vf := int64(r.Uint64())
		if got, want := factID(f[0], f[1], f[2], f[3], f[4], vf), refFactID(f[0], f[1], f[2], f[3], f[4], vf); got != want {
			t.Fatalf("factID(%q, %d) = %x, want %x", f, vf, got, want)
		}
		if got, want := endID(f[0], f[1], f[2], f[3], f[4], vf), refFactID(f[0]+"\x00end", f[1], f[2], f[3], f[4], vf); got != want {
			t.Fatalf("endID(%q, %d) = %x, want %x", f, vf, got, want)
		}
	}
	// A fixed vector, so that the reference itself cannot drift.
	if got := hex.EncodeToString(func() []byte { id := factID("u", "user", "lives_in", "paris", "", 1); return id[:] }()); got != "676d2cdc46b5a166a62f797f13aa37e0" {
		t.Fatalf("factID of the fixed vector = %s", got)
	}
}

// TestParseIDEqualsReference: parseID and recWriter.id accept and decode
// exactly what hex.DecodeString does for a 16-byte ID.
func TestParseIDEqualsReference(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	digits := "0123456789abcdefABCDEFgx \x00é"
	for i := range 50_000 {
		n := 2 * idLen
		if i%5 == 0 {
			n = r.IntN(2*idLen + 3)
		}
		var b strings.Builder
		for b.Len() < n {
			if r.IntN(20) == 0 {
				b.WriteString(digits[16+r.IntN(len(digits)-16):][:1])
			} else {
				b.WriteByte(digits[r.IntN(22)])
			}
		}
		s := b.String()
		raw, err := hex.DecodeString(s)
		wantOK := err == nil && len(raw) == idLen
		id, err := parseID(s)
		if (err == nil) != wantOK || wantOK && !bytes.Equal(id[:], raw) {
			t.Fatalf("parseID(%q) = %x, %v; hex.DecodeString: %x, ok %v", s, id, err, raw, wantOK)
		}
		w := recWriter{}
		w.id(s)
		want := append([]byte{0}, binary.AppendUvarint(nil, uint64(len(s)))...)
		want = append(want, s...)
		if wantOK {
			want = append([]byte{1}, raw...)
		}
		if !bytes.Equal(w.b, want) {
			t.Fatalf("recWriter.id(%q) = %x, want %x", s, w.b, want)
		}
	}
	if _, err := parseID(fmt.Sprintf("%032x", 7)); err != nil {
		t.Fatal(err)
	}
}

// refRenderOp is renderOp as first written, by string concatenation.
func refRenderOp(op extract.Op) string {
	s := norm.Clean(op.Subject) + " " + normPredicate(op.Predicate)
	if op.Kind == extract.End {
		s += " ended"
	}
	if op.Object != "" {
		s += " " + norm.Clean(op.Object)
	}
	if op.Context != "" {
		s += " (" + norm.Clean(op.Context) + ")"
	}
	return s
}

// TestAssertBatchEqualsUncheckedWrite: AssertBatch, which checks its ops
// before the write and renders the episode text into one buffer, stores
// exactly the bytes and returns exactly the decisions of the plain write
// of the same ops (checked again while applied, text joined from
// refRenderOp), over random batches with messy spacing and case,
// contexts, duplicates, low confidence and default valid times.
func TestAssertBatchEqualsUncheckedWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t0 := time.Date(2021, 3, 1, 0, 0, 0, 0, time.UTC)
	open := func() *Engine {
		now := t0
		e, err := Open(filepath.Join(t.TempDir(), "db"), Options{NoSync: true, Clock: func() time.Time {
			now = now.Add(time.Second)
			return now
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	words := []string{"Paris", " paris", "tea  time", "Bob", "user", "é café", "x"}
	preds := []string{"lives_in", "Lives In", "likes", "plays", "favourite_colour", "custom-thing"}
	for seed := range uint64(6) {
		r := rand.New(rand.NewPCG(seed, 21))
		a, b := open(), open()
		for u := range 4 {
			user := fmt.Sprint("user-", u)
			for range 3 {
				fs := make([]FactInput, 1+r.IntN(30))
				for i := range fs {
					fs[i] = FactInput{Subject: words[r.IntN(len(words))], Predicate: preds[r.IntN(len(preds))],
						Object: words[r.IntN(len(words))], Confidence: []float64{0, 1, 0.9, 0.3}[r.IntN(4)]}
					if r.IntN(3) == 0 {
						fs[i].Context = words[r.IntN(len(words))]
					}
					if r.IntN(4) > 0 {
						fs[i].ValidFrom = t0.Add(time.Duration(r.IntN(20)) * time.Hour)
					}
					if r.IntN(5) == 0 {
						fs[i].Quote = "said so"
					}
				}
				got, err := a.AssertBatch(ctx, user, fs)
				if err != nil {
					t.Fatal(err)
				}
				// What AssertBatch builds, written the plain way; the
				// engines' clocks tick alike (one reading for the ops,
				// one for the write).
				now := b.clock().UTC()
				ops := make([]extract.Op, len(fs))
				lines := make([]string, len(fs))
				for i, f := range fs {
					ops[i] = extract.Op{Kind: extract.Assert, Subject: f.Subject, Predicate: f.Predicate, Object: f.Object,
						Context: f.Context, ValidFrom: f.ValidFrom, Confidence: f.Confidence, Quote: f.Quote}
					if ops[i].ValidFrom.IsZero() {
						ops[i].ValidFrom = now
					}
					lines[i] = refRenderOp(ops[i])
				}
				ep := Episode{Kind: EpisodeFacts, At: now, Ops: ops, Text: strings.Join(lines, "\n")}
				want, err := b.write(ctx, user, &ep, nil, false)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d: decisions differ:\n%v\n%v", seed, got, want)
				}
			}
		}
		if da, db := checkedDump(t, a), checkedDump(t, b); !bytes.Equal(da, db) {
			t.Fatalf("seed %d: stores differ", seed)
		}
	}
}

// BenchmarkParseID: every version and log record decodes its fact's ID.
func BenchmarkParseID(b *testing.B) {
	s := hex.EncodeToString(func() []byte { id := factID("u", "user", "lives_in", "paris", "", 1); return id[:] }())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseID(s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFactID: every claim hashes its ID.
func BenchmarkFactID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		factID("user-123", "user", "plays_instrument", "object-123456", "", 1_600_000_000_000_000_000)
	}
}
