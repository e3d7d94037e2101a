package memor

import (
	"context"
	"sort"
	"time"

	"github.com/memor-db/memor/internal/norm"
	"github.com/memor-db/memor/kv"
)

// State returns the current beliefs of user: versions believed now and
// valid now.
func (e *Engine) State(ctx context.Context, user string) ([]Fact, error) {
	now := e.now()
	return e.visible(ctx, user, now, now, true)
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
	return e.visible(ctx, user, validAt.UTC(), knownAt.UTC(), false)
}

func (e *Engine) visible(ctx context.Context, user string, validAt, knownAt time.Time, liveOnly bool) ([]Fact, error) {
	release, err := e.admit(ctx, user)
	if err != nil {
		return nil, err
	}
	defer release()
	subs := []kv.Sub{kv.SubLive}
	if !liveOnly {
		subs = append(subs, kv.SubHistory, kv.SubArchive)
	}
	var out []Fact
	for _, sub := range subs {
		err := e.db.Scan(ctx, kv.UserKey(user, sub), func(_, v []byte) error {
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
	release, err := e.admit(ctx, user)
	if err != nil {
		return nil, err
	}
	defer release()
	prefix := kv.AppendString(kv.AppendString(nil, norm.Key(subject)), e.preds.canonical(predicate))
	var out []Fact
	for _, sub := range []kv.Sub{kv.SubLive, kv.SubHistory, kv.SubArchive} {
		err := e.db.Scan(ctx, userKey(user, sub, prefix), func(_, v []byte) error {
			f, err := decodeFact(user, v)
			out = append(out, f)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	sortFacts(out)
	return out, nil
}

// Conflicts returns the contested facts memor holds for review: stored,
// visible in History, never served as state.
func (e *Engine) Conflicts(ctx context.Context, user string) ([]Fact, error) {
	release, err := e.admit(ctx, user)
	if err != nil {
		return nil, err
	}
	defer release()
	var out []Fact
	err = e.db.Scan(ctx, kv.UserKey(user, kv.SubLive), func(_, v []byte) error {
		f, err := decodeFact(user, v)
		if err == nil && f.Status == Contested {
			out = append(out, f)
		}
		return err
	})
	sortFacts(out)
	return out, err
}

// Log returns user's resolution log: every rule decision, oldest first.
func (e *Engine) Log(ctx context.Context, user string) ([]Decision, error) {
	release, err := e.admit(ctx, user)
	if err != nil {
		return nil, err
	}
	defer release()
	var out []Decision
	err = e.db.Scan(ctx, kv.UserKey(user, kv.SubLog), func(_, v []byte) error {
		d, err := decodeDecision(v)
		out = append(out, d)
		return err
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
	return e.episodes(ctx, e.db, user)
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
