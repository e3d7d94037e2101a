package memor

import (
	"context"
	"errors"
	"iter"
	"sort"
	"time"

	"github.com/memor-db/memor/internal/norm"
	"github.com/memor-db/memor/kv"
)

// read admits a read of user and runs fn on one snapshot of the store:
// every read of a public read method goes through it, so that a read
// spanning several scans (live, history, archive) sees one committed
// state, never a version a concurrent write or Prune moved between two
// keyspaces in both or in neither.
func (e *Engine) read(ctx context.Context, user string, fn func(r kv.Reader) error) error {
	release, err := e.admit(ctx, user)
	if err != nil {
		return err
	}
	defer release()
	return e.db.View(func(s *kv.Snapshot) error { return fn(s) })
}

// State returns the current beliefs of user: versions believed now and
// valid now.
func (e *Engine) State(ctx context.Context, user string) ([]Fact, error) {
	var out []Fact
	err := e.read(ctx, user, func(r kv.Reader) error {
		// now is read after the snapshot is taken: every version the
		// snapshot holds was recorded (and every expiry made) at or
		// before it, so the live keyspace alone holds what is visible.
		// Read before, a write recorded after now and committed before
		// the snapshot would hide both its version (recorded later) and
		// the one it expired (no longer live).
		now := e.now()
		var err error
		out, err = visible(ctx, r, user, now, now, true)
		return err
	})
	return out, err
}

// AsOf returns what memor believed at knownAt to be true at validAt
// (DESIGN §2). Time travel: AsOf(t, now). Audit: AsOf(t, t).
func (e *Engine) AsOf(ctx context.Context, user string, validAt, knownAt time.Time) ([]Fact, error) {
	if err := checkTime(validAt, "validAt"); err != nil {
		return nil, err
	}
	if err := checkTime(knownAt, "knownAt"); err != nil {
		return nil, err
	}
	var out []Fact
	err := e.read(ctx, user, func(r kv.Reader) error {
		var err error
		out, err = visible(ctx, r, user, validAt.UTC(), knownAt.UTC(), false)
		return err
	})
	return out, err
}

