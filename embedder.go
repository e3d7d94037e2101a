package memor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/memor-db/memor/embed"
	"github.com/memor-db/memor/extract"
	"github.com/memor-db/memor/index/hnsw"
	"github.com/memor-db/memor/kv"
)

// Store-wide keys of the embedder that built the store's vectors.
var (
	// embedderKey → the embed.Fingerprint (JSON) of the store's vectors.
	embedderKey = []byte{kv.TagMeta, 'e', 'm', 'b', 'e', 'd', 'd', 'e', 'r'}
	// reembedKey → the fingerprint a Reembed in progress moves to; while
	// it is set the store holds vectors of two embedders.
	reembedKey = []byte{kv.TagMeta, 'r', 'e', 'e', 'm', 'b', 'e', 'd'}
	// reembedDonePrefix + user: that user's vectors are the target's.
	reembedDonePrefix = []byte{kv.TagMeta, 'r', 'e', 'e', 'm', 'b', 'e', 'd', '/'}
)

// ErrEmbedderMismatch: the store's vectors were built by another embedder
// than the one it is opened with; the error is an *EmbedderMismatchError.
// Open the store with the embedder it names, or move it to the new one
// with Reembed.
var ErrEmbedderMismatch = errors.New("memor: store was embedded by another embedder")

// ErrReembedUnfinished: a Reembed was interrupted; the store holds vectors
// of two embedders until Reembed is run again (it resumes).
var ErrReembedUnfinished = errors.New("memor: an interrupted reembed must be finished")

// EmbedderMismatchError names the store's embedder and the one given.
type EmbedderMismatchError struct {
	Dir             string
	Stored, Current embed.Fingerprint
}

func (e *EmbedderMismatchError) Error() string {
	return fmt.Sprintf("memor: open %s: the store's vectors were built by embedder %s, not %s",
		e.Dir, e.Stored, e.Current)
}

// Is makes errors.Is(err, ErrEmbedderMismatch) true.
func (e *EmbedderMismatchError) Is(target error) bool { return target == ErrEmbedderMismatch }

// StoreEmbedder returns the fingerprint of the embedder that built the
// store's vectors (recorded at the first Open of this or a later build).
func (e *Engine) StoreEmbedder(ctx context.Context) (embed.Fingerprint, error) {
	release, err := e.enter(ctx)
	if err != nil {
		return embed.Fingerprint{}, err
	}
	defer release()
	f, _, err := e.storedFingerprint(embedderKey)
	return f, err
}

func (e *Engine) storedFingerprint(key []byte) (embed.Fingerprint, bool, error) {
	var f embed.Fingerprint
	v, err := e.db.Get(key)
	if errors.Is(err, kv.ErrNotFound) {
		return f, false, nil
	}
	if err != nil {
		return f, false, err
	}
	if err := json.Unmarshal(v, &f); err != nil {
		return f, false, fmt.Errorf("%w: embedder fingerprint: %v", ErrCorrupt, err)
	}
	return f, true, nil
}

// checkEmbedder refuses to open a store whose vectors another embedder
// built, and records the embedder of a store that has no record (a new
// store, or one written before fingerprints were kept: its vectors were
// built by whatever it is opened with, as before).
func (e *Engine) checkEmbedder(dir string) error {
	cur := embed.FingerprintOf(e.idx.emb)
	if _, unfinished, err := e.storedFingerprint(reembedKey); err != nil {
		return err
	} else if unfinished && !e.opts.reembed {
		return fmt.Errorf("%w: open %s: the store holds vectors of two embedders", ErrReembedUnfinished, dir)
	}
	stored, ok, err := e.storedFingerprint(embedderKey)
	if err != nil {
		return err
	}
	if e.opts.reembed {
		return nil
	}
	if ok && !stored.Same(cur) {
		return &EmbedderMismatchError{Dir: dir, Stored: stored, Current: cur}
	}
	if ok && (stored.Dim != 0 || cur.Dim == 0) {
		return nil
	}
	err = e.setKey(embedderKey, mustJSON(cur))
	if errors.Is(err, ErrReadOnly) {
		// A store on read-only media is read as it is; the record waits
		// for an Open that can write.
		e.log.Warn("memor: cannot record the store's embedder", "err", err)
		return nil
	}
	return err
}

func (e *Engine) setKey(k, v []byte) error {
	b := e.db.NewBatch()
	defer b.Close()
	if err := b.Set(k, v); err != nil {
		return err
	}
	return b.Commit()
}

// ReembedProgress is called after each user Reembed moved: done of total.
type ReembedProgress func(user string, done, total int)

// Reembed moves the store in dir to the embedder o.Embedder (nil: the
// default): it re-embeds every stored fact version and text episode from
// what the store holds, without extracting anything again, then records
// the new embedder, so that Open with it succeeds. Each user moves in one
// atomic batch; killed part way, Reembed run again with the same embedder
// resumes after the users already moved (with another, it starts over).
// Until it finishes, Open refuses the store with ErrReembedUnfinished.
func Reembed(ctx context.Context, dir string, o Options, progress ReembedProgress) error {
	o.reembed = true
	e, err := Open(dir, o)
	if err != nil {
		return err
	}
	err = e.reembedAll(ctx, progress)
	if cerr := e.Close(); err == nil {
		err = cerr
	}
	return err
}

