package memor

import (
	"cmp"
	"slices"
	"strings"

	"github.com/memor-db/memor/internal/resolve"
)

// freshWrite is what a new user's write holds in memory. on: the user
// had nothing stored when the write began (see Batch.SetLocal), so every
// claim of the user is one this write made: mem holds them by slot, and a
// slot not yet resolved in this write has no live version. Resolution
// then reads memory, not the batch (see freshWrite.claims).
type freshWrite struct {
	on    bool
	mem   map[string]*memSlot
	slots []memSlot                   // where mem's slots are allocated (see newSlot)
	recs  []claimRec                  // the claims in mem, in the order they came
	next  []int32                     // the next claim of a claim's slot in recs, or -1
	buf   []claimRec                  // scratch for a slot's claims (see freshWrite.claims)
	ends  bool                        // mem holds an end
	live  map[ctxGroup]map[string]int // live values written, by context (see otherContexts)
	ids   map[[idLen]byte]bool        // IDs of the claims in mem
}

// memSlot is what a new user's write holds in memory for one slot (see
// freshWrite): its claims, linked through recs in the order they came, and
// whether the slot was resolved already (from then on it resolves through
// the batch, see resolveSub). Claims are kept in one slice for the write
// rather than one per slot: a slot of an import mostly gets one claim,
// some (a One predicate's) many.
type memSlot struct {
	head, tail, n int32
	resolved      bool
}

// start readies f for a first write of about n claims.
func (f *freshWrite) start(n int) {
	f.mem, f.ids = make(map[string]*memSlot, n), make(map[[idLen]byte]bool, n)
	f.slots = nil
	f.recs, f.next = make([]claimRec, 0, n), make([]int32, 0, n)
}

// slot returns the memory of slot key sk, made (for about hint slots) if
// new.
func (f *freshWrite) slot(sk string, hint int) *memSlot {
	ms := f.mem[sk]
	if ms == nil {
		ms = f.newSlot(hint)
		f.mem[sk] = ms
	}
	return ms
}

// newSlot returns a new empty slot for mem. Slots are allocated in chunks
// of about hint (a slot is only ever used through its pointer, so a chunk
// that fills up is left to the slots it holds).
func (f *freshWrite) newSlot(hint int) *memSlot {
	if len(f.slots) == cap(f.slots) {
		f.slots = make([]memSlot, 0, max(hint, 16))
	}
	f.slots = f.slots[:len(f.slots)+1]
	return &f.slots[len(f.slots)-1]
}

// add appends c, with ID id, to the claims of m.
func (f *freshWrite) add(m *memSlot, c *claimRec, id [idLen]byte) {
	i := int32(len(f.recs))
	f.recs = append(f.recs, *c)
	f.next = append(f.next, -1)
	if m.n == 0 {
		m.head = i
	} else {
		f.next[m.tail] = i
	}
	m.tail = i
	m.n++
	f.ids[id] = true
	f.ends = f.ends || resolve.Kind(c.Kind) == resolve.End
}

// appendSlot appends the claims of m, in the order they came, to out.
func (f *freshWrite) appendSlot(out []claimRec, m *memSlot) []claimRec {
	for i, k := m.head, int32(0); k < m.n; i, k = f.next[i], k+1 {
		out = append(out, f.recs[i])
	}
	return out
}

// countLive adds d to the live values this write holds in g's context
// ctxKey (kept for a new user's write, see otherContexts).
func (f *freshWrite) countLive(g ctxGroup, ctxKey string, d int) {
	if f.live == nil {
		f.live = map[ctxGroup]map[string]int{}
	}
	m := f.live[g]
	if m == nil {
		m = map[string]int{}
		f.live[g] = m
	}
	m[ctxKey] += d
}

// claims is what slotClaims reads for slot, in the same order, in a write
// of a new user: the claims this write made under the slot (ms) in key
// order (valid time, then ID), then for an object of a Many predicate the
// ends without object, in key order. The result is scratch, valid until
// the next call; a slot of one claim is returned in place. The caller may
// change it: the slot is then resolved, and its claims in memory are not
// read again (an end's, the only ones read for another slot, are never
// changed).
func (f *freshWrite) claims(ms *memSlot, slot []byte) []claimRec {
	var out []claimRec
	switch {
	case ms.n == 1:
		out = f.recs[ms.head : ms.head+1 : ms.head+1]
	case ms.n > 1:
		out = sortedClaims(f.appendSlot(slices.Grow(f.buf[:0], int(ms.n)), ms))
		f.buf = out
	}
	if !f.ends {
		return out // no end in this write: no slot has ends to add
	}
	subj, pred, ctxKey, obj, many, err := slotParts(slot)
	if err == nil && many && obj != "" {
		var ends []claimRec
		if es := f.mem[string(slotKey(subj, pred, ctxKey, false, ""))]; es != nil {
			for _, c := range f.appendSlot(nil, es) {
				if resolve.Kind(c.Kind) == resolve.End {
					ends = append(ends, c)
				}
			}
		}
		out = append(out, sortedClaims(ends)...)
		if ms.n > 1 {
			f.buf = out
		}
	}
	return out
}

func sortedClaims(cs []claimRec) []claimRec {
	slices.SortFunc(cs, func(a, b claimRec) int {
		if c := cmp.Compare(a.ValidFrom, b.ValidFrom); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return cs
}
