package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/cluster/internal/natstest"
)

// lossyLog is the engine's EpisodeLog with lost acknowledgements: while
// lose is set, an append reaches the log and then fails as when a quorum
// stored it but its answer never came (ErrLogUnavailable, the log's
// position forgotten as Log.Append forgets it on any error).
type lossyLog struct {
	*Log
	lose atomic.Bool
}

func (l *lossyLog) Append(ctx context.Context, user string, seq uint64, record []byte) error {
	if err := l.Log.Append(ctx, user, seq, record); err != nil || !l.lose.Load() {
		return err
	}
	l.drop(user)
	return fmt.Errorf("%w: the acknowledgement was lost", ErrLogUnavailable)
}

// TestRetriedAddIdempotent: an Add whose append was stored but answered
// ErrLogUnavailable, retried with its idempotency key once the log
// answers, is one episode: the retry is refused as behind, the node
// copies the stored episode (with its key) and the repeat returns it.
// Without the key the retry would store the text a second time.
func TestRetriedAddIdempotent(t *testing.T) {
	ctx := context.Background()
	s := natstest.Server(t, "")
	var l *lossyLog
	n, e := joinWith(t, s.ClientURL(), func(lg *Log) memor.EpisodeLog { l = &lossyLog{Log: lg}; return l },
		Config{Node: "m1", Shards: 1, LeaseTTL: 10 * time.Second})
	jl := l.JS()
	waitFor(t, "m1 serving", 10*time.Second, func() bool { return len(n.Owned()) == 1 })
	add := func(text, key string, rep *bool) error {
		return n.Write(ctx, "u", func(e *memor.Engine) error {
			_, err := e.Add(ctx, "u", text, memor.Sync(), memor.IdempotencyKey(key), memor.Repeated(rep))
			return err
		})
	}
	var rep bool
	if err := add("I live in Paris.", "k0", &rep); err != nil || rep {
		t.Fatalf("first Add: %v, repeated %v", err, rep)
	}
	l.lose.Store(true)
	if err := add("I moved to Lyon.", "k1", &rep); !errors.Is(err, ErrLogUnavailable) {
		t.Fatalf("Add with its acknowledgement lost: %v, want ErrLogUnavailable", err)
	}
	l.lose.Store(false)
	if err := add("I moved to Lyon.", "k1", &rep); err != nil || !rep {
		t.Fatalf("the retry: %v, repeated %v; want the stored episode returned", err, rep)
	}
	if got := readLog(t, jl, "u"); len(got) != 2 {
		t.Fatalf("the log holds %d episodes of u, want 2 (one per write)", len(got))
	}
	eps, err := e.Episodes(ctx, "u")
	if err != nil || len(eps) != 2 || eps[1].Text != "I moved to Lyon." || eps[1].Key != "k1" {
		t.Fatalf("the store holds %+v (%v); want Paris then Lyon under k1", eps, err)
	}
	fs, err := e.State(ctx, "u")
	if err != nil || len(fs) != 1 || fs[0].Object != "Lyon" {
		t.Fatalf("state %+v (%v), want lives in Lyon", fs, err)
	}
}
