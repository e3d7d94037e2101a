package memor

import (
	"fmt"
	"time"

	"github.com/memor-db/memor/extract"
)

// Cardinality says how many values of a predicate may be true at once.
type Cardinality uint8

const (
	// Many: several values may hold at once (plays_instrument, has_pet).
	Many Cardinality = iota
	// One: at most one value holds at any instant (lives_in, works_at).
	One
)

func (c Cardinality) String() string {
	if c == One {
		return "one"
	}
	return "many"
}

// Status is the standing of a fact version.
type Status uint8

// Status values are stored; do not reorder.
const (
	// Active: an accepted belief; visible wherever its intervals allow.
	Active Status = iota + 1
	// Contested: flagged for review (same-instant disagreement, or a claim
	// much less confident than the value it would replace). Listed by
	// History and Conflicts, never served as state.
	Contested
	// Retracted: the user said it was never true. Kept for the audit trail,
	// never served as state.
	Retracted
)

func (s Status) String() string {
	switch s {
	case Active:
		return "active"
	case Contested:
		return "contested"
	case Retracted:
		return "retracted"
	}
	return "unknown"
}

// MarshalText renders the status as its name ("active") in JSON.
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses a status name.
func (s *Status) UnmarshalText(b []byte) error {
	for _, v := range []Status{Active, Contested, Retracted} {
		if string(b) == v.String() {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("%w: status %q", ErrCorrupt, b)
}

// Rule names a resolution rule of DESIGN §3. Rules are stored and logged;
// the strings are part of the format.
type Rule string

// The resolution rules.
const (
	RuleAdd       Rule = "add"       // first value of a slot, or a new value of a Many slot
	RuleDup       Rule = "dup"       // same value restated: reinforced, no new fact
	RuleSupersede Rule = "supersede" // One slot: a newer value closed the one in force
	RuleCoexist   Rule = "coexist"   // same subject and predicate, another context: both stand
	RuleEnd       Rule = "end"       // an End op closed the value
	RuleContest   Rule = "contest"   // flagged for review, not applied
	RuleLate      Rule = "late"      // arrived after later values; inserted into the past
	RuleCorrect   Rule = "correct"   // the user retracted it
	RuleAccept    Rule = "accept"    // the user accepted a contested value: in force from its ValidFrom
	RuleJudge     Rule = "judge"     // cardinality of an unknown predicate decided by the Judge
	RuleReject    Rule = "reject"    // invalid op (e.g. quote not in the text), never applied
	RuleNoop      Rule = "noop"      // replay of a claim already known
)

// Fact is one version of a fact. Versions are immutable: a change in belief
// expires a version (ExpiredAt) and records a new one.
type Fact struct {
	// ID is hash(user, subject, predicate, object, context, ValidFrom): the
	// same claim always has the same ID, whatever its version.
	ID        string `json:"id"`
	User      string `json:"user"`
	Subject   string `json:"subject"`
	Predicate string `json:"predicate"`
	Object    string `json:"object"`
	Context   string `json:"context,omitempty"`
	// ValidFrom (inclusive) and ValidTo (exclusive; zero = still true):
	// when the proposition held in the world.
	ValidFrom time.Time `json:"valid_from"`
	ValidTo   time.Time `json:"valid_to,omitzero"`
	// RecordedAt and ExpiredAt (zero = current belief): when memor held
	// this version to be true.
	RecordedAt time.Time `json:"recorded_at"`
	ExpiredAt  time.Time `json:"expired_at,omitzero"`
	Status     Status    `json:"status"`
	Confidence float64   `json:"confidence"`
	// Reinforced counts the claims that support this fact (1 = said once).
	Reinforced int       `json:"reinforced"`
	LastSeen   time.Time `json:"last_seen"`
	// Episode is the sequence number of the episode the fact came from.
	Episode uint64 `json:"episode"`
	// Episodes lists every episode that supports the fact, ascending:
	// Episode and those of the restatements folded into it (rule dup).
	// A replay of a claim already known (rule noop) adds nothing.
	Episodes []uint64 `json:"episodes"`
	Quote    string   `json:"quote,omitempty"`
	// Rule is the rule that produced this version.
	Rule Rule `json:"rule"`
	// Doc is the per-user index document ID of this version.
	Doc uint32 `json:"-"`
}

// Open reports whether the version is still believed (ExpiredAt unset).
func (f Fact) Open() bool { return f.ExpiredAt.IsZero() }

// VisibleAt reports whether f is served at (validAt, knownAt): DESIGN §2.
func (f Fact) VisibleAt(validAt, knownAt time.Time) bool {
	return f.Status == Active &&
		!f.RecordedAt.After(knownAt) && (f.ExpiredAt.IsZero() || knownAt.Before(f.ExpiredAt)) &&
		!f.ValidFrom.After(validAt) && (f.ValidTo.IsZero() || validAt.Before(f.ValidTo))
}

// String renders the fact as "subject predicate object".
func (f Fact) String() string {
	s := f.Subject + " " + f.Predicate + " " + f.Object
	if f.Context != "" {
		s += " (" + f.Context + ")"
	}
	return s
}

// FactInput is a fact a caller already has (the structured write path).
type FactInput struct {
	Subject   string `json:"subject"`
	Predicate string `json:"predicate"`
	Object    string `json:"object"`
	Context   string `json:"context,omitempty"`
	// ValidFrom zero means now (the engine clock).
	ValidFrom time.Time `json:"valid_from,omitzero"`
	// Confidence in (0, 1]; zero means 1.
	Confidence float64 `json:"confidence,omitempty"`
	Quote      string  `json:"quote,omitempty"`
}

// EndInput closes an open value (the structured form of "I quit").
type EndInput struct {
	Subject   string `json:"subject"`
	Predicate string `json:"predicate"`
	// Object empty ends every open value of the slot.
	Object  string    `json:"object,omitempty"`
	Context string    `json:"context,omitempty"`
	At      time.Time `json:"at,omitzero"`
	Quote   string    `json:"quote,omitempty"`
}

// EpisodeKind says what an episode carries.
type EpisodeKind uint8

// Stored; do not reorder.
const (
	EpisodeText    EpisodeKind = iota + 1 // something the user said
	EpisodeFacts                          // structured Assert / End ops
	EpisodeCorrect                        // a user correction
	EpisodeAccept                         // a user's acceptance of a contested fact
)

func (k EpisodeKind) String() string {
	switch k {
	case EpisodeText:
		return "text"
	case EpisodeFacts:
		return "facts"
	case EpisodeCorrect:
		return "correct"
	case EpisodeAccept:
		return "accept"
	}
	return "unknown"
}

// MarshalText renders the kind as its name ("text") in JSON.
func (k EpisodeKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText parses a kind name.
func (k *EpisodeKind) UnmarshalText(b []byte) error {
	for _, v := range []EpisodeKind{EpisodeText, EpisodeFacts, EpisodeCorrect, EpisodeAccept} {
		if string(b) == v.String() {
			*k = v
			return nil
		}
	}
	return fmt.Errorf("%w: episode kind %q", ErrCorrupt, b)
}

// Episode is one entry of a user's append-only log, the source of truth.
type Episode struct {
	User string      `json:"user"`
	Seq  uint64      `json:"seq"`
	Kind EpisodeKind `json:"kind"`
	// At is when it was said (caller-supplied; default now).
	At time.Time `json:"at"`
	// RecordedAt is the engine's transaction time for the episode; facts
	// derived from it carry the same RecordedAt, so Rebuild reproduces them
	// byte for byte.
	RecordedAt time.Time `json:"recorded_at"`
	Text       string    `json:"text"`
	// Speaker is who said a text episode (see the Speaker option); empty
	// for the memory's owner. First-person claims of the episode are about
	// the speaker.
	Speaker string `json:"speaker,omitempty"`
	// Key is the idempotency key a text episode was added under
	// (IdempotencyKey); empty without one.
	Key string `json:"key,omitempty"`
	// Ops holds the structured operations of an EpisodeFacts episode.
	Ops []extract.Op `json:"ops,omitempty"`
	// Correct holds the fact ID (and the claims folded into it) that an
	// EpisodeCorrect episode retracts.
	Correct *Correction `json:"correct,omitempty"`
	// Accept holds the contested fact an EpisodeAccept episode accepts.
	Accept *Acceptance `json:"accept,omitempty"`
}

// Acceptance is the content of an accept episode (see Engine.Accept).
type Acceptance struct {
	FactID string `json:"fact_id"`
}

// Correction is the content of a correction episode.
type Correction struct {
	FactID string   `json:"fact_id"`
	Claims []string `json:"claims"`
}

// Decision is one rule applied to one claim, as written to the resolution
// log.
type Decision struct {
	Seq        uint64    `json:"seq"`
	Rule       Rule      `json:"rule"`
	FactID     string    `json:"fact_id"`
	Subject    string    `json:"subject"`
	Predicate  string    `json:"predicate"`
	Object     string    `json:"object,omitempty"`
	Context    string    `json:"context,omitempty"`
	Episode    uint64    `json:"episode"`
	RecordedAt time.Time `json:"recorded_at"`
	// Detail says why in words, e.g. "reinforces <id>"; Reason,
	// Reinforces and Closed say it as data.
	Detail string `json:"detail,omitempty"`
	Reason Reason `json:"reason,omitempty"`
	// Reinforces is the fact a restatement was folded into (reasons
	// reinforces and folded).
	Reinforces string `json:"reinforces,omitempty"`
	// Closed lists the facts whose open value the claim closed: the value
	// a supersede replaced, the values an end closed.
	Closed []string `json:"closed,omitempty"`
}

// Reason is why a decision came out as it did, as data; the decision's
// Detail says it in words. Reasons are stored as a byte: do not reorder.
type Reason uint8

// The reasons. A decision whose rule says it all (add, supersede, coexist,
// late, contest, judge) has none.
const (
	ReasonNone           Reason = iota
	ReasonReinforces            // a restatement, folded into the fact Reinforces on arrival
	ReasonFolded                // a fact folded into Reinforces when its slot was resolved again
	ReasonNothingToEnd          // an end with no open value to close
	ReasonClosedValue           // an end closed the open value (Closed)
	ReasonClosedAll             // an end without object closed every open value (Closed)
	ReasonKnown                 // a replay of a claim already known: first provenance kept
	ReasonRetracted             // the user retracted the fact
	ReasonStatusChanged         // a version changed status (contested, active, retracted)
	ReasonReopened              // a closed value became open again
	ReasonValidUntil            // a value closed by a claim that arrived later
	ReasonInvalidOp             // a malformed op, never applied
	ReasonQuoteNotInText        // the op's quote is not a verbatim span of the episode
	ReasonAccepted              // the user accepted the contested fact (format 7)
	numReasons
)

var reasonNames = [numReasons]string{"", "reinforces", "folded", "nothing_to_end", "closed_value", "closed_all",
	"known", "retracted", "status_changed", "reopened", "valid_until", "invalid_op", "quote_not_in_text", "accepted"}

func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// MarshalText renders the reason as its name ("reinforces") in JSON.
func (r Reason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText parses a reason name.
func (r *Reason) UnmarshalText(b []byte) error {
	for i, n := range reasonNames {
		if string(b) == n {
			*r = Reason(i)
			return nil
		}
	}
	return fmt.Errorf("%w: reason %q", ErrCorrupt, b)
}
