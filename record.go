package memor

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/memor-db/memor/extract"
	"github.com/memor-db/memor/internal/invariants"
)

// Records (claims, fact versions, decisions, episodes) are stored in a
// compact binary form whose bytes, field by field, layout.go documents.
// Format-1 stores hold JSON records, which always start with '{'; both are
// read, only the binary form is written. The binary form is a third of the
// bytes and a tenth of the CPU, which bulk ingestion spends mostly on
// writing and compacting records.
//
// A record with fields added since (a fact's Episodes, a decision's Reason,
// Reinforces and Closed) starts with recExtended instead, and those fields
// follow the others. A record without them is written as before, so that
// records written before still decode and a fact said once costs no byte
// more; the distinct marker keeps a truncated extended record from
// reading as a shorter valid one.
const (
	recBinary   byte = 0x02
	recExtended byte = 0x03
)

var errShortRecord = errors.New("record truncated")

// recWriter appends a record's fields to a buffer.
type recWriter struct{ b []byte }

func (w *recWriter) byte(x byte)      { w.b = append(w.b, x) }
func (w *recWriter) uvarint(x uint64) { w.b = binary.AppendUvarint(w.b, x) }
func (w *recWriter) varint(x int64)   { w.b = binary.AppendVarint(w.b, x) }

// time writes 0 for the zero time and shifts instants at or after the
// epoch up by one, so that 1970-01-01T00:00:00Z is not read back as zero.
func (w *recWriter) time(t time.Time) {
	if t.IsZero() {
		w.varint(0)
		return
	}
	n := t.UnixNano()
	if n >= 0 {
		n++
	}
	w.varint(n)
}
func (w *recWriter) float(x float64) {
	w.b = binary.LittleEndian.AppendUint64(w.b, math.Float64bits(x))
}

func (w *recWriter) string(s string) {
	w.uvarint(uint64(len(s)))
	w.b = append(w.b, s...)
}

// id appends a hex fact ID as 16 raw bytes; an ID that is not one (never
// produced by the engine) is kept as a string after a 0 marker.
func (w *recWriter) id(s string) {
	if len(s) == 2*idLen {
		var raw [idLen]byte
		if decodeHexID(&raw, s) {
			w.byte(1)
			w.b = append(w.b, raw[:]...)
			return
		}
	}
	w.byte(0)
	w.string(s)
}

// recReader decodes fields in the order a recWriter wrote them; the first
// error sticks and later reads return zero values.
type recReader struct {
	b   []byte
	err error
}

func (r *recReader) fail() {
	if r.err == nil {
		r.err = errShortRecord
	}
	r.b = nil
}

func (r *recReader) byte() byte {
	if len(r.b) < 1 {
		r.fail()
		return 0
	}
	x := r.b[0]
	r.b = r.b[1:]
	return x
}

func (r *recReader) uvarint() uint64 {
	x, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return x
}

func (r *recReader) varint() int64 {
	x, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return x
}

func (r *recReader) time() time.Time {
	n := r.varint()
	switch {
	case n == 0:
		return time.Time{}
	case n > 0:
		n--
	}
	return time.Unix(0, n).UTC()
}

func (r *recReader) float() float64 {
	if len(r.b) < 8 {
		r.fail()
		return 0
	}
	x := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return x
}

func (r *recReader) string() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail()
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *recReader) id() string {
	if r.byte() == 0 {
		return r.string()
	}
	if len(r.b) < idLen {
		r.fail()
		return ""
	}
	s := hex.EncodeToString(r.b[:idLen])
	r.b = r.b[idLen:]
	return s
}

// confidence reads a confidence, which must lie in [0, 1] (NaN does not).
func (r *recReader) confidence() float64 {
	x := r.float()
	if !(x >= 0 && x <= 1) {
		r.invalid("confidence %v", x)
	}
	return x
}

func (r *recReader) invalid(format string, a ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, a...)
	}
	r.b = nil
}

// done reports the sticky error, or trailing bytes, as corruption.
func (r *recReader) done(what string) error {
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%d trailing bytes", len(r.b))
	}
	if r.err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, what, r.err)
	}
	return nil
}

// binaryRecord reports whether v is a binary record, stripping the marker;
// otherwise v is a format-1 JSON record.
func binaryRecord(v []byte) ([]byte, bool) {
	if len(v) > 0 && v[0] == recBinary {
		return v[1:], true
	}
	return v, false
}

