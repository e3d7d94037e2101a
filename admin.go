package memor

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/memor-db/memor/internal/resolve"
	"github.com/memor-db/memor/kv"
)

// PruneBatch is how many versions Prune moves per commit.
const PruneBatch = 500

// derivedSubs are the keyspaces Rebuild recomputes from the episode log.
var derivedSubs = []kv.Sub{kv.SubClaim, kv.SubFactIndex, kv.SubLive, kv.SubHistory, kv.SubArchive,
	kv.SubDoc, kv.SubLog, kv.SubEpState, kv.SubBM25, kv.SubVector, kv.SubTemporal, kv.SubGraph, kv.SubImage}

// Forget hard-deletes everything of user: episodes, facts, history,
// archive, resolution log and index entries, then compacts the range so
// that the bytes leave the table files and the write-ahead logs (GDPR
// erasure). One file still names some of the user's keys when Forget
// returns: Pebble's MANIFEST, which records every table's first and last
// key. Close rewrites it (or, after a crash, the next Open), so once the
// engine is closed no file under the store's folder holds the user's bytes.
//
// Forget also accepts a user ID that ValidUser refuses but an earlier
// version stored (only white space, or a control character), so that such
// a user can still be erased.
func (e *Engine) Forget(ctx context.Context, user string) error {
	release, err := e.admitStored(ctx, user)
	if err != nil {
		return err
	}
	defer release()
	unlock := e.lockUser(user)
	defer unlock()
	if e.opts.Log != nil {
		// The log first: a Forget that fails after it is repeated, and
		// finds the store's copy still there to delete.
		if err := e.opts.Log.Forget(ctx, user); err != nil {
			return fmt.Errorf("memor: forget: episode log: %w", err)
		}
	}
	ranges, markers, err := e.deleteStored(ctx, user)
	if err != nil || markers == nil {
		return err
	}
	return e.finishForget(ctx, ranges, markers)
}

// deleteStored is Forget's deletion from the store (user's lock held): it
// commits the deletion and returns what finishForget must compact and
// the markers it then drops (nil: nothing was stored).
func (e *Engine) deleteStored(ctx context.Context, user string) (ranges [][2][]byte, markers [][]byte, err error) {
	root := kv.UserRoot(user)
	b := e.db.NewBatch()
	defer b.Close()
	stored, err := hasKey(ctx, b, root)
	if err != nil {
		return nil, nil, err
	}
	pending, err := pendingForgets(ctx, b)
	if err != nil {
		return nil, nil, err
	}
	reg := registryKey(user)
	_, err = b.Get(reg)
	registered := err == nil
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		return nil, nil, err
	}
	if !stored && !registered && len(pending) == 0 {
		// Nothing of the user is stored, and no earlier Forget was cut
		// short (its deleted bytes could still be on disk): there is
		// nothing to delete or scrub.
		return nil, nil, nil
	}
	// The store's clock floor keeps the forgotten user's last transaction
	// time: current reads after a restart never precede it.
	m, err := loadMeta(b, user)
	if err != nil {
		return nil, nil, err
	}
	if err := raiseTxnFloor(b, m.Txn); err != nil {
		return nil, nil, err
	}
	if err := b.DeleteRange(root, kv.PrefixEnd(root)); err != nil {
		return nil, nil, err
	}
	// Stores of formats 1–2 also name the user in the registry; later
	// ones have no key there to delete and compact away.
	if registered {
		if err := b.Delete(reg); err != nil {
			return nil, nil, err
		}
	}
	// The marker commits with the deletion: if the compaction or scrub
	// below is cut short (a crash, a cancelled ctx), the next Open (or
	// the next Forget) finishes the job.
	marker := forgetMarker()
	if err := b.Set(marker, nil); err != nil {
		return nil, nil, err
	}
	e.warmMu.Lock()
	defer e.warmMu.Unlock()
	forgot, err := e.forgetWarm(b, user)
	if err != nil {
		return nil, nil, err
	}
	if err := b.Commit(); err != nil {
		return nil, nil, err
	}
	forgot()
	e.idx.dropUser(user)
	e.ing.forget(user)
	if e.images != nil {
		e.images.forgot(user)
	}
	if e.hookForgetCommitted != nil {
		if err := e.hookForgetCommitted(); err != nil {
			return nil, nil, err
		}
	}
	ranges = [][2][]byte{{root, kv.PrefixEnd(root)}, warmRange}
	if registered {
		ranges = append(ranges, [2][]byte{reg, kv.PrefixEnd(reg)})
	}
	if len(pending) > 0 {
		ranges = forgottenRanges // an earlier Forget's user is unknown
	}
	return ranges, append(pending, marker), nil
}

