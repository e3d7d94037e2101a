package memor

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memor-db/memor/extract"
	"github.com/memor-db/memor/internal/norm"
	"github.com/memor-db/memor/internal/resolve"
	"github.com/memor-db/memor/kv"
)

// The write path, in files that follow it: write.go, the API (Add,
// Assert, AssertBatch, End, Correct) down to one transaction; apply.go,
// the transaction (txn) and applying an episode in it: ops become claims;
// slot.go, resolving a slot: the fold of its claims becomes versions and
// decisions; indexsink.go, the index sink that keeps the user's indexes in
// step in the same batch. bulk.go is the bulk loader, which builds a new
// user's large first write apart from all of them.

// AdditionalContext is the context given to an additive claim ("I also
// live in Portland") of a One predicate, so that it coexists with the value
// in force rather than superseding it.
const AdditionalContext = "additional"

// AddOption configures Add.
type AddOption func(*addConfig)

type addConfig struct {
	at        time.Time
	sync      bool
	speaker   *string
	decisions *[]Decision
	key       *string // IdempotencyKey
	repeated  *bool
}

// At sets when the episode was said (default: now). Relative times in the
// text ("last month") resolve against it, and facts without an explicit
// time become valid from it.
func At(t time.Time) AddOption { return func(c *addConfig) { c.at = t } }

// Speaker says who said the episode, for a conversation of several
// people in one memory. First-person claims of the episode are about
// name, an entity like any other ("I live in Boston" said by Caroline is
// "Caroline lives_in Boston"; "my brother Alex" is "Caroline brother
// Alex"), not about the memory's owner, so each participant's facts stay
// apart and one participant's value of a One predicate never supersedes
// another's. Without Speaker, first person is the owner (subject "user").
//
// A name equal to the owner's user ID or to "user" (compared as subjects
// are: case and surrounding white space aside) is the owner speaking:
// first person stays "user". The name is stored with the episode as
// given in every case, and shown by Result.Text.
//
// The name must pass ValidSpeaker; Add fails with an error wrapping
// ErrInvalidSpeaker otherwise (an empty name included: leave the option
// out for the owner).
func Speaker(name string) AddOption { return func(c *addConfig) { c.speaker = &name } }

// voice is the subject that first person in ep is about: the speaker, or
// the owner (extract.User) when ep has no speaker or the owner speaks.
func (ep *Episode) voice() string {
	if ep.Speaker == "" {
		return extract.User
	}
	k := norm.Key(ep.Speaker)
	if k == extract.User || k == norm.Key(ep.User) {
		return extract.User
	}
	return norm.Clean(ep.Speaker)
}

// Add appends what user said to their episode log and applies the facts
// extracted from it. The episode is durable when Add returns.
func (e *Engine) Add(ctx context.Context, user, text string, opts ...AddOption) (_ Episode, err error) {
	ctx, span := e.tel.startAdd(ctx, user, len(text))
	defer func() { span.end(err) }()
	var cfg addConfig
	for _, o := range opts {
		o(&cfg)
	}
	if err := e.validUser(user); err != nil {
		return Episode{}, err
	}
	if err := e.validText(text); err != nil {
		return Episode{}, err
	}
	if strings.TrimSpace(text) == "" {
		// Nothing to remember: a caller's bug (an empty chat turn), not
		// an episode worth a sequence number.
		return Episode{}, fmt.Errorf("%w: empty text", ErrInvalidText)
	}
	at, err := e.episodeTime(cfg.at)
	if err != nil {
		return Episode{}, err
	}
	ep := Episode{Kind: EpisodeText, At: at, Text: text}
	if cfg.speaker != nil {
		if err := ValidSpeaker(*cfg.speaker); err != nil {
			return Episode{}, err
		}
		ep.Speaker = *cfg.speaker
	}
	if cfg.key != nil {
		if err := validIdempotencyKey(*cfg.key); err != nil {
			return Episode{}, err
		}
		ep.Key = *cfg.key
	}
	if cfg.sync || cfg.decisions != nil {
		rep, d, err := e.addSync(ctx, user, &ep)
		if rep || (err != nil && ep.Seq == 0) {
			if err == nil {
				// Applied, as Sync promises, though the first Add queued it.
				err = e.Flush(ctx, user)
			}
			return e.repeated(ep, &cfg, rep, err)
		}
		if cfg.decisions != nil {
			*cfg.decisions = d
		}
		if cfg.repeated != nil {
			*cfg.repeated = false
		}
		return ep, err
	}
	if err := e.ing.acquire(ctx); err != nil {
		return Episode{}, err
	}
	release, err := e.enter(ctx)
	if err != nil {
		e.ing.release(1)
		return Episode{}, err
	}
	defer release()
	e.ing.hold(user)
	rep, err := e.commitEpisode(ctx, user, &ep)
	if err != nil || rep {
		e.ing.applied(user, 1)
		return e.repeated(ep, &cfg, rep, err)
	}
	e.ing.schedule(user)
	e.counters.queued.Add(1)
	if cfg.repeated != nil {
		*cfg.repeated = false
	}
	return ep, nil
}

