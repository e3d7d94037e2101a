package memor

import (
	"context"

	"github.com/memor-db/memor/kv"
)

// Versions returns every stored version of every fact of user, whatever
// its status, intervals or keyspace (live, history, archive): the whole
// bitemporal record an inspector draws, ordered as History orders one
// slot's (subject, predicate, context, valid time, recording time).
func (e *Engine) Versions(ctx context.Context, user string) ([]Fact, error) {
	var out []Fact
	err := e.read(ctx, user, func(r kv.Reader) error {
		for _, sub := range []kv.Sub{kv.SubLive, kv.SubHistory, kv.SubArchive} {
			err := r.Scan(ctx, kv.UserKey(user, sub), func(_, v []byte) error {
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

// ForgetCounts says what Forget of a user would delete, by kind: the dry
// run of an erasure.
type ForgetCounts struct {
	Episodes int `json:"episodes"`
	// Failed counts the episodes whose extraction failed.
	Failed int `json:"failed"`
	// Live, History and Archived count fact versions by keyspace: believed
	// now, expired, pruned.
	Live     int `json:"live"`
	History  int `json:"history"`
	Archived int `json:"archived"`
	// Decisions counts the entries of the resolution log.
	Decisions int `json:"decisions"`
	// Keys counts every stored key of the user, index postings included.
	Keys int `json:"keys"`
}

// Versions is the number of fact versions of every keyspace.
func (c ForgetCounts) Versions() int { return c.Live + c.History + c.Archived }

// ForgetPlan counts what Forget(user) would delete, on one snapshot,
// without deleting anything. A user with nothing stored counts zero.
func (e *Engine) ForgetPlan(ctx context.Context, user string) (ForgetCounts, error) {
	var c ForgetCounts
	release, err := e.admitStored(ctx, user)
	if err != nil {
		return c, err
	}
	defer release()
	counts := map[kv.Sub]*int{kv.SubEpisode: &c.Episodes, kv.SubEpState: &c.Failed, kv.SubLive: &c.Live,
		kv.SubHistory: &c.History, kv.SubArchive: &c.Archived, kv.SubLog: &c.Decisions}
	err = e.db.View(func(s *kv.Snapshot) error {
		for sub, n := range counts {
			if err := s.Scan(ctx, kv.UserKey(user, sub), func(_, _ []byte) error { *n++; return nil }); err != nil {
				return err
			}
		}
		return s.Scan(ctx, kv.UserRoot(user), func(_, _ []byte) error { c.Keys++; return nil })
	})
	return c, err
}