// Forget markers: one per Forget whose compaction and scrub have not
// finished. They name no user (a marker must not outlive the bytes it
// guards with the user's name in it), so finishing one compacts every
// user's keyspace.
var forgetPrefix = []byte{kv.TagMeta, 'f', 'o', 'r', 'g', 'e', 't'}

// forgottenRanges are the keyspaces a Forget may have deleted from: users'
// keys and the registry of formats 1–2; the judge verdicts of formats
// 1–4, which upgradeJudgeVerdicts deletes; and the warm-up record, which
// may have named the user.
var forgottenRanges = [][2][]byte{{{kv.TagUser}, {kv.TagUser + 1}}, {{kv.TagUserList}, {kv.TagUserList + 1}}, judgeRange, warmRange}

func forgetMarker() []byte {
	var id [8]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails (Go 1.24+)
	return append(slices.Clone(forgetPrefix), id[:]...)
}

// pendingForgets lists the markers of Forgets not yet finished.
func pendingForgets(ctx context.Context, r kv.Reader) ([][]byte, error) {
	var out [][]byte
	err := r.Scan(ctx, forgetPrefix, func(k, _ []byte) error {
		out = append(out, slices.Clone(k))
		return nil
	})
	return out, err
}

// finishForget compacts the deleted ranges out of the table files, scrubs
// the write-ahead logs, and then drops the markers.
func (e *Engine) finishForget(ctx context.Context, ranges [][2][]byte, markers [][]byte) error {
	for _, r := range ranges {
		if err := e.db.Compact(ctx, r[0], r[1]); err != nil {
			return err
		}
	}
	if err := e.db.Scrub(); err != nil {
		return err
	}
	b := e.db.NewBatch()
	defer b.Close()
	for _, m := range markers {
		if err := b.Delete(m); err != nil {
			return err
		}
	}
	return b.Commit()
}

// finishForgets completes, at Open, the Forgets a crash cut short.
func (e *Engine) finishForgets(ctx context.Context) error {
	pending, err := pendingForgets(ctx, e.db)
	if err != nil || len(pending) == 0 {
		return err
	}
	e.log.Info("memor: finishing interrupted forgets", "count", len(pending))
	return e.finishForget(ctx, forgottenRanges, pending)
}

// hasKey reports whether r holds any key under prefix.
func hasKey(ctx context.Context, r kv.Reader, prefix []byte) (bool, error) {
	found := false
	err := r.Scan(ctx, prefix, func(_, _ []byte) error { found = true; return errStop })
	if err != nil && !errors.Is(err, errStop) {
		return false, err
	}
	return found, nil
}

// users lists every user with data.
func (e *Engine) users(ctx context.Context) ([]string, error) {
	var out []string
	err := e.db.Users(ctx, func(u string) error {
		out = append(out, u)
		return nil
	})
	return out, err
}

// Users lists every user that has data in the store.
func (e *Engine) Users(ctx context.Context) ([]string, error) {
	release, err := e.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	return e.users(ctx)
}

// Prune moves versions that expired before olderThan from the history
// keyspace to the archive, PruneBatch per commit. Reads (History, AsOf)
// still see archived versions; the current-state keyspaces stay small.
func (e *Engine) Prune(ctx context.Context, olderThan time.Time) (int, error) {
	release, err := e.enter(ctx)
	if err != nil {
		return 0, err
	}
	defer release()
	users, err := e.users(ctx)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, u := range users {
		for {
			n, err := e.pruneBatch(ctx, u, olderThan)
			total += n
			if err != nil {
				return total, err
			}
			if n < PruneBatch {
				break
			}
		}
	}
	return total, nil
}