// addSync is Add with Sync: it extracts ep's claims, then stores and
// applies it in one batch, unless ep.Key names a stored episode (rep,
// and *ep is that one; see repeat).
func (e *Engine) addSync(ctx context.Context, user string, ep *Episode) (rep bool, _ []Decision, _ error) {
	if ep.Key != "" {
		// A repeat is answered before extracting (a model call); the
		// lookup under the user's lock below is the one that holds.
		release, err := e.enter(ctx)
		if err != nil {
			return false, nil, err
		}
		rep, err := repeat(e.db, user, ep)
		release()
		if err != nil || rep {
			return rep, nil, err
		}
	}
	ep.User = user
	pre := e.extractEpisode(ctx, nil, *ep)
	pre.rec = 0 // the episode gets its transaction time when committed
	release, err := e.enter(ctx)
	if err != nil {
		return false, nil, err
	}
	defer release()
	unlock := e.lockUser(user)
	defer unlock()
	if ep.Key != "" {
		if rep, err := repeat(e.db, user, ep); err != nil || rep {
			return rep, nil, err
		}
	}
	d, err := e.writeLocked(ctx, user, ep, pre, false)
	return false, d, err
}

// repeated is Add's answer when repeat found ep's key (rep) or failed.
func (e *Engine) repeated(ep Episode, cfg *addConfig, rep bool, err error) (Episode, error) {
	if err != nil {
		return Episode{}, err
	}
	if cfg.repeated != nil {
		*cfg.repeated = rep
	}
	if cfg.decisions != nil {
		*cfg.decisions = nil // nothing decided now
	}
	return ep, nil
}

// Assert records facts the caller already has (the structured path). It is
// logged as an episode, so Rebuild reproduces it. It returns the rule
// decisions the resolver took.
func (e *Engine) Assert(ctx context.Context, user string, f FactInput) ([]Decision, error) {
	return e.AssertBatch(ctx, user, []FactInput{f})
}

// AssertBatch records many facts as one episode in one atomic commit: the
// bulk-import path.
func (e *Engine) AssertBatch(ctx context.Context, user string, fs []FactInput) ([]Decision, error) {
	if err := e.validUser(user); err != nil {
		return nil, err
	}
	if len(fs) == 0 {
		return nil, fmt.Errorf("%w: no facts", ErrInvalidFact)
	}
	now := e.clock().UTC()
	ops := make([]extract.Op, len(fs))
	size := 0
	for i, f := range fs {
		op := extract.Op{Kind: extract.Assert, Subject: f.Subject, Predicate: f.Predicate, Object: f.Object,
			Context: f.Context, ValidFrom: f.ValidFrom, Confidence: f.Confidence, Quote: f.Quote}
		if op.ValidFrom.IsZero() {
			op.ValidFrom = now
		}
		if err := validOp(op); err != nil {
			return nil, fmt.Errorf("fact %d: %w", i, err)
		}
		ops[i] = op
		size += len(op.Subject) + len(op.Predicate) + len(op.Object) + len(op.Context) + 5
	}
	// The text is the ops rendered one a line, written into one buffer.
	var text strings.Builder
	text.Grow(size)
	for i := range ops {
		if i > 0 {
			text.WriteByte('\n')
		}
		writeOp(&text, &ops[i])
	}
	ep := Episode{Kind: EpisodeFacts, At: now, Ops: ops, Text: text.String()}
	if err := e.validText(ep.Text); err != nil && len(fs) == 1 {
		return nil, err
	}
	return e.write(ctx, user, &ep, nil, true)
}

// End closes an open value: the structured form of "I no longer play the
// violin". An empty Object closes every open value of the slot.
func (e *Engine) End(ctx context.Context, user string, in EndInput) ([]Decision, error) {
	if err := e.validUser(user); err != nil {
		return nil, err
	}
	now := e.clock().UTC()
	op := extract.Op{Kind: extract.End, Subject: in.Subject, Predicate: in.Predicate, Object: in.Object,
		Context: in.Context, ValidFrom: in.At, Quote: in.Quote}
	if op.ValidFrom.IsZero() {
		op.ValidFrom = now
	}
	if err := validOp(op); err != nil {
		return nil, err
	}
	ep := Episode{Kind: EpisodeFacts, At: now, Ops: []extract.Op{op}, Text: renderOp(op)}
	return e.write(ctx, user, &ep, nil, true)
}

