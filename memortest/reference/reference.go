// Package reference is the reference in-memory backend of memortest: a
// small bitemporal fact memory with a rule-based English extractor that
// passes every built-in case. It shows that the suite is passable, gives
// backend authors something to diff against, and doubles (through
// [Options]) as the deliberately broken backends the suite is tested with.
//
// It understands only the sentence shapes the cases use ("I live in X",
// "I moved to X", "My brother Alex lives in X", "I no longer play the X",
// "I think I might move to X" …) and questions about the predicates they
// produce. Facts are resolved the way memor's design fixes it: one-valued
// predicates keep the value with the latest valid-from (late history stays
// in the past), two values for the same instant are contested and served as
// neither, a hedged claim does not replace a confident one, ends close a
// value, contexts (work / home) coexist. "Now" is the end of the known
// timeline, so results do not depend on the wall clock.
package reference

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/memor-db/memor/memortest"
)

// ErrEmpty reports an Add with no text.
var ErrEmpty = errors.New("reference: empty text")

// Options configure a Memory. The zero value is the correct reference.
type Options struct {
	// KeepStale turns the memory into the broken "stale" backend: it never
	// supersedes, ends or contests anything and ignores time travel, so it
	// serves every value ever said, newest first.
	KeepStale bool
	// SharedUsers turns the memory into the broken "leaky" backend: every
	// user ID reads and writes one shared memory.
	SharedUsers bool
}

// Memory is the reference backend. It implements [memortest.Backend] and
// [memortest.Stater]. It is safe for concurrent use.
type Memory struct {
	opts  Options
	mu    sync.Mutex
	users map[string]*userMem
}

type userMem struct {
	ops     []op
	persons map[string]bool
}

// New returns an empty Memory.
func New(opts Options) *Memory {
	return &Memory{opts: opts, users: map[string]*userMem{}}
}

var (
	_ memortest.Backend = (*Memory)(nil)
	_ memortest.Stater  = (*Memory)(nil)
)

func (m *Memory) key(user string) string {
	if m.opts.SharedUsers {
		return ""
	}
	return user
}

// Add extracts facts from text said at at and records them.
func (m *Memory) Add(ctx context.Context, user, text string, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if strings.TrimSpace(text) == "" {
		return ErrEmpty
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.users[m.key(user)]
	if u == nil {
		u = &userMem{persons: map[string]bool{}}
		m.users[m.key(user)] = u
	}
	u.ops = append(u.ops, extract(text, at.UTC(), u.persons)...)
	return nil
}

// Reset forgets user.
func (m *Memory) Reset(ctx context.Context, user string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.users, m.key(user))
	return nil
}

// fact is a value in force at some instant.
type fact struct {
	subject, predicate, object, context string
	from                                time.Time
}

func (f fact) String() string {
	s := f.subject + " " + f.predicate + " " + f.object
	if f.context != "" {
		s += " [" + f.context + "]"
	}
	return s
}

// Current returns the facts in force at the end of user's timeline.
func (m *Memory) Current(ctx context.Context, user string) ([]memortest.Triple, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []memortest.Triple
	for _, f := range m.state(m.users[m.key(user)], time.Time{}) {
		out = append(out, memortest.Triple{Subject: f.subject, Predicate: f.predicate, Object: f.object})
	}
	return out, nil
}

