package memor

import (
	"bytes"
	"context"
	"fmt"

	"github.com/memor-db/memor/kv"
)

// judgeKey is where user's cached judge verdict on pred is kept: inside the
// user's keyspace, so that Forget removes it and no other user's facts are
// resolved by it.
func judgeKey(user, pred string) []byte {
	return kv.AppendString(kv.UserKey(user, kv.SubJudge), pred)
}

// judgeRange is the keyspace of the judge verdicts of formats 1–4, shared
// by every user.
var judgeRange = [2][]byte{{kv.TagJudge}, {kv.TagJudge + 1}}

// upgradeJudgeVerdicts moves the judge verdicts of stores written by
// formats 1–4 ('J' esc(predicate), one for every user) into the users
// whose claims name the predicate, so that their facts resolve as before
// (Rebuild asks the judge nothing new); a verdict no user's claim names
// (a forgotten user's) is dropped. The old keyspace is then deleted and
// compacted out of the files like a Forget's (the same marker makes the
// next Open finish the job after a crash). It runs at every Open, where it
// costs one seek once the store holds no old verdict, whatever format
// number the store has.
func (e *Engine) upgradeJudgeVerdicts(ctx context.Context) error {
	verdicts := map[string][]byte{}
	found := false
	err := e.db.ScanRange(ctx, judgeRange[0], judgeRange[1], func(k, v []byte) error {
		found = true
		d := kv.NewDecoder(k[1:])
		pred := d.String()
		if d.Err == nil && len(d.Rest()) == 0 && len(v) == 1 {
			verdicts[pred] = bytes.Clone(v)
		}
		return nil
	})
	if err != nil || !found {
		return err
	}
	users, err := e.users(ctx)
	if err != nil {
		return err
	}
	b := e.db.NewBatch()
	defer b.Close()
	moved := 0
	for _, u := range users {
		p := kv.UserKey(u, kv.SubClaim)
		seen := map[string]bool{}
		err := e.db.Scan(ctx, p, func(k, _ []byte) error {
			d := kv.NewDecoder(k[len(p):])
			_ = d.String() // subject
			pred := d.String()
			if d.Err != nil {
				return fmt.Errorf("%w: claim key %x: %v", ErrCorrupt, k, d.Err)
			}
			v, ok := verdicts[pred]
			if !ok || seen[pred] {
				return nil
			}
			seen[pred] = true
			moved++
			return b.Set(judgeKey(u, pred), v)
		})
		if err != nil {
			return err
		}
	}
	if err := b.DeleteRange(judgeRange[0], judgeRange[1]); err != nil {
		return err
	}
	marker := forgetMarker()
	if err := b.Set(marker, nil); err != nil {
		return err
	}
	if err := b.Commit(); err != nil {
		return err
	}
	e.log.Info("memor: judge verdicts moved into their users' keyspaces", "verdicts", len(verdicts), "copies", moved)
	return e.finishForget(ctx, [][2][]byte{judgeRange}, [][]byte{marker})
}