// binaryRecordExt is binaryRecord for the kinds that have extended
// records: ext reports the marker recExtended.
func binaryRecordExt(v []byte) (_ []byte, ok, ext bool) {
	if len(v) > 0 && v[0] == recExtended {
		return v[1:], true, true
	}
	v, ok = binaryRecord(v)
	return v, ok, false
}

// Claim flags.
const (
	claimRetracted byte = 1 << iota
	claimFullConfidence
	claimAccepted // Accepted follows the rule (format 7)
)

func appendClaim(b []byte, c *claimRec) []byte {
	w := recWriter{append(b, recBinary)}
	w.id(c.ID)
	w.byte(c.Kind)
	flags := byte(0)
	if c.Retracted {
		flags |= claimRetracted
	}
	if c.Confidence == 1 {
		flags |= claimFullConfidence
	}
	if c.Accepted > 0 {
		flags |= claimAccepted
	}
	w.byte(flags)
	w.string(c.Subject)
	w.string(c.Predicate)
	w.string(c.Object)
	w.string(c.Context)
	w.varint(c.ValidFrom)
	if flags&claimFullConfidence == 0 {
		w.float(c.Confidence)
	}
	w.string(c.Quote)
	w.uvarint(c.Episode)
	w.varint(c.Recorded)
	w.string(string(c.Rule))
	if c.Accepted > 0 {
		w.uvarint(c.Accepted)
	}
	return w.b
}

func decodeClaim(v []byte) (claimRec, error) {
	v, ok := binaryRecord(v)
	if !ok {
		return decodeJSON[claimRec](v, "claim")
	}
	r := recReader{b: v}
	var c claimRec
	c.ID = r.id()
	c.Kind = r.byte()
	flags := r.byte()
	if flags&^(claimRetracted|claimFullConfidence|claimAccepted) != 0 {
		r.invalid("claim flags %#x", flags)
	}
	c.Retracted = flags&claimRetracted != 0
	c.Subject, c.Predicate, c.Object, c.Context = r.string(), r.string(), r.string(), r.string()
	c.ValidFrom = r.varint()
	c.Confidence = 1
	if flags&claimFullConfidence == 0 {
		c.Confidence = r.confidence()
	}
	c.Quote = r.string()
	c.Episode = r.uvarint()
	c.Recorded = r.varint()
	c.Rule = Rule(r.string())
	if flags&claimAccepted != 0 {
		if c.Accepted = r.uvarint(); c.Accepted == 0 && r.err == nil {
			r.invalid("accepted by episode 0")
		}
	}
	return c, r.done("claim")
}

// onlyEpisode reports whether a fact's Episodes say no more than its
// Episode: nothing to store beyond it.
func onlyEpisode(f *Fact) bool {
	return len(f.Episodes) == 0 || (len(f.Episodes) == 1 && f.Episodes[0] == f.Episode)
}

func appendFact(b []byte, f *Fact) []byte {
	ext := !onlyEpisode(f)
	marker := recBinary
	if ext {
		marker = recExtended
	}
	w := recWriter{append(b, marker)}
	w.id(f.ID)
	w.string(f.Subject)
	w.string(f.Predicate)
	w.string(f.Object)
	w.string(f.Context)
	w.time(f.ValidFrom)
	w.time(f.ValidTo)
	w.time(f.RecordedAt)
	w.time(f.ExpiredAt)
	w.byte(byte(f.Status))
	w.float(f.Confidence)
	w.uvarint(uint64(f.Reinforced))
	w.time(f.LastSeen)
	w.uvarint(f.Episode)
	w.string(f.Quote)
	w.string(string(f.Rule))
	w.uvarint(uint64(f.Doc))
	if ext {
		w.uvarint(uint64(len(f.Episodes)))
		for _, ep := range f.Episodes {
			w.uvarint(ep)
		}
	}
	return w.b
}

