package kv

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// Keyspace tags. Part of the file format; do not change. What each key
// holds is documented byte by byte in the root package's layout.go.
const (
	TagMeta     byte = 'M'
	TagUserList byte = 'U' // formats 1–2 only: the user registry
	TagJudge    byte = 'J' // formats 1–4 only: judge verdicts, shared by every user (now SubJudge)
	TagUser     byte = 'u'
)

// Sub is a sub-tag inside a user's keyspace. Values are part of the file
// format; do not change or reuse them. The keys and values under each are
// documented in the root package's layout.go (the index packages' own in
// their doc.go); the comments here only name them.
type Sub byte

const (
	SubMeta        Sub = 'm' // the user's counters
	SubEpisode     Sub = 'e' // the episode log (the source of truth)
	SubEpState     Sub = 's' // failed episodes
	SubClaim       Sub = 'c' // claims (assertions and ends)
	SubFactIndex   Sub = 'i' // claim ID → its claim's key
	SubLive        Sub = 'v' // live fact versions
	SubHistory     Sub = 'h' // expired fact versions
	SubArchive     Sub = 'a' // expired versions moved by Prune
	SubDoc         Sub = 'd' // index document → the version or episode it names
	SubLog         Sub = 'r' // the resolution log
	SubCorrection  Sub = 'x' // reserved: never written
	SubBM25        Sub = 'b' // owned by index/bm25
	SubVector      Sub = 'n' // owned by index/hnsw
	SubTemporal    Sub = 't' // owned by index/temporal
	SubGraph       Sub = 'g' // owned by graph
	SubJudge       Sub = 'j' // the judge's cached verdicts
	SubIdempotency Sub = 'k' // idempotency key → the episode added under it
)

const (
	escByte   = 0x00
	escEscape = 0xFF
	escTerm   = 0x01
)

// AppendBytes appends the escaped, terminated encoding of s to dst.
func AppendBytes(dst, s []byte) []byte {
	for _, c := range s {
		if c == escByte {
			dst = append(dst, escByte, escEscape)
			continue
		}
		dst = append(dst, c)
	}
	return append(dst, escByte, escTerm)
}

// AppendString is AppendBytes for a string.
func AppendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == escByte {
			dst = append(dst, escByte, escEscape)
			continue
		}
		dst = append(dst, s[i])
	}
	return append(dst, escByte, escTerm)
}

// AppendUint64 appends v as 8 big-endian bytes.
func AppendUint64(dst []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(dst, v) }

// AppendUint32 appends v as 4 big-endian bytes.
func AppendUint32(dst []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(dst, v) }

// AppendInt64 appends v so that byte order equals numeric order.
func AppendInt64(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v)^(1<<63))
}

// AppendTime appends t as order-preserving Unix nanoseconds. The zero time
// encodes as the largest instant, so an open interval end sorts last.
func AppendTime(dst []byte, t time.Time) []byte {
	if t.IsZero() {
		return AppendInt64(dst, math.MaxInt64)
	}
	return AppendInt64(dst, t.UnixNano())
}

// UserKey returns 'u' esc(user) sub, the prefix of one sub-keyspace of user.
func UserKey(user string, sub Sub) []byte {
	k := make([]byte, 0, len(user)+4+16)
	k = append(k, TagUser)
	k = AppendString(k, user)
	return append(k, byte(sub))
}

// UserRoot returns 'u' esc(user): the prefix of all of a user's keys.
func UserRoot(user string) []byte {
	k := make([]byte, 0, len(user)+3)
	k = append(k, TagUser)
	return AppendString(k, user)
}

// PrefixEnd returns the smallest key greater than every key with prefix p,
// or nil when there is none (p is all 0xFF).
func PrefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// Decoder reads components back out of a key, in the order they were
// appended. The first malformed component sets Err and every later read
// returns a zero value.
type Decoder struct {
	b   []byte
	Err error
}

// NewDecoder returns a decoder over b.
func NewDecoder(b []byte) *Decoder { return &Decoder{b: b} }

// Rest returns the bytes not yet decoded.
func (d *Decoder) Rest() []byte { return d.b }

func (d *Decoder) fail(what string) {
	if d.Err == nil {
		d.Err = fmt.Errorf("kv: malformed key: %s", what)
	}
	d.b = nil
}

// Byte reads one raw byte (a tag).
func (d *Decoder) Byte() byte {
	if d.Err != nil || len(d.b) < 1 {
		d.fail("short tag")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// Bytes reads one escaped component.
func (d *Decoder) Bytes() []byte {
	out, ok := d.appendComponent(nil)
	if !ok {
		return nil
	}
	if out == nil {
		out = []byte{}
	}
	return out
}

// AppendBytes reads one escaped component and appends it to dst, so that
// a loop decoding many keys reuses one buffer; on a malformed component
// it returns dst unchanged and sets Err.
func (d *Decoder) AppendBytes(dst []byte) []byte {
	out, ok := d.appendComponent(dst)
	if !ok {
		return dst
	}
	return out
}

func (d *Decoder) appendComponent(out []byte) ([]byte, bool) {
	if d.Err != nil {
		return nil, false
	}
	for i := 0; i < len(d.b); i++ {
		c := d.b[i]
		if c != escByte {
			out = append(out, c)
			continue
		}
		if i+1 >= len(d.b) {
			d.fail("dangling escape")
			return nil, false
		}
		switch d.b[i+1] {
		case escEscape:
			out = append(out, escByte)
			i++
		case escTerm:
			d.b = d.b[i+2:]
			return out, true
		default:
			d.fail("bad escape")
			return nil, false
		}
	}
	d.fail("unterminated component")
	return nil, false
}

// String reads one escaped component as a string.
func (d *Decoder) String() string { return string(d.Bytes()) }

// Uint64 reads 8 big-endian bytes.
func (d *Decoder) Uint64() uint64 {
	if d.Err != nil || len(d.b) < 8 {
		d.fail("short uint64")
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

// Uint32 reads 4 big-endian bytes.
func (d *Decoder) Uint32() uint32 {
	if d.Err != nil || len(d.b) < 4 {
		d.fail("short uint32")
		return 0
	}
	v := binary.BigEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

// Int64 reads a value written by AppendInt64.
func (d *Decoder) Int64() int64 { return int64(d.Uint64() ^ (1 << 63)) }

// Time reads a value written by AppendTime.
func (d *Decoder) Time() time.Time {
	n := d.Int64()
	if d.Err != nil || n == math.MaxInt64 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
