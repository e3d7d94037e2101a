package memor

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/memor-db/memor/kv"
)

// epochFormat is the first format whose builds fold a claim at 0 ns
// (1970-01-01T00:00:00Z) as the instant it is.
const epochFormat = 5

// finishUpgrade does what raising an older store's format number (kv.Open)
// does not: for a store of format 4 or older, it rebuilds every user with
// a claim at the Unix epoch, whose versions the older build folded as if
// 0 ns were "open" or "the zero time" (a value superseded or ended then
// still open, a value from then valid from year 1). Rebuild replays the
// user's episode log, so the user's versions, history included, become
// what this build derives; users without such a claim are not touched. A
// crash part way leaves the marker, and the next Open finishes.
func (e *Engine) finishUpgrade(ctx context.Context) error {
	from, err := e.db.UpgradedFrom()
	if err != nil || from == 0 {
		return err
	}
	if from < epochFormat {
		users, err := e.users(ctx)
		if err != nil {
			return err
		}
		for _, u := range users {
			has, err := e.hasEpochClaim(ctx, u)
			if err != nil {
				return err
			}
			if !has {
				continue
			}
			e.log.Info("memor: rebuilding a user of an older store with a claim at 1970-01-01", "format", from)
			if err := e.Rebuild(ctx, u); err != nil {
				return fmt.Errorf("memor: upgrade from format %d: rebuild: %w", from, err)
			}
		}
	}
	return e.db.FinishUpgrade()
}

// hasEpochClaim reports whether one of user's claims is at 0 ns: the
// claim key ends vf:8 id:16.
func (e *Engine) hasEpochClaim(ctx context.Context, user string) (bool, error) {
	epoch := kv.AppendInt64(nil, 0)
	found := false
	err := e.db.Scan(ctx, kv.UserKey(user, kv.SubClaim), func(k, _ []byte) error {
		if len(k) >= 8+idLen && bytes.Equal(k[len(k)-8-idLen:len(k)-idLen], epoch) {
			found = true
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return false, err
	}
	return found, nil
}