func decodeFact(user string, v []byte) (Fact, error) {
	v, ok, ext := binaryRecordExt(v)
	if !ok {
		sf, err := decodeJSON[storedFact](v, "fact version")
		sf.Fact.User, sf.Fact.Doc = user, sf.DocID
		if len(sf.Episodes) == 0 {
			sf.Episodes = []uint64{sf.Episode}
		}
		if err == nil && (sf.Status < Active || sf.Status > Retracted || !(sf.Confidence >= 0 && sf.Confidence <= 1)) {
			err = fmt.Errorf("%w: fact version: status %d, confidence %v", ErrCorrupt, sf.Status, sf.Confidence)
		}
		return sf.Fact, err
	}
	r := recReader{b: v}
	f := Fact{User: user}
	f.ID = r.id()
	f.Subject, f.Predicate, f.Object, f.Context = r.string(), r.string(), r.string(), r.string()
	f.ValidFrom, f.ValidTo, f.RecordedAt, f.ExpiredAt = r.time(), r.time(), r.time(), r.time()
	f.Status = Status(r.byte())
	if f.Status < Active || f.Status > Retracted {
		r.invalid("status %d", f.Status)
	}
	f.Confidence = r.confidence()
	f.Reinforced = int(r.uvarint())
	f.LastSeen = r.time()
	f.Episode = r.uvarint()
	f.Quote = r.string()
	f.Rule = Rule(r.string())
	doc := r.uvarint()
	if doc > math.MaxUint32 {
		r.fail()
	}
	f.Doc = uint32(doc)
	if !ext {
		f.Episodes = []uint64{f.Episode}
	} else if n := r.uvarint(); n == 0 {
		r.invalid("no episodes")
	} else if countFits(n, &r, 1) {
		f.Episodes = make([]uint64, n)
		for i := range f.Episodes {
			f.Episodes[i] = r.uvarint()
		}
	}
	return f, r.done("fact version")
}

// storedFact is a format-1 (JSON) version: the Fact plus its index
// document.
type storedFact struct {
	Fact
	DocID uint32 `json:"doc"`
}

// Decision extension flags.
const (
	decReinforces byte = 1 << iota
	decClosed
)

func appendDecision(b []byte, d *Decision) []byte {
	ext := d.Reason != ReasonNone || d.Reinforces != "" || len(d.Closed) > 0
	marker := recBinary
	if ext {
		marker = recExtended
	}
	w := recWriter{append(b, marker)}
	w.uvarint(d.Seq)
	w.string(string(d.Rule))
	w.id(d.FactID)
	w.string(d.Subject)
	w.string(d.Predicate)
	w.string(d.Object)
	w.string(d.Context)
	w.uvarint(d.Episode)
	w.time(d.RecordedAt)
	w.string(d.Detail)
	if ext {
		w.byte(byte(d.Reason))
		flags := byte(0)
		if d.Reinforces != "" {
			flags |= decReinforces
		}
		if len(d.Closed) > 0 {
			flags |= decClosed
		}
		w.byte(flags)
		if d.Reinforces != "" {
			w.id(d.Reinforces)
		}
		if len(d.Closed) > 0 {
			w.uvarint(uint64(len(d.Closed)))
			for _, id := range d.Closed {
				w.id(id)
			}
		}
	}
	return w.b
}

func decodeDecision(v []byte) (Decision, error) {
	v, ok, ext := binaryRecordExt(v)
	if !ok {
		return decodeJSON[Decision](v, "decision")
	}
	r := recReader{b: v}
	var d Decision
	d.Seq = r.uvarint()
	d.Rule = Rule(r.string())
	d.FactID = r.id()
	d.Subject, d.Predicate, d.Object, d.Context = r.string(), r.string(), r.string(), r.string()
	d.Episode = r.uvarint()
	d.RecordedAt = r.time()
	d.Detail = r.string()
	if ext {
		d.Reason = Reason(r.byte())
		if d.Reason >= numReasons {
			r.invalid("reason %d", d.Reason)
		}
		flags := r.byte()
		if flags&^(decReinforces|decClosed) != 0 {
			r.invalid("decision flags %#x", flags)
		}
		if flags&decReinforces != 0 {
			d.Reinforces = r.id()
		}
		if flags&decClosed != 0 {
			if n := r.uvarint(); n > 0 && countFits(n, &r, 2) {
				d.Closed = make([]string, n)
				for i := range d.Closed {
					d.Closed[i] = r.id()
				}
			} else {
				r.invalid("closed count %d", n)
			}
		}
	}
	return d, r.done("decision")
}

// Op flags.
const (
	opAdditive byte = 1 << iota
)

// Episode trailer flags: the byte after the ops says what follows them.
// Records written before speakers existed hold 0 or epCorrect, so they
// decode unchanged, with no speaker; a speaker is written after the
// correction (and an acceptance, format 7), so that cutting a record
// short is still corruption.
const (
	epCorrect byte = 1 << iota // a Correction follows
	epSpeaker                  // the speaker's name follows (never empty)
	epAccept                   // an Acceptance follows
	epKey                      // the idempotency key follows (never empty)
)

