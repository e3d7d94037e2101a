package memor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memor-db/memor/kv"
)

// errSkip: a document the caller's filter rejected before loading.
var errSkip = errors.New("skip")

// queryViewTries is how many times queryView builds its view without the
// user's lock before it takes the lock to build it.
const queryViewTries = 3

// qview is what one Query reads: the user's indexes and the documents
// visible in them, and one snapshot of the store that agrees with them.
type qview struct {
	ui   *userIndex
	snap *kv.Snapshot
	// facts: the versions visible at (validAt, knownAt) in the indexes,
	// less the pending ones: each is visible in snap too.
	facts *roaring.Bitmap
	// pending: documents a write in progress changed in the indexes and
	// has not committed (nil if none). They are candidates like facts,
	// and loadDoc reads them, and whether they are visible, from snap.
	pending               *roaring.Bitmap
	validAt, knownAt, now time.Time
}

// queryView takes the consistent view a Query reads. The indexes are
// changed by a write before it commits, and the store is not: read
// without care, a Query could pair the indexes after a write with the
// store before it and serve neither the version it expired nor the one
// it made, or the indexes before with the store after. So the view is
// built between two reads of the user's commit counter, and rebuilt if a
// commit came between: the indexes then differ from the snapshot at most
// by the pending documents of the write in progress, which are read from
// the snapshot. After queryViewTries commits in the way, the view is built
// under the user's lock, where no write is in progress.
//
// Zero validAt and knownAt mean now (textAt, if not zero, for validAt),
// now read after the counter: every version the snapshot holds was
// recorded at or before it.
func (e *Engine) queryView(ctx context.Context, user string, validAt, knownAt, textAt time.Time) (*qview, error) {
	commits := &e.commits[stripe(user)]
	for try := 1; ; try++ {
		locked := try > queryViewTries
		var unlock func()
		if locked {
			unlock = e.lockUser(user)
		}
		before := commits.Load()
		qv := &qview{validAt: validAt, knownAt: knownAt, now: e.now()}
		if qv.validAt.IsZero() {
			qv.validAt = textAt
		}
		if qv.validAt.IsZero() {
			qv.validAt = qv.now
		}
		if qv.knownAt.IsZero() {
			qv.knownAt = qv.now
		}
		var err error
		if locked {
			qv.ui, err = e.idx.get(ctx, e.db, user)
		} else {
			qv.ui, err = e.idx.view(ctx, user)
		}
		if err != nil {
			if unlock != nil {
				unlock()
			}
			return nil, err
		}
		// The view: fact versions visible at (validAt, knownAt). The
		// pending documents are read after it: a write marks a document
		// before it changes it, so every change the view reflects and the
		// store may not is among them.
		if qv.validAt.Equal(qv.now) && qv.knownAt.Equal(qv.now) {
			qv.facts = qv.ui.tmp.Current(qv.now)
		} else {
			qv.facts = qv.ui.tmp.Visible(qv.validAt, qv.knownAt)
		}
		qv.pending = qv.ui.pendingDocs()
		if e.hookQueryView != nil && !locked {
			e.hookQueryView(try)
		}
		qv.snap = e.db.Snapshot()
		if unlock != nil {
			unlock()
		}
		if locked || commits.Load() == before {
			if qv.pending != nil {
				// facts may be shared (temporal.Current caches it).
				qv.facts = roaring.AndNot(qv.facts, qv.pending)
			}
			return qv, nil
		}
		_ = qv.snap.Close()
	}
}

// loadDoc fills in the fact version or episode a document names, read
// from the view's snapshot. keep, if not nil, sees a version's normalised
// subject first (it is in the document map) and can reject it without the
// version being read. A version not visible at the view's instants in the
// snapshot (a pending one) is errSkip, one the snapshot does not hold
// kv.ErrNotFound.
//
// With shallow, an episode whose document map value holds its times and
// speaker is not read: c.episode holds what ranking it needs (Seq, Kind,
// At, RecordedAt, Speaker, User) and c.shallow is set; readEpisodes reads
// the episodes then served. A query's candidates outnumber what it
// serves, and each episode is a long message's read.
func (qv *qview) loadDoc(user string, c *candidate, keep func(subjKey string) bool, shallow bool) error {
	var v []byte
	ok := false
	if qv.pending == nil || !qv.pending.Contains(c.doc) {
		v, ok = qv.ui.docValue(c.doc)
		if ok && shallow && len(v) >= 9 && v[0] == docEpisode {
			if d := qv.ui.episodeDocOf(c.doc); d != nil && d.voiced {
				c.episode = &Episode{User: user, Seq: d.seq, Kind: EpisodeText,
					At: fromNanos(d.at), RecordedAt: fromNanos(d.rec), Speaker: d.speaker}
				c.shallow = true
				return nil
			}
		}
	}
	if !ok {
		var err error
		if v, err = qv.snap.Get(kv.AppendUint32(kv.UserKey(user, kv.SubDoc), c.doc)); err != nil {
			return err
		}
	}
	if len(v) < 9 {
		return fmt.Errorf("%w: document %d", ErrCorrupt, c.doc)
	}
	seq := kv.NewDecoder(v[1:9]).Uint64()
	switch v[0] {
	case docEpisode:
		ep, err := getEpisode(qv.snap, user, seq)
		if err != nil {
			return err
		}
		c.episode, c.shallow = &ep, false
		return nil
	case docVersion:
		suf := v[9:]
		if len(suf) < 8 {
			return fmt.Errorf("%w: document %d", ErrCorrupt, c.doc)
		}
		if keep != nil && !keep(kv.NewDecoder(suf).String()) {
			return errSkip
		}
		f, err := qv.version(user, suf)
		if err != nil {
			return err
		}
		if !f.VisibleAt(qv.validAt, qv.knownAt) {
			return errSkip
		}
		c.fact = &f
		return nil
	}
	return fmt.Errorf("%w: document %d has kind %q", ErrCorrupt, c.doc, v[0])
}

// version reads the version whose key suffix (slot vf id rec) is suf:
// live, in the history or in the archive.
func (qv *qview) version(user string, suf []byte) (Fact, error) {
	claimSuf, rec := suf[:len(suf)-8], kv.NewDecoder(suf[len(suf)-8:]).Int64()
	fv, err := qv.snap.Get(userKey(user, kv.SubLive, claimSuf))
	if err == nil {
		f, err := decodeFact(user, fv)
		if err != nil || nanos(f.RecordedAt) == rec {
			return f, err
		}
	} else if !errors.Is(err, kv.ErrNotFound) {
		return Fact{}, err
	}
	for _, sub := range []kv.Sub{kv.SubHistory, kv.SubArchive} {
		fv, err := qv.snap.Get(userKey(user, sub, suf))
		if errors.Is(err, kv.ErrNotFound) {
			continue
		}
		if err != nil {
			return Fact{}, err
		}
		return decodeFact(user, fv)
	}
	return Fact{}, kv.ErrNotFound
}