// Correct records that a fact was never true. The fact (and the restatements
// folded into it) is retracted: kept in History with status Retracted, never
// served again; the value it displaced is restored. The correction is an
// episode, so it survives Rebuild; a later genuine re-assertion still
// applies. Correcting an already retracted fact changes nothing.
func (e *Engine) Correct(ctx context.Context, user, factID string) error {
	if err := e.validUser(user); err != nil {
		return err
	}
	id, err := parseID(factID)
	if err != nil {
		return err
	}
	release, err := e.enter(ctx)
	if err != nil {
		return err
	}
	defer release()
	unlock := e.lockUser(user)
	defer unlock()

	c, slot, err := e.assertion(user, factID, id)
	if err != nil {
		return err
	}
	if c.Retracted {
		return nil
	}
	_, _, _, _, many, err := slotParts(slot)
	if err != nil {
		return err
	}
	claims, err := e.slotClaims(ctx, e.db, user, slot, nil)
	if err != nil {
		return err
	}
	out := resolve.Fold(!many, toResolve(claims))
	retract := []string{c.ID}
	for _, o := range claims {
		if out[o.ID] != nil && out[o.ID].Into == c.ID {
			retract = append(retract, o.ID)
		}
	}
	sort.Strings(retract[1:])
	ep := Episode{Kind: EpisodeCorrect, At: e.clock().UTC(), Text: "correct " + factID,
		Correct: &Correction{FactID: c.ID, Claims: retract}}
	_, err = e.writeLocked(ctx, user, &ep, nil, false)
	return err
}

// Accept resolves a conflict in favour of a contested fact: the fact
// becomes the value in force from its ValidFrom (until a later value
// replaces it), rival values of the same instant stay contested, and the
// value it displaces closes at its ValidFrom, as a claim that had not been
// contested would have (rule accept). The acceptance is an episode, so
// it survives Rebuild; a later genuine assertion of a rival still
// applies. Of two rivals of one instant accepted in turn, the later
// acceptance holds. Accepting a fact already accepted and in force
// changes nothing. It fails with ErrNotFound for an ID that is not a
// fact of user (or is an end) and ErrNotContested for a fact that is not
// contested. (To keep the value in force instead, Correct the contested
// fact.)
func (e *Engine) Accept(ctx context.Context, user, factID string) error {
	if err := e.validUser(user); err != nil {
		return err
	}
	id, err := parseID(factID)
	if err != nil {
		return err
	}
	release, err := e.enter(ctx)
	if err != nil {
		return err
	}
	defer release()
	unlock := e.lockUser(user)
	defer unlock()

	c, slot, err := e.assertion(user, factID, id)
	if err != nil {
		return err
	}
	if c.Retracted {
		return fmt.Errorf("%w: %s was retracted", ErrNotContested, factID)
	}
	_, _, _, _, many, err := slotParts(slot)
	if err != nil {
		return err
	}
	claims, err := e.slotClaims(ctx, e.db, user, slot, nil)
	if err != nil {
		return err
	}
	out := resolve.Fold(!many, toResolve(claims))
	switch o := out[c.ID]; {
	case o == nil:
		return fmt.Errorf("%w: fact %s of this user", ErrNotFound, factID)
	case o.Status == resolve.Contested:
	case c.Accepted > 0:
		return nil // accepted already, and nothing has contested it since
	default:
		return fmt.Errorf("%w: %s", ErrNotContested, factID)
	}
	ep := Episode{Kind: EpisodeAccept, At: e.clock().UTC(), Text: "accept " + factID, Accept: &Acceptance{FactID: c.ID}}
	_, err = e.writeLocked(ctx, user, &ep, nil, false)
	return err
}

// assertion returns the claim of user's fact id (factID as the caller
// wrote it, for errors) and its slot key, for Correct and Accept: an
// unknown ID, or one of an end, is ErrNotFound.
func (e *Engine) assertion(user, factID string, id [idLen]byte) (claimRec, []byte, error) {
	suf, err := e.db.Get(userKey(user, kv.SubFactIndex, id[:]))
	if errors.Is(err, kv.ErrNotFound) {
		return claimRec{}, nil, fmt.Errorf("%w: fact %s of this user", ErrNotFound, factID)
	}
	if err != nil {
		return claimRec{}, nil, err
	}
	c, err := getClaim(e.db, user, suf)
	if err != nil {
		return claimRec{}, nil, err
	}
	if resolve.Kind(c.Kind) != resolve.Assert {
		return claimRec{}, nil, fmt.Errorf("%w: %s is an end, not a fact", ErrNotFound, factID)
	}
	return c, suf[:len(suf)-8-idLen], nil
}

