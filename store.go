package memor

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/memor-db/memor/internal/instant"
	"github.com/memor-db/memor/kv"
)

// The keys built here (slot, claim and version suffixes, sequence keys)
// and the records they hold are documented byte by byte in layout.go.

const idLen = 16

// factID is hash(user, subject, predicate, object, context, ValidFrom) over
// normalised, length-prefixed fields (DESIGN §3 "Fact identity").
func factID(user, subjKey, pred, objKey, ctxKey string, vf int64) [idLen]byte {
	return hashID(user, "", subjKey, pred, objKey, ctxKey, vf)
}

// endID names an end claim; ends live in the claim keyspace beside the
// assertions they close. Its first field is user+"\x00end".
func endID(user, subjKey, pred, objKey, ctxKey string, at int64) [idLen]byte {
	return hashID(user, "\x00end", subjKey, pred, objKey, ctxKey, at)
}

// hashID is the ID over the fields user+userSuffix, subjKey, pred, objKey,
// ctxKey (each its length as 8 bytes big-endian, then its bytes) and vf (8
// bytes big-endian). The hashed bytes are laid out in a stack buffer and
// hashed at once: a sha256.New per fact costs an allocation and the
// hash.Hash calls, on the path every imported fact takes.
func hashID(user, userSuffix, subjKey, pred, objKey, ctxKey string, vf int64) [idLen]byte {
	var buf [256]byte
	b := binary.BigEndian.AppendUint64(buf[:0], uint64(len(user)+len(userSuffix)))
	b = append(append(b, user...), userSuffix...)
	for _, s := range [...]string{subjKey, pred, objKey, ctxKey} {
		b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.BigEndian.AppendUint64(b, uint64(vf))
	sum := sha256.Sum256(b)
	return [idLen]byte(sum[:idLen])
}

func parseID(s string) ([idLen]byte, error) {
	var id [idLen]byte
	// Decoded in place: hex.DecodeString would allocate, and every new
	// version's key decodes its fact's ID.
	if len(s) != 2*idLen || !decodeHexID(&id, s) {
		return id, fmt.Errorf("%w: fact ID %q", ErrNotFound, s)
	}
	return id, nil
}

// decodeHexID decodes the 2*idLen hex digits of s (either case, as
// hex.Decode accepts) into id and reports whether s was valid. s must
// hold 2*idLen bytes.
func decodeHexID(id *[idLen]byte, s string) bool {
	s = s[:2*idLen]
	bad := byte(0)
	for i := range id {
		hi, lo := unhex[s[2*i]], unhex[s[2*i+1]]
		bad |= hi | lo
		id[i] = hi<<4 | lo&0x0f
	}
	return bad&0xf0 == 0
}

// unhex maps a hex digit to its value and anything else to 0xff.
var unhex = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i, c := range "0123456789abcdef" {
		t[c] = byte(i)
	}
	for i, c := range "ABCDEF" {
		t[c] = byte(10 + i)
	}
	return t
}()

// slotKey is the key of a resolution slot: esc(subject) esc(predicate)
// esc(context), and for a Many predicate also esc(object). Values of a Many
// predicate never interact except through an end without object, so each
// object is its own slot: resolving "likes X" never reads the user's other
// likes. Ends without object of a Many predicate live in the sub-slot with
// the empty object and apply to every object sub-slot.
func slotKey(subjKey, pred, ctxKey string, one bool, objKey string) []byte {
	return appendSlotKey(nil, subjKey, pred, ctxKey, one, objKey)
}

// appendSlotKey appends slotKey(subjKey, pred, ctxKey, one, objKey) to k.
func appendSlotKey(k []byte, subjKey, pred, ctxKey string, one bool, objKey string) []byte {
	k = kv.AppendString(k, subjKey)
	k = kv.AppendString(k, pred)
	k = kv.AppendString(k, ctxKey)
	if !one {
		k = kv.AppendString(k, objKey)
	}
	return k
}

// slotParts splits a slot key; obj is meaningful only when many is set.
func slotParts(slot []byte) (subj, pred, ctxKey, obj string, many bool, err error) {
	d := kv.NewDecoder(slot)
	subj, pred, ctxKey = d.String(), d.String(), d.String()
	if d.Err == nil && len(d.Rest()) > 0 {
		obj, many = d.String(), true
	}
	if d.Err == nil && len(d.Rest()) > 0 {
		d.Err = errors.New("trailing bytes")
	}
	if d.Err != nil {
		return "", "", "", "", false, fmt.Errorf("%w: slot key: %v", ErrCorrupt, d.Err)
	}
	return subj, pred, ctxKey, obj, many, nil
}

