package memor

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// refFactID is factID as first written: a sha256.Hash fed field by field.
// factID and endID must give the same bytes (fact IDs are stored and
// named by callers).
func refFactID(user, subjKey, pred, objKey, ctxKey string, vf int64) [idLen]byte {
	h := sha256.New()
	var n [8]byte
	for _, s := range []string{user, subjKey, pred, objKey, ctxKey} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	binary.BigEndian.PutUint64(n[:], uint64(vf))
	h.Write(n[:])
	var id [idLen]byte
	copy(id[:], h.Sum(nil))
	return id
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