func (e *Engine) pruneBatch(ctx context.Context, user string, olderThan time.Time) (int, error) {
	unlock := e.lockUser(user)
	defer unlock()
	b := e.db.NewBatch()
	defer b.Close()
	hist := kv.UserKey(user, kv.SubHistory)
	n := 0
	err := e.db.Scan(ctx, hist, func(k, v []byte) error {
		f, err := decodeFact(user, v)
		if err != nil {
			return err
		}
		if f.ExpiredAt.IsZero() || !f.ExpiredAt.Before(olderThan) {
			return nil
		}
		suffix := k[len(hist):]
		if err := b.Delete(k); err != nil {
			return err
		}
		if err := b.Set(userKey(user, kv.SubArchive, suffix), v); err != nil {
			return err
		}
		if n++; n == PruneBatch {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return 0, err
	}
	if n == 0 {
		return 0, nil
	}
	return n, b.Commit()
}

// Rebuild replays user's episode log through the current pipeline and
// replaces every fact, version, log entry and index entry with the result,
// atomically. Corrections and acceptances are episodes, so they
// survive. With the same deterministic extractor the result is
// byte-identical: each episode's
// facts carry the episode's own transaction time. An episode whose
// replay fails is recorded as failed (see Retry) and the replay starts
// over without it, so RebuildProgress may count from 1 again. A ctx from
// WithProgress is told each episode replayed (Op "rebuild", Unit
// "episodes").
func (e *Engine) Rebuild(ctx context.Context, user string) error {
	release, err := e.admit(ctx, user)
	if err != nil {
		return err
	}
	defer release()
	unlock := e.lockUser(user)
	defer unlock()
	// An episode whose application fails is recorded as failed (see
	// failures): the replay starts again with it in fails.
	var fails failures
	for {
		err := e.rebuild(ctx, user, fails)
		if !fails.retry(err, nil) {
			return causeOf(err)
		}
	}
}

func (e *Engine) rebuild(ctx context.Context, user string, fails failures) error {
	t, err := e.begin(ctx, user, 0)
	if err != nil {
		return err
	}
	defer t.close()
	t.fails = fails
	if t.meta.Seq == 0 {
		return nil // nothing to replay; write nothing
	}
	eps, err := e.episodes(ctx, t.b, user)
	if err != nil {
		return err
	}
	for _, sub := range derivedSubs {
		p := kv.UserKey(user, sub)
		if err := t.b.DeleteRange(p, kv.PrefixEnd(p)); err != nil {
			return err
		}
	}
	// The replay builds new indexes from the batch (empty after the range
	// deletions) outside the cache: until the commit, Query reads the old
	// ones, which match the store, and the new ones replace them after.
	ui, err := e.idx.load(ctx, t.b, user, true)
	if err != nil {
		return err
	}
	t.idx.replace(ui)
	wasApplied := t.meta.Applied
	t.meta.Doc, t.meta.Log, t.meta.Applied = 0, 0, 0
	prog := progressFrom(ctx, "rebuild", user, "episodes")
	for i, ep := range eps {
		if err := ctx.Err(); err != nil {
			return err
		}
		t.now = nanos(ep.RecordedAt)
		if err := t.apply(ep); err != nil {
			return err
		}
		t.meta.Applied = ep.Seq
		if e.opts.RebuildProgress != nil {
			e.opts.RebuildProgress(user, i+1, len(eps))
		}
		prog.report(i+1, len(eps))
	}
	// A replay applies nothing new: the counters count first applications.
	t.outcomes = episodeOutcomes{}
	if err := t.commit(); err != nil {
		return err
	}
	e.idx.put(user, ui)
	if t.meta.Applied > wasApplied {
		// Episodes still queued were applied by the replay: free their
		// queue slots and wake their waiters, as the workers would have.
		e.ing.applied(user, int(t.meta.Applied-wasApplied))
	}
	return nil
}

// Check verifies the store: every episode, claim and version decodes; the
// fact index and document map agree with the claims and versions; every
// slot's live versions are exactly what the resolver derives from its
// claims; every version's key holds its own ValidFrom and RecordedAt; and
// no slot (a One predicate's, or one object of a Many predicate) has two
// versions visible at one (valid, known) instant, past beliefs included.
// It returns ErrCheck joined with every finding. A ctx from WithProgress
// is told each user checked (Op "check", Unit "users").
func (e *Engine) Check(ctx context.Context) error {
	release, err := e.enter(ctx)
	if err != nil {
		return err
	}
	defer release()
	users, err := e.users(ctx)
	if err != nil {
		return err
	}
	var errs []error
	prog := progressFrom(ctx, "check", "", "users")
	for i, u := range users {
		errs = append(errs, e.checkLocked(ctx, u)...)
		if err := ctx.Err(); err != nil {
			return err
		}
		prog.report(i+1, len(users))
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.Join(append([]error{ErrCheck}, errs...)...)
}

// checkLocked checks user under the user's lock (the index check reloads
// the cached indexes, which must not interleave with a write) and from one
// snapshot, like every read that spans several scans. A check that panics
// (on a store damaged in a way no check foresaw) is a finding of that
// user's.
func (e *Engine) checkLocked(ctx context.Context, user string) (errs []error) {
	unlock := e.lockUser(user)
	defer unlock()
	defer func() {
		if r := recover(); r != nil {
			errs = append(errs, fmt.Errorf("user %q: %w", user, e.panicError(r, "check", user)))
		}
	}()
	err := e.db.View(func(r *kv.Snapshot) error {
		errs = append(errs, e.checkUser(ctx, r, user)...)
		return e.idx.check(ctx, r, user)
	})
	if err != nil {
		errs = append(errs, err)
	}
	return errs
}

func (e *Engine) checkUser(ctx context.Context, r kv.Reader, user string) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("user %q: "+format, append([]any{user}, args...)...))
	}
	meta, err := loadMeta(r, user)
	if err != nil {
		return []error{err}
	}
	eps, err := e.episodes(ctx, r, user)
	if err != nil {
		return []error{err}
	}
	for i, ep := range eps {
		if ep.Seq != uint64(i+1) {
			bad("episode %d has seq %d", i+1, ep.Seq)
		}
	}
	if uint64(len(eps)) != meta.Seq {
		bad("%d episodes, meta says %d", len(eps), meta.Seq)
	}

	// Claims grouped by slot, folded and compared with the live versions.
	claimP := kv.UserKey(user, kv.SubClaim)
	var slots [][]byte
	err = r.Scan(ctx, claimP, func(k, v []byte) error {
		c, err := decodeClaim(v)
		if err != nil {
			bad("%v", err)
			return nil
		}
		suf := k[len(claimP):]
		if len(suf) < 8+idLen {
			bad("short claim key")
			return nil
		}
		if s := suf[:len(suf)-8-idLen]; len(slots) == 0 || !bytes.Equal(slots[len(slots)-1], s) {
			slots = append(slots, append([]byte(nil), s...))
		}
		id := mustID(c.ID)
		if got, err := r.Get(userKey(user, kv.SubFactIndex, id[:])); err != nil || !bytes.Equal(got, suf) {
			bad("claim %s: fact index does not point back (%v)", c.ID, err)
		}
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	for _, slot := range slots {
		claims, err := e.slotClaims(ctx, r, user, slot, nil)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, e.checkSlot(ctx, r, user, slot, claims)...)
	}

	// Every version's document maps back to it; live versions have claims;
	// a version's key holds its own instants; no slot serves two versions
	// at one (valid, known) instant.
	docs := map[uint32]bool{}
	served := map[string][]rect{} // by slot
	for _, sub := range []kv.Sub{kv.SubLive, kv.SubHistory, kv.SubArchive} {
		p := kv.UserKey(user, sub)
		err := r.Scan(ctx, p, func(k, v []byte) error {
			f, err := decodeFact(user, v)
			if err != nil {
				bad("%v", err)
				return nil
			}
			suf := k[len(p):]
			tail := 8 + idLen
			if sub != kv.SubLive {
				tail += 8
			}
			if len(suf) < tail {
				bad("short version key of %s", f.ID)
				return nil
			}
			slot, keyTimes := suf[:len(suf)-tail], suf[len(suf)-tail:]
			if vf := fromNanos(kv.NewDecoder(keyTimes).Int64()); !vf.Equal(f.ValidFrom) {
				bad("version %s: valid from %v, its key says %v", f.ID, f.ValidFrom, vf)
			}
			if sub != kv.SubLive {
				if rec := fromNanos(kv.NewDecoder(keyTimes[8+idLen:]).Int64()); !rec.Equal(f.RecordedAt) {
					bad("version %s: recorded at %v, its key says %v", f.ID, f.RecordedAt, rec)
				}
			}
			if f.Status == Active {
				served[string(slot)] = append(served[string(slot)], versionRect(&f))
			}
			if sub != kv.SubLive && (f.ExpiredAt.IsZero() || f.ExpiredAt.Before(f.RecordedAt)) {
				bad("expired version %s has ExpiredAt %v, RecordedAt %v", f.ID, f.ExpiredAt, f.RecordedAt)
			}
			if sub == kv.SubLive && !f.ExpiredAt.IsZero() {
				bad("live version %s has ExpiredAt set", f.ID)
			}
			if docs[f.Doc] {
				bad("document %d used twice", f.Doc)
			}
			docs[f.Doc] = true
			want := k[len(p):]
			if sub == kv.SubLive {
				want = versionSuffix(want, nanos(f.RecordedAt))
			}
			want = append(kv.AppendUint64([]byte{docVersion}, f.Episode), want...)
			got, err := r.Get(kv.AppendUint32(kv.UserKey(user, kv.SubDoc), f.Doc))
			if err != nil || !bytes.Equal(got, want) {
				bad("version %s: document %d does not point back (%v)", f.ID, f.Doc, err)
			}
			if f.Doc > meta.Doc {
				bad("version %s: document %d above counter %d", f.ID, f.Doc, meta.Doc)
			}
			return nil
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, slot := range slices.Sorted(maps.Keys(served)) {
		if a, b, ok := doubleVisible(served[slot]); ok {
			subj, pred, _, _, _, _ := slotParts([]byte(slot))
			bad("slot %s/%s: %s", subj, pred, describeOverlap(a, b))
		}
	}
	n := 0
	docP := kv.UserKey(user, kv.SubDoc)
	err = r.Scan(ctx, docP, func(k, v []byte) error {
		if len(v) > 0 && v[0] == docEpisode {
			doc := kv.NewDecoder(k[len(docP):]).Uint32()
			if docs[doc] {
				bad("document %d used twice", doc)
			}
			if doc > meta.Doc {
				bad("episode document %d above counter %d", doc, meta.Doc)
			}
			return nil
		}
		n++
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	if n != len(docs) {
		bad("%d version document entries for %d versions", n, len(docs))
	}
	return errs
}

// checkSlot compares a slot's live versions with the fold of its claims.
func (e *Engine) checkSlot(ctx context.Context, r kv.Reader, user string, slot []byte, claims []claimRec) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("user %q slot %s/%s: "+format, append([]any{user, claims[0].Subject, claims[0].Predicate}, args...)...))
	}
	_, _, _, _, many, err := slotParts(slot)
	if err != nil {
		return []error{err}
	}
	out := resolve.Fold(!many, toResolve(claims))
	live, err := liveVersions(ctx, r, user, slot)
	if err != nil {
		return []error{err}
	}
	folded := map[string][]uint64{}
	for _, c := range claims {
		if o := out[c.ID]; resolve.Kind(c.Kind) == resolve.Assert && o.Status == resolve.None && o.Into != "" {
			folded[o.Into] = append(folded[o.Into], c.Episode)
		}
	}
	for _, c := range claims {
		o := out[c.ID]
		f, has := live[c.ID]
		delete(live, c.ID)
		if resolve.Kind(c.Kind) == resolve.End || o.Status == resolve.None {
			if has {
				bad("%s has a live version but is not a fact of its own", c.ID)
			}
			continue
		}
		if !has {
			bad("fact %s (%s) has no live version", c.ID, c.Object)
			continue
		}
		if !f.ValidFrom.Equal(fromNanos(c.ValidFrom)) || nanos(f.ValidTo) != o.ValidTo || int(f.Status) != int(o.Status) || f.Reinforced != o.Reinforced {
			bad("fact %s (%s): stored [%v, %v) %s ×%d, resolver says valid from %v to %v, status %d ×%d",
				c.ID, c.Object, f.ValidFrom, f.ValidTo, f.Status, f.Reinforced, fromNanos(c.ValidFrom), fromNanos(o.ValidTo), o.Status, o.Reinforced)
		}
		// A store written before versions listed their support may hold
		// fewer until Rebuild, never others.
		want := support{folded: folded}.episodes(c, nil)
		if want == nil {
			want = []uint64{c.Episode}
		}
		if got := f.Episodes; !slices.Contains(got, c.Episode) || slices.ContainsFunc(got, func(ep uint64) bool { return !slices.Contains(want, ep) }) {
			bad("fact %s (%s): supported by episodes %v, its claims say %v", c.ID, c.Object, got, want)
		}
	}
	for id := range live {
		bad("live version %s has no claim", id)
	}
	return errs
}