// Query answers q with the facts it asks about, rendered as
// "subject predicate object [context]", newest first, at most k.
func (m *Memory) Query(ctx context.Context, user, q string, k int) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if k <= 0 {
		return nil, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.users[m.key(user)]
	if u == nil {
		return nil, nil
	}
	qs := parseQuestion(q, u.persons)
	validAt := qs.at
	if m.opts.KeepStale {
		validAt = time.Time{}
	}
	facts := m.state(u, validAt)
	subjects := qs.subjects
	if qs.relation != "" {
		subjects = nil
		for _, f := range facts {
			if f.subject == userSubject && f.predicate == qs.relation &&
				(qs.name == "" || strings.EqualFold(f.object, qs.name)) {
				subjects = append(subjects, f.object)
			}
		}
	}
	var out []fact
	for _, f := range facts {
		if !slices.Contains(subjects, f.subject) {
			continue
		}
		if qs.context != "" && f.context != "" && f.context != qs.context {
			continue
		}
		switch {
		case slices.Contains(qs.predicates, f.predicate):
		case len(qs.predicates) == 0 && f.subject != userSubject && !isRelation(f.predicate):
			// A question about a person that names no predicate ("how is
			// my brother doing?") is answered with what is known of them.
		default:
			continue
		}
		out = append(out, f)
	}
	if qs.wantsRelation && qs.relation != "" {
		for _, f := range facts {
			if f.subject == userSubject && f.predicate == qs.relation {
				out = append(out, f)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b fact) int { return b.from.Compare(a.from) })
	res := make([]string, 0, min(k, len(out)))
	for _, f := range out {
		if len(res) == k {
			break
		}
		res = append(res, f.String())
	}
	return res, nil
}

func isRelation(pred string) bool {
	return slices.Contains(strings.Split(relationAlt, "|"), pred)
}

// one reports whether pred holds at most one value at a time.
func one(pred string) bool {
	switch pred {
	case "lives_in", "works_at", "job_title", "studies_at", "marital_status", "diet", "uses_device":
		return true
	}
	return strings.HasPrefix(pred, "favorite_")
}

// state folds the user's ops into the facts valid at validAt (zero: the end
// of the timeline). The fold depends on the set of ops, not their order.
func (m *Memory) state(u *userMem, validAt time.Time) []fact {
	if u == nil {
		return nil
	}
	if m.opts.KeepStale {
		return m.everything(u)
	}
	type slotKey struct{ subject, predicate, context string }
	slots := map[slotKey][]op{}
	var order []slotKey
	ends := map[[2]string][]op{} // (subject, predicate) → ends of any context
	for _, o := range u.ops {
		if !validAt.IsZero() && o.from.After(validAt) {
			continue
		}
		if o.end {
			k := [2]string{o.subject, o.predicate}
			ends[k] = append(ends[k], o)
			continue
		}
		k := slotKey{o.subject, o.predicate, o.context}
		if _, ok := slots[k]; !ok {
			order = append(order, k)
		}
		slots[k] = append(slots[k], o)
	}
	var out []fact
	for _, k := range order {
		var evs []op
		for _, e := range ends[[2]string{k.subject, k.predicate}] {
			if e.context == "" || e.context == k.context {
				evs = append(evs, e)
			}
		}
		evs = append(evs, slots[k]...)
		// Ends sort before assertions of the same instant, so that "I quit
		// my job. I work at Acme now." leaves Acme standing.
		slices.SortStableFunc(evs, func(a, b op) int {
			if c := a.from.Compare(b.from); c != 0 {
				return c
			}
			if a.end != b.end {
				if a.end {
					return -1
				}
				return 1
			}
			return cmp.Compare(normalize(a.object), normalize(b.object))
		})
		if one(k.predicate) {
			if f, ok := foldOne(evs); ok {
				out = append(out, f)
			}
		} else {
			out = append(out, foldMany(evs)...)
		}
	}
	return out
}

// foldOne applies supersede, dup, contest and end to a one-valued slot.
func foldOne(evs []op) (fact, bool) {
	var cur *op
	for i := 0; i < len(evs); {
		j := i
		for j < len(evs) && evs[j].from.Equal(evs[i].from) {
			j++
		}
		group := evs[i:j]
		i = j
		var claims []op
		for _, e := range group {
			if e.end {
				if cur != nil && matches(cur.object, e.object) {
					cur = nil
				}
				continue
			}
			if n := len(claims); n > 0 && normalize(claims[n-1].object) == normalize(e.object) {
				claims[n-1].conf = max(claims[n-1].conf, e.conf)
				continue
			}
			claims = append(claims, e)
		}
		switch {
		case len(claims) == 0:
		case len(claims) > 1:
			cur = nil // contest: the same instant, different values
		case cur != nil && normalize(cur.object) == normalize(claims[0].object):
			cur.conf = max(cur.conf, claims[0].conf) // dup: reinforce
		case cur != nil && claims[0].conf < cur.conf-0.1:
			// contest: too unsure to replace the value in force
		default:
			c := claims[0]
			cur = &c
		}
	}
	if cur == nil {
		return fact{}, false
	}
	return fact{cur.subject, cur.predicate, cur.object, cur.context, cur.from}, true
}

// foldMany applies add, dup and end to a many-valued slot.
func foldMany(evs []op) []fact {
	type val struct {
		o  op
		on bool
	}
	vals := map[string]*val{}
	var order []string
	for _, e := range evs {
		if e.end {
			for _, v := range vals {
				if v.on && matches(v.o.object, e.object) {
					v.on = false
				}
			}
			continue
		}
		n := normalize(e.object)
		v := vals[n]
		if v == nil {
			v = &val{}
			vals[n] = v
			order = append(order, n)
		}
		if !v.on {
			v.o, v.on = e, true
		}
	}
	var out []fact
	for _, n := range order {
		if v := vals[n]; v.on {
			out = append(out, fact{v.o.subject, v.o.predicate, v.o.object, v.o.context, v.o.from})
		}
	}
	return out
}

// everything is the broken KeepStale state: every distinct value ever
// asserted, ends ignored.
func (m *Memory) everything(u *userMem) []fact {
	seen := map[string]bool{}
	var out []fact
	for _, o := range u.ops {
		f := fact{o.subject, o.predicate, o.object, o.context, o.from}
		if o.end || seen[f.String()] {
			continue
		}
		seen[f.String()] = true
		out = append(out, f)
	}
	return out
}

// matches reports whether an end naming obj closes value: an empty obj
// ends everything, otherwise the words of obj must occur in value ("the
// dog" ends "dog named Max").
func matches(value, obj string) bool {
	if obj == "" {
		return true
	}
	return memortest.Contains(value, obj)
}

func normalize(s string) string { return memortest.Normalize(s) }

// String describes the memory's configuration, for reports.
func (m *Memory) String() string {
	return fmt.Sprintf("reference(keepStale=%v, sharedUsers=%v)", m.opts.KeepStale, m.opts.SharedUsers)
}
