package memor

import (
	"context"
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
// version, ordered by context, valid time and recording time.
func (e *Engine) History(ctx context.Context, user, subject, predicate string) ([]Fact, error) {
	prefix := kv.AppendString(kv.AppendString(nil, norm.Key(subject)), e.preds.canonical(predicate))
	var out []Fact
	err := e.read(ctx, user, func(r kv.Reader) error {
		for _, sub := range []kv.Sub{kv.SubLive, kv.SubHistory, kv.SubArchive} {
			err := r.Scan(ctx, userKey(user, sub, prefix), func(_, v []byte) error {
				f, err := decodeFact(user, v)
				out = append(out, f)
				return err
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sortFacts(out)
	return out, nil
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
func (e *Engine) Log(ctx context.Context, user string) ([]Decision, error) {
	var out []Decision
	err := e.read(ctx, user, func(r kv.Reader) error {
		return r.Scan(ctx, kv.UserKey(user, kv.SubLog), func(_, v []byte) error {
			d, err := decodeDecision(v)
			out = append(out, d)
			return err
		})
	})
	return out, err
}

// Episodes returns user's episode log, oldest first. Like Forget, it also
// accepts a user ID that ValidUser refuses but an earlier version stored,
// so that export keeps every user.
func (e *Engine) Episodes(ctx context.Context, user string) ([]Episode, error) {
	release, err := e.admitStored(ctx, user)
	if err != nil {
		return nil, err
	}
	defer release()
	var out []Episode
	err = e.db.View(func(r *kv.Snapshot) error {
		var err error
		out, err = e.episodes(ctx, r, user)
		return err
	})
	return out, err
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