// appendEpisode appends ep's record. The episode log is the truth, so
// under invariants (every test) the record is decoded and encoded again
// right away: a record that does not read back as written panics here,
// not when a Rebuild replays it.
func appendEpisode(b []byte, ep *Episode) []byte {
	out := encodeEpisode(b, ep)
	if invariants.Enabled() {
		rec := out[len(b):]
		back, err := decodeEpisode(ep.User, rec)
		if err != nil {
			panic(fmt.Sprintf("memor: invariant: episode %d does not decode: %v", ep.Seq, err))
		}
		if again := encodeEpisode(nil, &back); !bytes.Equal(again, rec) {
			panic(fmt.Sprintf("memor: invariant: episode %d does not read back as written:\n%x\n%x", ep.Seq, rec, again))
		}
	}
	return out
}

func encodeEpisode(b []byte, ep *Episode) []byte {
	w := recWriter{append(b, recBinary)}
	w.uvarint(ep.Seq)
	w.byte(byte(ep.Kind))
	w.time(ep.At)
	w.time(ep.RecordedAt)
	w.string(ep.Text)
	w.uvarint(uint64(len(ep.Ops)))
	for i := range ep.Ops {
		op := &ep.Ops[i]
		w.byte(byte(op.Kind))
		flags := byte(0)
		if op.Additive {
			flags |= opAdditive
		}
		w.byte(flags)
		w.string(op.Subject)
		w.string(op.Predicate)
		w.string(op.Object)
		w.string(op.Context)
		w.time(op.ValidFrom)
		w.float(op.Confidence)
		w.string(op.Quote)
	}
	trailer := byte(0)
	if ep.Correct != nil {
		trailer |= epCorrect
	}
	if ep.Speaker != "" {
		trailer |= epSpeaker
	}
	if ep.Accept != nil {
		trailer |= epAccept
	}
	if ep.Key != "" {
		trailer |= epKey
	}
	w.byte(trailer)
	if ep.Correct != nil {
		w.id(ep.Correct.FactID)
		w.uvarint(uint64(len(ep.Correct.Claims)))
		for _, c := range ep.Correct.Claims {
			w.id(c)
		}
	}
	if ep.Accept != nil {
		w.id(ep.Accept.FactID)
	}
	if ep.Speaker != "" {
		w.string(ep.Speaker)
	}
	if ep.Key != "" {
		w.string(ep.Key)
	}
	return w.b
}

// countFits reports whether n items of at least minBytes each fit in what
// is left, so that a corrupt count cannot make a decoder allocate much.
func countFits(n uint64, r *recReader, minBytes int) bool {
	if n > uint64(len(r.b)/minBytes) {
		r.fail()
		return false
	}
	return true
}

func decodeEpisode(user string, v []byte) (Episode, error) {
	v, ok := binaryRecord(v)
	if !ok {
		ep, err := decodeJSON[Episode](v, "episode")
		ep.User = user
		return ep, err
	}
	r := recReader{b: v}
	ep := Episode{User: user}
	ep.Seq = r.uvarint()
	ep.Kind = EpisodeKind(r.byte())
	ep.At, ep.RecordedAt = r.time(), r.time()
	ep.Text = r.string()
	if n := r.uvarint(); n > 0 && countFits(n, &r, 17) {
		ep.Ops = make([]extract.Op, n)
		for i := range ep.Ops {
			op := &ep.Ops[i]
			op.Kind = extract.Kind(r.byte())
			op.Additive = r.byte()&opAdditive != 0
			op.Subject, op.Predicate, op.Object, op.Context = r.string(), r.string(), r.string(), r.string()
			op.ValidFrom = r.time()
			op.Confidence = r.confidence()
			op.Quote = r.string()
		}
	}
	trailer := r.byte()
	if trailer&^(epCorrect|epSpeaker|epAccept|epKey) != 0 {
		r.invalid("episode trailer %#x", trailer)
	}
	if trailer&epCorrect != 0 {
		c := &Correction{FactID: r.id()}
		if n := r.uvarint(); n > 0 && countFits(n, &r, 2) {
			c.Claims = make([]string, n)
			for i := range c.Claims {
				c.Claims[i] = r.id()
			}
		}
		ep.Correct = c
	}
	if trailer&epAccept != 0 {
		ep.Accept = &Acceptance{FactID: r.id()}
	}
	if trailer&epSpeaker != 0 {
		if ep.Speaker = r.string(); ep.Speaker == "" && r.err == nil {
			r.invalid("empty speaker")
		}
	}
	if trailer&epKey != 0 {
		if ep.Key = r.string(); ep.Key == "" && r.err == nil {
			r.invalid("empty idempotency key")
		}
	}
	return ep, r.done("episode")
}