// slotPrefix is esc(subject) esc(predicate) esc(context): every sub-slot of
// a Many predicate in one context shares it.
func slotPrefix(subjKey, pred, ctxKey string) []byte {
	return slotKey(subjKey, pred, ctxKey, true, "")
}

func userKey(user string, sub kv.Sub, suffix ...[]byte) []byte {
	k := kv.UserKey(user, sub)
	for _, s := range suffix {
		k = append(k, s...)
	}
	return k
}

// claimSuffix is slot vf id.
func claimSuffix(slot []byte, vf int64, id [idLen]byte) []byte {
	return appendClaimSuffix(make([]byte, 0, len(slot)+8+idLen), slot, vf, id)
}

// appendClaimSuffix appends claimSuffix(slot, vf, id) to k.
func appendClaimSuffix(k, slot []byte, vf int64, id [idLen]byte) []byte {
	k = append(k, slot...)
	k = kv.AppendInt64(k, vf)
	return append(k, id[:]...)
}

func versionSuffix(claimSuf []byte, rec int64) []byte {
	return kv.AppendInt64(append([]byte(nil), claimSuf...), rec)
}

func seqKey(user string, sub kv.Sub, seq uint64) []byte {
	return kv.AppendUint64(kv.UserKey(user, sub), seq)
}

// registryKey is the user's entry in the registry that stores of formats 1
// and 2 kept; Forget still deletes it from such stores.
func registryKey(user string) []byte {
	return kv.AppendString([]byte{kv.TagUserList}, user)
}

// userMeta holds a user's counters.
type userMeta struct {
	Seq     uint64 `json:"seq"`     // last episode sequence number
	Applied uint64 `json:"applied"` // last episode applied
	Doc     uint32 `json:"doc"`     // last index document ID
	Log     uint64 `json:"log"`     // last resolution-log sequence number
	Txn     int64  `json:"txn"`     // last transaction time
}

// empty reports whether m is a user's with nothing stored.
func (m userMeta) empty() bool { return m.Seq == 0 && m.Doc == 0 && m.Log == 0 }

func loadMeta(r kv.Reader, user string) (userMeta, error) {
	var m userMeta
	v, err := r.Get(kv.UserKey(user, kv.SubMeta))
	if errors.Is(err, kv.ErrNotFound) {
		return m, nil
	}
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(v, &m); err != nil {
		return m, fmt.Errorf("%w: user meta: %v", ErrCorrupt, err)
	}
	return m, nil
}

// claimRec is a stored claim: one accepted assertion or end.
type claimRec struct {
	ID         string  `json:"id"`
	Kind       uint8   `json:"k"`
	Subject    string  `json:"s"`
	Predicate  string  `json:"p"`
	Object     string  `json:"o,omitempty"`
	Context    string  `json:"c,omitempty"`
	ValidFrom  int64   `json:"vf"`
	Confidence float64 `json:"cf"`
	Quote      string  `json:"q,omitempty"`
	Episode    uint64  `json:"ep"`
	Recorded   int64   `json:"rec"`
	Retracted  bool    `json:"rt,omitempty"`
	// Accepted is the sequence number of the accept episode that made
	// the user's choice of this contested claim (0: none; see
	// Engine.Accept).
	Accepted uint64 `json:"ac,omitempty"`
	// Rule is the arrival decision (late, coexist, judge …) that labels
	// the claim's first version.
	Rule Rule `json:"r,omitempty"`
}

func decodeJSON[T any](v []byte, what string) (T, error) {
	var x T
	if err := json.Unmarshal(v, &x); err != nil {
		return x, fmt.Errorf("%w: %s: %v", ErrCorrupt, what, err)
	}
	return x, nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own plain structs are marshalled here.
		panic(fmt.Sprintf("memor: marshal %T: %v", v, err))
	}
	return b
}

// nanos is t in Unix nanoseconds, instant.None for the zero time (an open
// ValidTo or ExpiredAt, an unset time); fromNanos inverts it. 0 ns is the
// Unix epoch, an instant like any other.
func nanos(t time.Time) int64 { return instant.Nanos(t) }

func fromNanos(n int64) time.Time { return instant.FromNanos(n) }

// checkTime refuses an instant outside [1678-01-01, 2262-01-01) with
// ErrInvalidTime (see internal/instant).
func checkTime(t time.Time, what string) error { return instant.Check(t, what) }