// write commits ep and everything derived from it in one batch, after
// applying any of the user's episodes still queued (so that the inline path
// never overtakes the queue). pre is ep's extraction, done by the caller
// outside the user's lock, or nil. vetted says that every op of ep passed
// validOp with its valid time set (see txn.vetted).
func (e *Engine) write(ctx context.Context, user string, ep *Episode, pre *extracted, vetted bool) ([]Decision, error) {
	release, err := e.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	unlock := e.lockUser(user)
	defer unlock()
	return e.writeLocked(ctx, user, ep, pre, vetted)
}

func (e *Engine) writeLocked(ctx context.Context, user string, ep *Episode, pre *extracted, vetted bool) ([]Decision, error) {
	// An episode whose application fails is recorded as failed instead,
	// by writing again (see failures); each round fails one more.
	var fails failures
	for {
		d, err := e.writeOnce(ctx, user, ep, pre, vetted, fails)
		if !fails.retry(err, ep) {
			return d, causeOf(err)
		}
	}
}

func (e *Engine) writeOnce(ctx context.Context, user string, ep *Episode, pre *extracted, vetted bool, fails failures) ([]Decision, error) {
	// About what a fact writes (claim, version, log, vector, postings,
	// graph and interval entries) plus the episode: sized up front, a
	// batch of thousands of facts is not copied as it grows.
	if fails == nil && e.bulkable(ep, pre) {
		m, err := loadMeta(e.db, user)
		if err != nil {
			return nil, err
		}
		if m.empty() {
			return e.bulkWrite(ctx, user, ep, pre, m, vetted)
		}
	}
	t, err := e.begin(ctx, user, len(ep.Ops)*bytesPerFact+2*len(ep.Text))
	if err != nil {
		return nil, err
	}
	defer t.close()
	t.fails = fails
	now := t.now
	if err := t.catchUp(); err != nil {
		return nil, err
	}
	t.now = now
	t.decisions = nil
	if err := t.appendEpisode(ep); err != nil {
		return nil, err
	}
	t.pre = pre
	if t.caught > 0 {
		t.pre = nil // queued episodes just applied may name people it needs
	}
	t.vetted = vetted // for ep only, not the queued episodes caught up
	if err := t.apply(*ep); err != nil {
		return nil, err
	}
	t.meta.Applied = ep.Seq
	if err := t.commit(); err != nil {
		return nil, err
	}
	if t.caught > 0 {
		e.ing.applied(user, t.caught)
	}
	if t.failure != nil {
		// Stored, recorded as failed, nothing applied: an inline Add
		// says so (an asynchronous one shows it in Freshness).
		return t.decisions, fmt.Errorf("%w: episode %d: %w", ErrExtractionFailed, ep.Seq, t.failure)
	}
	return t.decisions, nil
}

func validOp(op extract.Op) error {
	switch {
	case op.Kind != extract.Assert && op.Kind != extract.End:
		return fmt.Errorf("%w: unknown op kind %d", ErrInvalidFact, op.Kind)
	case norm.Key(op.Subject) == "":
		return fmt.Errorf("%w: empty subject", ErrInvalidFact)
	case normPredicate(op.Predicate) == "":
		return fmt.Errorf("%w: empty predicate", ErrInvalidFact)
	case op.Kind == extract.Assert && norm.Key(op.Object) == "":
		return fmt.Errorf("%w: empty object", ErrInvalidFact)
	case op.Confidence < 0 || op.Confidence > 1 || op.Confidence != op.Confidence:
		return fmt.Errorf("%w: confidence %v outside (0, 1]", ErrInvalidFact, op.Confidence)
	}
	for _, s := range []string{op.Subject, op.Predicate, op.Object, op.Context, op.Quote} {
		if !utf8.ValidString(s) {
			return fmt.Errorf("%w: invalid UTF-8", ErrInvalidFact)
		}
		if len(s) > DefaultMaxTextBytes {
			return fmt.Errorf("%w: field of %d bytes", ErrTooLarge, len(s))
		}
	}
	if !op.ValidFrom.IsZero() {
		if err := checkTime(op.ValidFrom, "valid time"); err != nil {
			return err
		}
	}
	return nil
}

func renderOp(op extract.Op) string {
	var b strings.Builder
	writeOp(&b, &op)
	return b.String()
}

// writeOp writes what renderOp returns for op to b.
func writeOp(b *strings.Builder, op *extract.Op) {
	b.WriteString(norm.Clean(op.Subject))
	b.WriteByte(' ')
	b.WriteString(normPredicate(op.Predicate))
	if op.Kind == extract.End {
		b.WriteString(" ended")
	}
	if op.Object != "" {
		b.WriteByte(' ')
		b.WriteString(norm.Clean(op.Object))
	}
	if op.Context != "" {
		b.WriteString(" (")
		b.WriteString(norm.Clean(op.Context))
		b.WriteByte(')')
	}
}