func (e *Engine) reembedAll(ctx context.Context, progress ReembedProgress) error {
	release, err := e.enter(ctx)
	if err != nil {
		return err
	}
	defer release()
	target := embed.FingerprintOf(e.idx.emb)
	prev, started, err := e.storedFingerprint(reembedKey)
	if err != nil {
		return err
	}
	if started && prev != target && !(prev.Dim == 0 && prev.Name == target.Name && prev.Model == target.Model) {
		// Another target: what was moved must move again.
		if err := e.db.DeleteRange(reembedDonePrefix, kv.PrefixEnd(reembedDonePrefix)); err != nil {
			return err
		}
		started = false
	}
	if !started {
		if err := e.setKey(reembedKey, mustJSON(target)); err != nil {
			return err
		}
	}
	users, err := e.users(ctx)
	if err != nil {
		return err
	}
	for i, u := range users {
		_, err := e.db.Get(append(append([]byte(nil), reembedDonePrefix...), u...))
		if err != nil && !errors.Is(err, kv.ErrNotFound) {
			return err
		}
		if err != nil { // not moved yet
			if err := e.reembedUser(ctx, u); err != nil {
				return fmt.Errorf("memor: reembed user %q: %w", u, err)
			}
		}
		if progress != nil {
			progress(u, i+1, len(users))
		}
	}
	b := e.db.NewBatch()
	defer b.Close()
	target = embed.FingerprintOf(e.idx.emb) // the dimension is known now
	for _, err := range []error{
		b.Set(embedderKey, mustJSON(target)),
		b.Delete(reembedKey),
		b.DeleteRange(reembedDonePrefix, kv.PrefixEnd(reembedDonePrefix)),
	} {
		if err != nil {
			return err
		}
	}
	return b.Commit()
}

// reembedBatch is how many texts one Embed call of Reembed gets.
const reembedBatch = 256

// reembedUser replaces user's vector index with one built from the new
// embedder's vectors of the same documents: every active version (the
// text the write path embeds, factText) and every indexed text episode.
func (e *Engine) reembedUser(ctx context.Context, user string) error {
	unlock := e.lockUser(user)
	defer unlock()
	var docs []uint32
	var texts []string
	for _, sub := range []kv.Sub{kv.SubLive, kv.SubHistory, kv.SubArchive} {
		err := e.db.Scan(ctx, kv.UserKey(user, sub), func(_, v []byte) error {
			f, err := decodeFact(user, v)
			if err != nil || f.Status != Active {
				return err
			}
			docs, texts = append(docs, f.Doc), append(texts, e.preds.factText(&f))
			return nil
		})
		if err != nil {
			return err
		}
	}
	prefix := kv.UserKey(user, kv.SubDoc)
	err := e.db.Scan(ctx, prefix, func(k, v []byte) error {
		if len(v) < 9 || v[0] != docEpisode {
			return nil
		}
		seq := kv.NewDecoder(v[1:9]).Uint64()
		ep, err := getEpisode(e.db, user, seq)
		if err != nil {
			return fmt.Errorf("%w: episode %d: %v", ErrCorrupt, seq, err)
		}
		docs = append(docs, kv.NewDecoder(k[len(prefix):]).Uint32())
		texts = append(texts, extract.StripFenced(ep.Text))
		return nil
	})
	if err != nil {
		return err
	}
	b := e.db.NewBatch()
	defer b.Close()
	vp := kv.UserKey(user, kv.SubVector)
	if err := b.DeleteRange(vp, kv.PrefixEnd(vp)); err != nil {
		return err
	}
	var ix *hnsw.Index
	for start := 0; start < len(texts); start += reembedBatch {
		end := min(start+reembedBatch, len(texts))
		vs, err := e.idx.emb.Embed(ctx, texts[start:end])
		if err != nil {
			return fmt.Errorf("memor: embed: %w", err)
		}
		if len(vs) != end-start {
			return fmt.Errorf("memor: embed: %d vectors for %d texts", len(vs), end-start)
		}
		if ix == nil {
			ix = hnsw.New(len(vs[0]), vp, e.idx.hnswO)
			ix.Reserve(len(texts))
		}
		for i, v := range vs {
			if err := ix.Add(nil, docs[start+i], v); err != nil {
				return err
			}
		}
	}
	if ix != nil {
		if err := ix.Flush(b); err != nil {
			return err
		}
	}
	if err := b.Set(append(append([]byte(nil), reembedDonePrefix...), user...), nil); err != nil {
		return err
	}
	e.commits[stripe(user)].Add(1)
	if err := b.Commit(); err != nil {
		return err
	}
	e.idx.dropUser(user)
	return nil
}