func visible(ctx context.Context, r kv.Reader, user string, validAt, knownAt time.Time, liveOnly bool) ([]Fact, error) {
	subs := []kv.Sub{kv.SubLive}
	if !liveOnly {
		subs = append(subs, kv.SubHistory, kv.SubArchive)
	}
	var out []Fact
	for _, sub := range subs {
		err := r.Scan(ctx, kv.UserKey(user, sub), func(_, v []byte) error {
			f, err := decodeFact(user, v)
			if err != nil {
				return err
			}
			if f.VisibleAt(validAt, knownAt) {
				out = append(out, f)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sortFacts(out)
	return out, nil
}

// History returns every version of every fact of (subject, predicate) in
// every context: both intervals, status and the rule that made each
// version, ordered by context, valid time and recording time. HistorySeq
// yields the same versions in the same order without holding them all.
func (e *Engine) History(ctx context.Context, user, subject, predicate string) ([]Fact, error) {
	var out []Fact
	for f, err := range e.HistorySeq(ctx, user, subject, predicate) {
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// HistorySeq is History as an iterator: it reads one snapshot of the
// store and holds one context's versions at a time (the live, history and
// archive keyspaces each keep a slot's versions in context order, and
// each context's are merged and sorted as History sorts them). An error
// is yielded once, with a zero Fact, and ends the sequence.
//
// The snapshot, and the engine's read gate, are held until the loop ends
// or breaks: a Close called meanwhile waits for it, so the loop must not
// call Close, and should not stay idle long (the snapshot holds back
// compactions).
func (e *Engine) HistorySeq(ctx context.Context, user, subject, predicate string) iter.Seq2[Fact, error] {
	return func(yield func(Fact, error) bool) {
		prefix := kv.AppendString(kv.AppendString(nil, norm.Key(subject)), e.preds.canonical(predicate))
		err := e.read(ctx, user, func(r kv.Reader) error {
			return historyGroups(ctx, r, user, prefix, func(group []Fact) error {
				sortFacts(group)
				for _, f := range group {
					if !yield(f, nil) {
						return errStopSeq
					}
				}
				return nil
			})
		})
		if err != nil && !errors.Is(err, errStopSeq) {
			yield(Fact{}, err)
		}
	}
}

// errStopSeq ends a scan whose iterator's loop broke.
var errStopSeq = errors.New("memor: iteration stopped")

// historyGroups calls fn with the versions of one context at a time, in
// context order, each group the live versions, then the history's, then
// the archive's, in key order: the order History's stable sort starts
// from, so sorting each group gives History's order. The three keyspaces
// are walked side by side, each by its own scan.
func historyGroups(ctx context.Context, r kv.Reader, user string, prefix []byte, fn func([]Fact) error) error {
	type head struct {
		f    Fact
		ctx  string
		ok   bool
		next func() (Fact, error, bool)
		stop func()
	}
	var heads [3]head
	for i, sub := range []kv.Sub{kv.SubLive, kv.SubHistory, kv.SubArchive} {
		next, stop := iter.Pull2(scanFacts(ctx, r, user, userKey(user, sub, prefix)))
		defer stop()
		heads[i] = head{next: next, stop: stop}
	}
	advance := func(h *head) error {
		f, err, ok := h.next()
		if err != nil {
			return err
		}
		h.f, h.ok, h.ctx = f, ok, norm.Key(f.Context)
		return nil
	}
	for i := range heads {
		if err := advance(&heads[i]); err != nil {
			return err
		}
	}
	var group []Fact
	for {
		cur, found := "", false
		for _, h := range heads {
			if h.ok && (!found || h.ctx < cur) {
				cur, found = h.ctx, true
			}
		}
		if !found {
			return nil
		}
		group = group[:0]
		for i := range heads {
			h := &heads[i]
			for h.ok && h.ctx == cur {
				group = append(group, h.f)
				if err := advance(h); err != nil {
					return err
				}
			}
		}
		if err := fn(group); err != nil {
			return err
		}
	}
}

// scanFacts yields the versions stored under prefix in key order, each
// decoded; a decoding or scan error is yielded once and ends it.
func scanFacts(ctx context.Context, r kv.Reader, user string, prefix []byte) iter.Seq2[Fact, error] {
	return func(yield func(Fact, error) bool) {
		err := r.Scan(ctx, prefix, func(_, v []byte) error {
			f, err := decodeFact(user, v)
			if err != nil {
				return err
			}
			if !yield(f, nil) {
				return errStopSeq
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStopSeq) {
			yield(Fact{}, err)
		}
	}
}

// Conflicts returns the contested facts memor holds for review: stored,
// visible in History, never served as state.
func (e *Engine) Conflicts(ctx context.Context, user string) ([]Fact, error) {
	var out []Fact
	err := e.read(ctx, user, func(r kv.Reader) error {
		return r.Scan(ctx, kv.UserKey(user, kv.SubLive), func(_, v []byte) error {
			f, err := decodeFact(user, v)
			if err == nil && f.Status == Contested {
				out = append(out, f)
			}
			return err
		})
	})
	sortFacts(out)
	return out, err
}

// Log returns user's resolution log: every rule decision, oldest first.
// LogSeq yields the same decisions without holding them all.
func (e *Engine) Log(ctx context.Context, user string) ([]Decision, error) {
	var out []Decision
	for d, err := range e.LogSeq(ctx, user) {
		if err != nil {
			return out, err
		}
		out = append(out, d)
	}
	return out, nil
}

// LogSeq is Log as an iterator over one snapshot, streamed from the store
// in log order. An error is yielded once, with a zero Decision, and ends
// the sequence. As with HistorySeq, the snapshot and the engine's read
// gate are held until the loop ends or breaks.
func (e *Engine) LogSeq(ctx context.Context, user string) iter.Seq2[Decision, error] {
	return func(yield func(Decision, error) bool) {
		err := e.read(ctx, user, func(r kv.Reader) error {
			return r.Scan(ctx, kv.UserKey(user, kv.SubLog), func(_, v []byte) error {
				d, err := decodeDecision(v)
				if err != nil {
					return err
				}
				if !yield(d, nil) {
					return errStopSeq
				}
				return nil
			})
		})
		if err != nil && !errors.Is(err, errStopSeq) {
			yield(Decision{}, err)
		}
	}
}

// Episodes returns user's episode log, oldest first. Like Forget, it also
// accepts a user ID that ValidUser refuses but an earlier version stored,
// so that export keeps every user. EpisodesSeq yields the same episodes
// without holding them all.
func (e *Engine) Episodes(ctx context.Context, user string) ([]Episode, error) {
	var out []Episode
	for ep, err := range e.EpisodesSeq(ctx, user) {
		if err != nil {
			return out, err
		}
		out = append(out, ep)
	}
	return out, nil
}

// EpisodesSeq is Episodes as an iterator over one snapshot, streamed from
// the store in log order (Export writes through it). An error is yielded
// once, with a zero Episode, and ends the sequence. As with HistorySeq,
// the snapshot and the engine's read gate are held until the loop ends or
// breaks.
func (e *Engine) EpisodesSeq(ctx context.Context, user string) iter.Seq2[Episode, error] {
	return func(yield func(Episode, error) bool) {
		release, err := e.admitStored(ctx, user)
		if err != nil {
			yield(Episode{}, err)
			return
		}
		defer release()
		err = e.db.View(func(r *kv.Snapshot) error {
			return r.Scan(ctx, kv.UserKey(user, kv.SubEpisode), func(_, v []byte) error {
				ep, err := decodeEpisode(user, v)
				if err != nil {
					return err
				}
				if !yield(ep, nil) {
					return errStopSeq
				}
				return nil
			})
		})
		if err != nil && !errors.Is(err, errStopSeq) {
			yield(Episode{}, err)
		}
	}
}

// getEpisode reads episode seq of user; kv.ErrNotFound if there is none.
func getEpisode(r kv.Reader, user string, seq uint64) (Episode, error) {
	v, err := r.Get(seqKey(user, kv.SubEpisode, seq))
	if err != nil {
		return Episode{}, err
	}
	return decodeEpisode(user, v)
}

// liveVersions returns the current versions of a slot by fact ID.
func liveVersions(ctx context.Context, r kv.Reader, user string, slot []byte) (map[string]Fact, error) {
	live := map[string]Fact{}
	err := r.Scan(ctx, userKey(user, kv.SubLive, slot), func(_, v []byte) error {
		f, err := decodeFact(user, v)
		live[f.ID] = f
		return err
	})
	return live, err
}

func (e *Engine) episodes(ctx context.Context, r kv.Reader, user string) ([]Episode, error) {
	var out []Episode
	err := r.Scan(ctx, kv.UserKey(user, kv.SubEpisode), func(_, v []byte) error {
		ep, err := decodeEpisode(user, v)
		out = append(out, ep)
		return err
	})
	return out, err
}

// sortFacts orders facts by subject, predicate, context, valid time, then
// recording time: timelines read top to bottom.
func sortFacts(fs []Fact) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := &fs[i], &fs[j]
		if x, y := norm.Key(a.Subject), norm.Key(b.Subject); x != y {
			return x < y
		}
		if a.Predicate != b.Predicate {
			return a.Predicate < b.Predicate
		}
		if x, y := norm.Key(a.Context), norm.Key(b.Context); x != y {
			return x < y
		}
		if !a.ValidFrom.Equal(b.ValidFrom) {
			return a.ValidFrom.Before(b.ValidFrom)
		}
		if a.ID != b.ID {
			return a.ID < b.ID
		}
		return a.RecordedAt.Before(b.RecordedAt)
	})
}
