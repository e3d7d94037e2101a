package model

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode"
)

// ErrNotFound is returned by [Model.Correct] for a fact the model does not
// hold.
var ErrNotFound = errors.New("fuzz: no such fact in the model")

// ErrNotContested is returned by [Model.Accept] for a fact that is not
// contested.
var ErrNotContested = errors.New("fuzz: fact not contested in the model")

// ConfidenceMargin is how much less confident than the value in force a
// claim may be and still replace it (DESIGN §3, rule contest). The epsilon
// absorbs float rounding ("0.9 is not more than 0.1 below 1").
const (
	ConfidenceMargin = 0.1
	confidenceEps    = 1e-9
)

// Status is a fact version's standing in the model: the three statuses of
// DESIGN §3. The model has its own type, not the engine's, so that it
// imports nothing of memor (TestModelIsIndependent); the harness maps the
// engine's statuses onto it by name.
type Status uint8

// The statuses, as DESIGN §3 names them.
const (
	// Active: accepted; visible wherever its intervals allow.
	Active Status = iota + 1
	// Contested: stored and listed in History, never served as state.
	Contested
	// Retracted: the user said it was never true; kept for the audit.
	Retracted
)

// String is the status's name in DESIGN §3.
func (s Status) String() string {
	switch s {
	case Active:
		return "active"
	case Contested:
		return "contested"
	case Retracted:
		return "retracted"
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// Op is one operation of a transaction: an assertion, or an end when End
// is set. It mirrors what an extractor proposes (extract.Op).
type Op struct {
	End       bool
	Subject   string
	Predicate string
	// Object empty on an end closes every open value of the slot.
	Object  string
	Context string
	// ValidFrom is when the proposition became true (for an end: when it
	// stopped). It must not be zero: callers resolve defaults.
	ValidFrom time.Time
	// Confidence in (0, 1]; zero means 1.
	Confidence float64
}

// Fact is one fact version as the model derives it.
type Fact struct {
	Subject, Predicate, Object, Context string
	ValidFrom, ValidTo                  time.Time
	RecordedAt, ExpiredAt               time.Time
	Status                              Status
	Reinforced                          int
	Confidence                          float64
}

// Config tells the model what the engine knows about predicates.
type Config struct {
	// One lists the canonical predicates of cardinality One. Predicates
	// starting with "favorite_" are One too; everything else is Many.
	One map[string]bool
	// Aliases maps a normalised alias to its canonical predicate.
	Aliases map[string]string
}

// Model is the reference implementation of DESIGN §2–§3. It is not safe for
// concurrent use.
type Model struct {
	cfg   Config
	users map[string]*modelUser
}

type modelUser struct {
	slots    map[slotKey]*modelSlot
	episodes int
	lastTx   time.Time
}

// slotKey is (normalised subject, canonical predicate, normalised context);
// the user is the map the slot lives in.
type slotKey struct{ subj, pred, ctx string }

// claimKey identifies a claim inside its slot: the engine's fact identity
// hash(user, subject, predicate, object, context, ValidFrom), plus the kind.
type claimKey struct {
	end bool
	obj string // normalised object
	vf  int64
}

type claim struct {
	key       claimKey
	conf      float64
	retracted bool
	// accepted: 0, or the episode (count) in which the user accepted the
	// claim; the latest acceptance wins a same-instant tie.
	accepted int
	// Display forms, from the first claim (first provenance kept).
	subject, object, context string
}

// snapshot is the claim set of a slot after one transaction changed it.
type snapshot struct {
	tx     time.Time
	claims []claim
}

type modelSlot struct {
	key   slotKey
	one   bool
	snaps []snapshot
}

// NewModel returns an empty model.
func NewModel(cfg Config) *Model {
	return &Model{cfg: cfg, users: map[string]*modelUser{}}
}

// NormKey is the identity form of a subject, object or context: case-folded
// with whitespace collapsed.
func NormKey(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

func cleanValue(s string) string { return strings.Join(strings.Fields(s), " ") }

// Canonical maps a predicate as written to its canonical name: lower case,
// separators collapsed to "_", "favourite_" spelled "favorite_", aliases
// resolved.
func (m *Model) Canonical(pred string) string {
	var parts []string
	var cur []rune
	for _, r := range pred {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			cur = append(cur, unicode.ToLower(r))
			continue
		}
		if len(cur) > 0 {
			parts = append(parts, string(cur))
			cur = nil
		}
	}
	if len(cur) > 0 {
		parts = append(parts, string(cur))
	}
	p := strings.Join(parts, "_")
	if rest, ok := strings.CutPrefix(p, "favourite_"); ok {
		p = "favorite_" + rest
	}
	if c, ok := m.cfg.Aliases[p]; ok {
		return c
	}
	return p
}

func (m *Model) isOne(pred string) bool {
	return m.cfg.One[pred] || strings.HasPrefix(pred, "favorite_")
}

func (m *Model) user(u string) *modelUser {
	mu := m.users[u]
	if mu == nil {
		mu = &modelUser{slots: map[slotKey]*modelSlot{}}
		m.users[u] = mu
	}
	return mu
}

// current returns the slot's latest claim set (shared: copy before editing).
func (s *modelSlot) current() []claim {
	if len(s.snaps) == 0 {
		return nil
	}
	return s.snaps[len(s.snaps)-1].claims
}

func (m *Model) checkTx(mu *modelUser, tx time.Time) error {
	if !tx.After(mu.lastTx) {
		return fmt.Errorf("fuzz: transaction time %v not after the user's last %v", tx, mu.lastTx)
	}
	mu.lastTx = tx
	return nil
}

// Apply records one transaction (one episode) of user at transaction time
// tx. Invalid ops are skipped, as the engine rejects them; a claim the slot
// already holds is a no-op (first provenance kept). Every transaction is an
// episode, even when nothing in it applies.
func (m *Model) Apply(user string, tx time.Time, ops []Op) error {
	mu := m.user(user)
	if err := m.checkTx(mu, tx); err != nil {
		return err
	}
	mu.episodes++
	changed := map[slotKey][]claim{}
	var order []slotKey
	for _, op := range ops {
		subj, pred, obj, ctx := NormKey(op.Subject), m.Canonical(op.Predicate), NormKey(op.Object), NormKey(op.Context)
		if subj == "" || pred == "" || (!op.End && obj == "") || op.ValidFrom.IsZero() {
			continue
		}
		sk := slotKey{subj, pred, ctx}
		s := mu.slots[sk]
		if s == nil {
			s = &modelSlot{key: sk, one: m.isOne(pred)}
			mu.slots[sk] = s
		}
		cs, ok := changed[sk]
		if !ok {
			cs = append([]claim(nil), s.current()...)
			order = append(order, sk)
		}
		c := claim{key: claimKey{end: op.End, obj: obj, vf: op.ValidFrom.UnixNano()}, conf: op.Confidence,
			subject: cleanValue(op.Subject), object: cleanValue(op.Object), context: cleanValue(op.Context)}
		if c.conf == 0 {
			c.conf = 1
		}
		known := false
		for _, o := range cs {
			known = known || o.key == c.key
		}
		if !known {
			cs = append(cs, c)
		}
		changed[sk] = cs
	}
	for _, sk := range order {
		s := mu.slots[sk]
		if len(changed[sk]) == len(s.current()) {
			if len(s.snaps) == 0 {
				delete(mu.slots, sk)
			}
			continue // only replays: the claim set did not change
		}
		s.snaps = append(s.snaps, snapshot{tx: tx, claims: changed[sk]})
	}
	return nil
}

// Correct retracts the assertion (subject, predicate, object, context,
// validFrom) of user and the restatements folded into it at this moment,
// at transaction time tx. It reports whether anything changed: correcting a
// retracted fact changes nothing and records no episode.
func (m *Model) Correct(user string, tx time.Time, subject, predicate, object, context string, validFrom time.Time) (bool, error) {
	mu := m.users[user]
	if mu == nil {
		return false, ErrNotFound
	}
	s := mu.slots[slotKey{NormKey(subject), m.Canonical(predicate), NormKey(context)}]
	if s == nil {
		return false, ErrNotFound
	}
	target := claimKey{obj: NormKey(object), vf: validFrom.UnixNano()}
	cs := append([]claim(nil), s.current()...)
	idx := -1
	for i, c := range cs {
		if c.key == target {
			idx = i
		}
	}
	if idx < 0 {
		return false, ErrNotFound
	}
	if cs[idx].retracted {
		return false, nil
	}
	if err := m.checkTx(mu, tx); err != nil {
		return false, err
	}
	out := fold(s.one, cs)
	for i := range cs {
		if cs[i].key == target || (out[cs[i].key].into != nil && *out[cs[i].key].into == target) {
			cs[i].retracted = true
		}
	}
	mu.episodes++
	s.snaps = append(s.snaps, snapshot{tx: tx, claims: cs})
	return true, nil
}

// Accept records the user's acceptance of the contested assertion
// (subject, predicate, object, context, validFrom) at transaction time tx
// (DESIGN §3, rule accept): from then on the contest rules do not hold it
// back. It reports whether anything changed: accepting a fact already
// accepted and not contested again changes nothing and records no
// episode. A fact the slot does not contest is ErrNotContested.
func (m *Model) Accept(user string, tx time.Time, subject, predicate, object, context string, validFrom time.Time) (bool, error) {
	mu := m.users[user]
	if mu == nil {
		return false, ErrNotFound
	}
	s := mu.slots[slotKey{NormKey(subject), m.Canonical(predicate), NormKey(context)}]
	if s == nil {
		return false, ErrNotFound
	}
	target := claimKey{obj: NormKey(object), vf: validFrom.UnixNano()}
	cs := append([]claim(nil), s.current()...)
	idx := -1
	for i, c := range cs {
		if c.key == target {
			idx = i
		}
	}
	switch {
	case idx < 0:
		return false, ErrNotFound
	case cs[idx].retracted:
		return false, ErrNotContested
	}
	switch o := fold(s.one, cs)[target]; {
	case o.status == Contested:
	case cs[idx].accepted > 0:
		return false, nil
	default:
		return false, ErrNotContested
	}
	if err := m.checkTx(mu, tx); err != nil {
		return false, err
	}
	mu.episodes++
	cs[idx].accepted = mu.episodes
	s.snaps = append(s.snaps, snapshot{tx: tx, claims: cs})
	return true, nil
}

// Forget drops everything of user.
func (m *Model) Forget(user string) { delete(m.users, user) }

// Episodes is how many episodes user's log holds.
func (m *Model) Episodes(user string) int {
	if mu := m.users[user]; mu != nil {
		return mu.episodes
	}
	return 0
}

// Claim is an assertion or end the model holds, with the normalised fields
// the engine's fact identity is computed from.
type Claim struct {
	End                           bool
	SubjKey, Pred, ObjKey, CtxKey string
	Subject, Object, Context      string
	ValidFrom                     time.Time
	Retracted                     bool
	// Contested: the assertion is contested now.
	Contested bool
}

// Claims lists user's claims in a stable order.
func (m *Model) Claims(user string) []Claim {
	mu := m.users[user]
	if mu == nil {
		return nil
	}
	var out []Claim
	for _, s := range mu.slots {
		folded := fold(s.one, s.current())
		for _, c := range s.current() {
			out = append(out, Claim{End: c.key.end, SubjKey: s.key.subj, Pred: s.key.pred, ObjKey: c.key.obj,
				CtxKey: s.key.ctx, Subject: c.subject, Object: c.object, Context: c.context,
				ValidFrom: time.Unix(0, c.key.vf).UTC(), Retracted: c.retracted, Contested: folded[c.key].status == Contested})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SortKey() < out[j].SortKey() })
	return out
}

// SortKey orders claims by slot, valid time, kind and object: the order
// Claims lists them in.
func (c Claim) SortKey() string {
	// The instant offset by 2^63, so that before the epoch (negative)
	// sorts as time does.
	return fmt.Sprintf("%s\x00%s\x00%s\x00%020d\x00%t\x00%s", c.SubjKey, c.Pred, c.CtxKey, uint64(c.ValidFrom.UnixNano())^1<<63, c.End, c.ObjKey)
}

// outcome is the valid-time state of one claim after a fold.
type outcome struct {
	status     Status    // 0: not a fact of its own (an end, or a restatement)
	closed     bool      // the value stopped holding at validTo; else open
	validTo    int64     // Unix nanoseconds (0 is 1970-01-01) when closed
	into       *claimKey // the fact a restatement reinforces
	reinforced int
	conf       float64
}

// fold computes the valid-time state of a slot from its claim set, the
// rules of DESIGN §3 read literally: walk the instants in order; at each,
// ends first (an end at t closes the matching open values that began
// before t), then the assertions.
func fold(one bool, claims []claim) map[claimKey]*outcome {
	out := map[claimKey]*outcome{}
	var instants []int64
	seen := map[int64]bool{}
	for _, c := range claims {
		if !seen[c.key.vf] {
			seen[c.key.vf] = true
			instants = append(instants, c.key.vf)
		}
	}
	sort.Slice(instants, func(i, j int) bool { return instants[i] < instants[j] })

	// open holds the facts in force: object → claim key (One: at most one).
	open := map[string]claimKey{}
	for _, t := range instants {
		for _, c := range claims {
			if c.key.vf != t || !c.key.end {
				continue
			}
			out[c.key] = &outcome{}
			for obj, k := range open {
				if k.vf < t && (c.key.obj == "" || c.key.obj == obj) {
					out[k].validTo, out[k].closed = t, true
					delete(open, obj)
				}
			}
		}
		var live []claim
		for _, c := range claims {
			if c.key.vf != t || c.key.end {
				continue
			}
			if c.retracted {
				out[c.key] = &outcome{status: Retracted, reinforced: 1, conf: c.conf}
				continue
			}
			live = append(live, c)
		}
		if one && len(live) > 1 {
			// Different objects at one instant: nobody knows which; all
			// contested, the value in force stays. Unless the user
			// accepted one: the latest accepted is applied, alone.
			win := -1
			for i, c := range live {
				if c.accepted > 0 && (win < 0 || c.accepted > live[win].accepted) {
					win = i
				}
			}
			for i, c := range live {
				if i != win {
					out[c.key] = &outcome{status: Contested, reinforced: 1, conf: c.conf}
				}
			}
			if win < 0 {
				continue
			}
			live = []claim{live[win]}
		}
		for _, c := range live {
			if one {
				var cur *claimKey
				for _, k := range open {
					k := k
					cur = &k
				}
				switch {
				case cur != nil && cur.obj == c.key.obj:
					reinforce(out, *cur, c)
				case cur != nil && c.accepted == 0 && out[*cur].conf-c.conf > ConfidenceMargin+confidenceEps:
					out[c.key] = &outcome{status: Contested, reinforced: 1, conf: c.conf}
				default:
					if cur != nil {
						out[*cur].validTo, out[*cur].closed = t, true
						delete(open, cur.obj)
					}
					out[c.key] = &outcome{status: Active, reinforced: 1, conf: c.conf}
					open[c.key.obj] = c.key
				}
				continue
			}
			if k, ok := open[c.key.obj]; ok {
				reinforce(out, k, c)
				continue
			}
			out[c.key] = &outcome{status: Active, reinforced: 1, conf: c.conf}
			open[c.key.obj] = c.key
		}
	}
	return out
}

func reinforce(out map[claimKey]*outcome, into claimKey, c claim) {
	f := out[into]
	f.reinforced++
	f.conf = max(f.conf, c.conf)
	out[c.key] = &outcome{into: &into}
}

// versions derives every fact version of a slot by diffing consecutive
// folds: a claim's version lasts while its (ValidTo, Status) stays the
// same; reinforcement and confidence change in place, so a version shows
// them as of the last transaction it was believed in.
func (s *modelSlot) versions() []Fact {
	folds := make([]map[claimKey]*outcome, len(s.snaps))
	for i, sn := range s.snaps {
		folds[i] = fold(s.one, sn.claims)
	}
	var out []Fact
	for _, c := range s.current() {
		if c.key.end {
			continue
		}
		var cur *Fact
		for i, sn := range s.snaps {
			o := folds[i][c.key]
			has := o != nil && o.status != 0
			if cur != nil && (!has || cur.Status != o.status || !cur.ValidTo.Equal(o.end())) {
				cur.ExpiredAt = sn.tx
				out = append(out, *cur)
				cur = nil
			}
			if !has {
				continue
			}
			if cur == nil {
				cur = &Fact{Subject: c.subject, Predicate: s.key.pred, Object: c.object, Context: c.context,
					ValidFrom: time.Unix(0, c.key.vf).UTC(), ValidTo: o.end(), RecordedAt: sn.tx,
					Status: o.status}
			}
			cur.Reinforced, cur.Confidence = o.reinforced, o.conf
		}
		if cur != nil {
			out = append(out, *cur)
		}
	}
	return out
}

// end is the outcome's ValidTo: the zero time while open.
func (o *outcome) end() time.Time {
	if !o.closed {
		return time.Time{}
	}
	return time.Unix(0, o.validTo).UTC()
}

// Visible is the visibility formula of DESIGN §2.
func (f Fact) Visible(validAt, knownAt time.Time) bool {
	return f.Status == Active &&
		!f.RecordedAt.After(knownAt) && (f.ExpiredAt.IsZero() || knownAt.Before(f.ExpiredAt)) &&
		!f.ValidFrom.After(validAt) && (f.ValidTo.IsZero() || validAt.Before(f.ValidTo))
}

// Versions returns every version of every fact of user.
func (m *Model) Versions(user string) []Fact {
	mu := m.users[user]
	if mu == nil {
		return nil
	}
	var out []Fact
	for _, s := range mu.slots {
		out = append(out, s.versions()...)
	}
	return out
}

// AsOf returns what the model believed at knownAt to be true at validAt:
// every version tested against the visibility formula.
func (m *Model) AsOf(user string, validAt, knownAt time.Time) []Fact {
	var out []Fact
	for _, f := range m.Versions(user) {
		if f.Visible(validAt, knownAt) {
			out = append(out, f)
		}
	}
	return out
}

// State returns the current beliefs (versions not expired) visible at
// (now, now).
func (m *Model) State(user string, now time.Time) []Fact {
	var out []Fact
	for _, f := range m.Versions(user) {
		if f.ExpiredAt.IsZero() && f.Visible(now, now) {
			out = append(out, f)
		}
	}
	return out
}

// Current returns every version currently believed, whatever its status or
// valid time: the slot timelines, contested and retracted values included.
func (m *Model) Current(user string) []Fact {
	var out []Fact
	for _, f := range m.Versions(user) {
		if f.ExpiredAt.IsZero() {
			out = append(out, f)
		}
	}
	return out
}

// History returns every version of (subject, predicate) of user, in every
// context.
func (m *Model) History(user, subject, predicate string) []Fact {
	mu := m.users[user]
	if mu == nil {
		return nil
	}
	subj, pred := NormKey(subject), m.Canonical(predicate)
	var out []Fact
	for k, s := range mu.slots {
		if k.subj == subj && k.pred == pred {
			out = append(out, s.versions()...)
		}
	}
	return out
}

// AsOfByFold answers AsOf a second, independent way: fold the claim set
// each slot had at knownAt and keep the active facts valid at validAt.
// Model tests check that it agrees with AsOf.
func (m *Model) AsOfByFold(user string, validAt, knownAt time.Time) []Fact {
	mu := m.users[user]
	if mu == nil {
		return nil
	}
	var out []Fact
	for _, s := range mu.slots {
		var cs []claim
		for _, sn := range s.snaps {
			if !sn.tx.After(knownAt) {
				cs = sn.claims
			}
		}
		for k, o := range fold(s.one, cs) {
			if o.status != Active || k.vf > validAt.UnixNano() || (o.closed && o.validTo <= validAt.UnixNano()) {
				continue
			}
			for _, c := range cs {
				if c.key == k {
					out = append(out, Fact{Subject: c.subject, Predicate: s.key.pred, Object: c.object,
						Context: c.context, ValidFrom: time.Unix(0, k.vf).UTC(), ValidTo: o.end(),
						Status: o.status})
				}
			}
		}
	}
	return out
}
