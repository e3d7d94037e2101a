package memor

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/memor-db/memor/extract"
	"github.com/memor-db/memor/internal/norm"
	"github.com/memor-db/memor/kv"
)

// Ingestion (DESIGN §1): Add commits the episode durably and returns;
// workers extract and apply it. One user's episodes apply in sequence
// order; different users proceed in parallel. The queue is bounded: when
// QueueSize episodes are waiting, Add waits (respecting its context)
// rather than dropping a turn. Episodes committed but not applied when the
// process died are applied after the next Open.

// Freshness says how far ingestion has got for a user. Every episode with
// Seq ≤ Applied is reflected in reads, and Applied never goes back: a read
// made after Freshness returned reflects at least the episodes it reports
// applied (call Freshness first to label a read with a lower bound).
type Freshness struct {
	// Applied is the highest episode sequence number applied (or failed).
	Applied uint64 `json:"applied"`
	// Latest is the highest sequence number committed.
	Latest uint64 `json:"latest"`
	// Pending = Latest − Applied: committed, not yet reflected in reads.
	Pending uint64 `json:"pending"`
	// Failed counts episodes whose extraction or application failed (see
	// Retry).
	Failed int `json:"failed"`
}

// epState is the processing state of an episode, kept only for failures
// (SubEpState; layout.go).
type epState struct {
	Error  string `json:"error"`
	Failed int64  `json:"failed_at"`
}

// Sync makes Add extract and apply the episode before it returns, in the
// same atomic batch as the episode (read-your-writes without Flush). If
// the extraction fails, the episode is still stored, recorded as failed
// (see Retry), and Add returns it with an error wrapping
// ErrExtractionFailed.
func Sync() AddOption { return func(c *addConfig) { c.sync = true } }

type ingester struct {
	e       *Engine
	mu      sync.Mutex
	ready   []string
	queued  map[string]bool // scheduled or being drained
	dirty   map[string]bool // new work arrived while being drained
	counted map[string]int  // queue slots held by a user's pending episodes
	// applying holds, per user, the first episode a drain is applying:
	// its commit is visible to WaitFor before the drain has counted it
	// and timed it, so WaitFor waits for the drain to finish it too.
	applying map[string]uint64
	wake     chan struct{}
	slots    chan struct{}
	// progress is closed and replaced whenever an episode is applied.
	progress chan struct{}
	stop     context.CancelFunc
	ctx      context.Context
	wg       sync.WaitGroup
}

func newIngester(e *Engine, workers, queue int) *ingester {
	ctx, cancel := context.WithCancel(context.Background())
	in := &ingester{e: e, queued: map[string]bool{}, dirty: map[string]bool{}, counted: map[string]int{}, applying: map[string]uint64{},
		wake: make(chan struct{}, 1), slots: make(chan struct{}, queue), progress: make(chan struct{}),
		stop: cancel, ctx: ctx}
	for range workers {
		in.wg.Add(1)
		go in.work()
	}
	return in
}

// schedule marks user as having pending episodes.
func (in *ingester) schedule(user string) {
	in.mu.Lock()
	if in.queued[user] {
		in.dirty[user] = true
	} else {
		in.queued[user] = true
		in.ready = append(in.ready, user)
	}
	in.mu.Unlock()
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

func (in *ingester) next() (string, bool) {
	for {
		in.mu.Lock()
		if len(in.ready) > 0 {
			u := in.ready[0]
			in.ready = in.ready[1:]
			more := len(in.ready) > 0
			in.mu.Unlock()
			if more { // pass the wake-up on to another worker
				select {
				case in.wake <- struct{}{}:
				default:
				}
			}
			return u, true
		}
		in.mu.Unlock()
		select {
		case <-in.wake:
		case <-in.ctx.Done():
			return "", false
		}
	}
}

func (in *ingester) work() {
	defer in.wg.Done()
	for {
		user, ok := in.next()
		if !ok {
			return
		}
		if err := in.e.drain(in.ctx, user); err != nil && in.ctx.Err() == nil {
			in.e.log.Error("memor: ingestion stalled", "user", user, "err", err)
		}
		in.mu.Lock()
		if in.dirty[user] && in.ctx.Err() == nil {
			delete(in.dirty, user)
			in.ready = append(in.ready, user)
			in.mu.Unlock()
			select {
			case in.wake <- struct{}{}:
			default:
			}
			continue
		}
		delete(in.queued, user)
		delete(in.dirty, user)
		in.mu.Unlock()
	}
}

// acquire takes a queue slot for one episode, waiting while the queue is
// full.
func (in *ingester) acquire(ctx context.Context) error {
	select {
	case in.slots <- struct{}{}:
		return nil
	default:
	}
	select {
	case in.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-in.ctx.Done():
		return ErrClosed
	}
}

func (in *ingester) hold(user string) {
	in.mu.Lock()
	in.counted[user]++
	in.mu.Unlock()
}

func (in *ingester) release(n int) {
	for range n {
		<-in.slots
	}
}

// applied releases a user's queue slots and wakes waiters.
func (in *ingester) applied(user string, n int) {
	in.mu.Lock()
	held := min(n, in.counted[user])
	if in.counted[user] -= held; in.counted[user] == 0 {
		delete(in.counted, user)
	}
	close(in.progress)
	in.progress = make(chan struct{})
	in.mu.Unlock()
	in.release(held)
}

func (in *ingester) progressChan() <-chan struct{} {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.progress
}

// startApplying marks seq as being applied by a drain of user; the
// returned func clears the mark (done episodes applied, or none) and
// wakes waiters.
func (in *ingester) startApplying(user string, seq uint64) func(done int) {
	in.mu.Lock()
	in.applying[user] = seq
	in.mu.Unlock()
	return func(done int) {
		in.mu.Lock()
		delete(in.applying, user)
		in.mu.Unlock()
		in.applied(user, done)
	}
}

// settling reports whether a drain of user is still finishing an episode
// at or before seq (committed, but not yet counted and timed).
func (in *ingester) settling(user string, seq uint64) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	a, ok := in.applying[user]
	return ok && a <= seq
}

// forget drops a forgotten user's slots.
func (in *ingester) forget(user string) {
	in.mu.Lock()
	n := in.counted[user]
	in.mu.Unlock()
	in.applied(user, n)
}

// txnFloorKey holds the latest transaction time of users since forgotten.
var txnFloorKey = []byte{kv.TagMeta, 't', 'x', 'n'}

func raiseTxnFloor(b *kv.Batch, t int64) error {
	v, err := b.Get(txnFloorKey)
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		return err
	}
	if len(v) == 8 && int64(binary.BigEndian.Uint64(v)) >= t {
		return nil
	}
	return b.Set(txnFloorKey, binary.BigEndian.AppendUint64(nil, uint64(t)))
}

// recoverPending restores the clock floor and schedules every user with
// committed but unapplied episodes.
func (e *Engine) recoverPending(ctx context.Context) error {
	if v, err := e.db.Get(txnFloorKey); err == nil && len(v) == 8 {
		e.lastTick.Store(int64(binary.BigEndian.Uint64(v)))
	} else if err != nil && !errors.Is(err, kv.ErrNotFound) {
		return err
	}
	users, err := e.users(ctx)
	if err != nil {
		return err
	}
	for _, u := range users {
		m, err := loadMeta(e.db, u)
		if err != nil {
			return err
		}
		// Current reads never precede a stored transaction time, even if
		// the clock went back across the restart.
		if m.Txn > e.lastTick.Load() {
			e.lastTick.Store(m.Txn)
		}
		if m.Applied < m.Seq {
			e.ing.schedule(u)
		}
	}
	return nil
}

// commitEpisode makes ep durable without applying it. An ep with a Key
// the user's episodes hold already is not written: rep says so, and *ep
// is the stored one (see repeat).
func (e *Engine) commitEpisode(ctx context.Context, user string, ep *Episode) (rep bool, err error) {
	unlock := e.lockUser(user)
	defer unlock()
	if ep.Key != "" {
		if rep, err := repeat(e.db, user, ep); err != nil || rep {
			return rep, err
		}
	}
	t, err := e.begin(ctx, user, 0)
	if err != nil {
		return false, err
	}
	defer t.close()
	if err := t.appendEpisode(ep); err != nil {
		return false, err
	}
	return false, t.commit()
}

// drain applies user's pending episodes in order, each in its own batch.
// Extraction runs outside the user's lock, so a slow model does not block
// the user's readers or other writers.
func (e *Engine) drain(ctx context.Context, user string) error {
	release, err := e.enter(ctx)
	if err != nil {
		return err
	}
	defer release()
	for {
		m, err := loadMeta(e.db, user)
		if err != nil {
			return err
		}
		if m.Applied >= m.Seq {
			return nil
		}
		seq := m.Applied + 1
		ep, err := getEpisode(e.db, user, seq)
		if errors.Is(err, kv.ErrNotFound) {
			return nil // forgotten meanwhile
		}
		if err != nil {
			return err
		}
		settled := e.ing.startApplying(user, seq)
		actx, as := e.tel.startApply(ctx, user, seq)
		pre := e.tel.extract(actx, func(ctx context.Context) *extracted { return e.extractEpisode(ctx, nil, ep) })
		if ctx.Err() != nil {
			as.end(actx, ctx.Err())
			settled(0)
			return ctx.Err()
		}
		done, err := e.applyPending(actx, user, seq, pre, nil)
		var fails failures
		if fails.retry(err, nil) {
			done, err = e.applyPending(actx, user, seq, nil, fails)
		}
		as.end(actx, err)
		if err != nil {
			settled(0)
			return err
		}
		settled(done)
	}
}

// extracted is the outcome of running the extractor over one episode.
type extracted struct {
	ops []extract.Op
	err error
	// rec identifies the episode extracted (a Forget and a new Add can
	// reuse its sequence number).
	rec int64
}

// extractEpisode runs the extractor over a text episode, inside write t or,
// when t is nil, outside the user's lock.
func (e *Engine) extractEpisode(ctx context.Context, t *txn, ep Episode) (out *extracted) {
	if ep.Kind != EpisodeText {
		return nil
	}
	defer func() {
		// A panicking extractor fails the episode like an extractor
		// error: it is recorded as failed, and Retry runs it again.
		if r := recover(); r != nil {
			out = &extracted{err: e.panicError(r, "extraction", ep.User), rec: nanos(ep.RecordedAt)}
		}
	}()
	text := extract.StripFenced(ep.Text)
	voice := ep.voice()
	speaker := ""
	if voice != extract.User {
		speaker = voice
	}
	var ops []extract.Op
	var err error
	switch x := e.ext.(type) {
	case extract.InputExtractor:
		var names []string
		if names, err = e.knownNames(ctx, t, ep.User, voice, ep.Seq); err == nil {
			ops, err = x.ExtractInput(ctx, extract.Input{Text: text, At: ep.At, Names: names, Speaker: speaker})
		}
	case extract.KnownNamesExtractor:
		var names []string
		if names, err = e.knownNames(ctx, t, ep.User, voice, ep.Seq); err == nil {
			ops, err = x.ExtractKnown(ctx, text, ep.At, names)
		}
	default:
		ops, err = e.ext.Extract(ctx, text, ep.At)
	}
	if err == nil && speaker != "" {
		// Whatever extractor made them, first person in a spoken
		// episode is the speaker, never the owner.
		ops = extract.AttributeTo(ops, speaker)
	}
	return &extracted{ops: ops, err: err, rec: nanos(ep.RecordedAt)}
}

// knownNames lists, sorted, the people the user, or the speaker voice (see
// Episode.voice), has named as relatives or friends in any version of
// their memory, and the participants who spoke before episode seq.
func (e *Engine) knownNames(ctx context.Context, t *txn, user, voice string, seq uint64) ([]string, error) {
	var ui *userIndex
	var r kv.Reader = e.db
	var err error
	if t != nil {
		ui, err = t.idx.indexes()
		r = t.b
	} else {
		ui, err = e.idx.view(ctx, user)
	}
	if err != nil {
		return nil, err
	}
	spoke, err := ui.participants(ctx, r, user, seq)
	if err != nil {
		return nil, err
	}
	roots := []string{extract.User}
	if voice != extract.User {
		roots = append(roots, voice)
	}
	paths, err := ui.g.BFSLimit(ctx, roots, 1, 1024, nil)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var names []string
	for _, n := range spoke {
		if k := norm.Key(n); k != norm.Key(voice) && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	for _, p := range paths {
		if h := p.Hops[0]; !h.Inverse && e.preds.cat.IsRelation(h.Label) && !seen[h.To] {
			seen[h.To] = true
			names = append(names, h.To)
		}
	}
	sort.Strings(names)
	return names, nil
}

// applyPending applies episode seq (extracted as pre) if it is still the
// next one, or records it as failed if fails names it; it returns how
// many episodes it applied (or failed).
func (e *Engine) applyPending(ctx context.Context, user string, seq uint64, pre *extracted, fails failures) (int, error) {
	unlock := e.lockUser(user)
	defer unlock()
	t, err := e.begin(ctx, user, 0)
	if err != nil {
		return 0, err
	}
	defer t.close()
	t.derived = true
	t.fails = fails
	if t.meta.Applied+1 != seq {
		return 0, nil // applied inline meanwhile
	}
	ep, err := getEpisode(t.b, user, seq)
	if err != nil {
		return 0, err
	}
	t.pre = pre
	if pre != nil && pre.rec != nanos(ep.RecordedAt) {
		t.pre = nil // another episode now has this number: extract it afresh
	}
	t.now = nanos(ep.RecordedAt)
	if err := e.tel.stage(ctx, spanApplyResolve, func() error { return t.apply(ep) }); err != nil {
		return 0, err
	}
	t.meta.Applied = seq
	if err := e.tel.stage(ctx, spanApplyCommit, t.commit); err != nil {
		return 0, err
	}
	return 1, nil
}

// failEpisode records queued episode seq of user as failed with cause,
// applying nothing of it, and counts it applied, so that the user's later
// episodes proceed: Failed and Freshness show it, Retry re-runs it. It
// returns how many episodes it recorded (0: seq was applied or forgotten
// meanwhile). It takes the user's lock, so it may be called where an
// attempt to apply seq was abandoned (a recovered panic, say).
func (e *Engine) failEpisode(ctx context.Context, user string, seq uint64, cause error) (int, error) {
	return e.applyPending(ctx, user, seq, nil, failures{seq: cause})
}

// Failing episodes. An episode whose application fails for any reason
// (its extraction, its judge, an embedder or index error) is recorded as
// failed, never left pending: a queued one would hold back every later
// episode of its user, and an inline write would apply it again, and
// fail, on every later write. The batch that met the failure holds part
// of the episode, so it is abandoned, and the write is done again with
// the episode in t.fails: apply then records its failure instead.

// applyError is the failure of one episode's application.
type applyError struct {
	seq uint64
	err error
}

func (a *applyError) Error() string { return fmt.Sprintf("episode %d: %v", a.seq, a.err) }
func (a *applyError) Unwrap() error { return a.err }

// causeOf returns what made an episode fail, if err is an applyError.
func causeOf(err error) error {
	if a, ok := err.(*applyError); ok {
		return a.err
	}
	return err
}

// failures are the episodes, by sequence number, that a write records as
// failed, with their cause.
type failures map[uint64]error

// retry reports whether err is an episode's failure that the write should
// record by writing again, and adds it to fs. inline is the episode the
// write adds (nil for one already queued): a structured one (Assert,
// End, Correct) is not recorded, its call fails and stores nothing.
func (fs *failures) retry(err error, inline *Episode) bool {
	a, ok := err.(*applyError)
	if !ok || (*fs)[a.seq] != nil {
		return false
	}
	if inline != nil && a.seq == inline.Seq && inline.Kind != EpisodeText {
		return false
	}
	if *fs == nil {
		*fs = failures{}
	}
	(*fs)[a.seq] = a.err
	return true
}

// apply applies ep in t or, if t.fails names it, records its failure. An
// error of the episode's application (not of a cancelled context, which
// leaves it pending) is returned as an *applyError.
func (t *txn) apply(ep Episode) error {
	if cause, ok := t.fails[ep.Seq]; ok {
		t.ep = ep
		return t.fail(ep, cause)
	}
	err := t.applyEpisode(ep)
	if err == nil && t.failure == nil {
		t.outcomes.applied++
	}
	if err == nil || t.ctx.Err() != nil {
		return err
	}
	if _, ok := err.(*applyError); ok {
		return err
	}
	return &applyError{seq: ep.Seq, err: err}
}

// fail records in t that ep failed with cause: nothing of it is applied.
func (t *txn) fail(ep Episode, cause error) error {
	t.e.log.Warn("memor: episode failed", "user", t.user, "episode", ep.Seq, "err", cause)
	t.failure = cause
	t.outcomes.failed++
	return t.b.Set(seqKey(t.user, kv.SubEpState, ep.Seq), mustJSON(epState{Error: cause.Error(), Failed: t.now}))
}

// catchUp applies, inside t, every episode committed before the one t is
// about to write (the inline path must not overtake the queue).
func (t *txn) catchUp() error {
	for seq := t.meta.Applied + 1; seq <= t.meta.Seq; seq++ {
		ep, err := getEpisode(t.b, t.user, seq)
		if err != nil {
			return err
		}
		t.pre = nil
		t.now = nanos(ep.RecordedAt)
		if err := t.apply(ep); err != nil {
			return err
		}
		t.meta.Applied = seq
		t.caught++
	}
	return nil
}

// Freshness reports the ingestion watermark of user.
func (e *Engine) Freshness(ctx context.Context, user string) (Freshness, error) {
	var f Freshness
	err := e.read(ctx, user, func(r kv.Reader) error {
		m, err := loadMeta(r, user)
		if err != nil {
			return err
		}
		f = Freshness{Applied: m.Applied, Latest: m.Seq, Pending: m.Seq - m.Applied}
		return r.Scan(ctx, kv.UserKey(user, kv.SubEpState), func(_, _ []byte) error { f.Failed++; return nil })
	})
	if err != nil {
		return Freshness{}, err
	}
	return f, nil
}

// WaitFor returns once episode seq of user is applied (or failed), and
// counted in Stats and the metrics, or when ctx is done.
func (e *Engine) WaitFor(ctx context.Context, user string, seq uint64) error {
	release, err := e.admit(ctx, user)
	if err != nil {
		return err
	}
	defer release()
	for {
		ch := e.ing.progressChan()
		m, err := loadMeta(e.db, user)
		if err != nil {
			return err
		}
		if seq > m.Seq {
			return fmt.Errorf("%w: episode %d of user (latest is %d)", ErrNotFound, seq, m.Seq)
		}
		if m.Applied >= seq && !e.ing.settling(user, seq) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-e.closing:
			return ErrClosed
		case <-time.After(time.Second):
			// Belt and braces: re-read even if a wake-up was missed.
		}
	}
}

// Flush returns when every episode of user committed so far is applied.
func (e *Engine) Flush(ctx context.Context, user string) error {
	f, err := e.Freshness(ctx, user)
	if err != nil {
		return err
	}
	if f.Latest == 0 {
		return nil
	}
	return e.WaitFor(ctx, user, f.Latest)
}

// FailedEpisode is an episode whose extraction or application failed.
type FailedEpisode struct {
	Episode
	Error    string    `json:"error"`
	FailedAt time.Time `json:"failed_at"`
}

// Failed lists user's episodes whose extraction or application failed.
func (e *Engine) Failed(ctx context.Context, user string) ([]FailedEpisode, error) {
	var out []FailedEpisode
	err := e.read(ctx, user, func(r kv.Reader) error {
		var err error
		out, err = failed(ctx, r, user)
		return err
	})
	return out, err
}

func failed(ctx context.Context, r kv.Reader, user string) ([]FailedEpisode, error) {
	var out []FailedEpisode
	p := kv.UserKey(user, kv.SubEpState)
	err := r.Scan(ctx, p, func(k, v []byte) error {
		st, err := decodeJSON[epState](v, "episode state")
		if err != nil {
			return err
		}
		seq := kv.NewDecoder(k[len(p):]).Uint64()
		ep, err := getEpisode(r, user, seq)
		out = append(out, FailedEpisode{Episode: ep, Error: st.Error, FailedAt: fromNanos(st.Failed)})
		return err
	})
	return out, err
}

// Retry re-runs extraction for user's failed episodes and applies the ones
// that now succeed. An episode fails when its extractor returns an error
// (for the LLM extractor: transport, malformed JSON, schema violation,
// invented quote), when the Judge fails on one of its unknown
// predicates, or when applying what was extracted fails (an embedder or
// index error); a failed episode applies nothing. Retry returns how many
// still fail. Retried facts are recorded at the time of the retry (memor
// learned them then).
func (e *Engine) Retry(ctx context.Context, user string) (int, error) {
	release, err := e.admit(ctx, user)
	if err != nil {
		return 0, err
	}
	defer release()
	var fails []FailedEpisode
	err = e.db.View(func(s *kv.Snapshot) error {
		fails, err = failed(ctx, s, user)
		return err
	})
	if err != nil {
		return 0, err
	}
	still := 0
	for _, f := range fails {
		pre := e.extractEpisode(ctx, nil, f.Episode)
		if pre != nil && pre.err != nil {
			if err := ctx.Err(); err != nil {
				return still, err
			}
			still++
			continue
		}
		failed, err := e.retryOne(ctx, user, f.Episode, pre, nil)
		var again failures
		if again.retry(err, nil) {
			// Applying it failed again: recorded with the new cause.
			failed, err = e.retryOne(ctx, user, f.Episode, nil, again)
		}
		if err != nil {
			return still, err
		}
		if failed {
			still++ // the judge failed this time
		}
	}
	return still, nil
}

// retryOne applies failed episode ep, extracted as pre, or records it as
// failed again if fails names it. It reports whether the episode failed
// again (its judge failed), in which case the new failure is recorded
// instead.
func (e *Engine) retryOne(ctx context.Context, user string, ep Episode, pre *extracted, fails failures) (bool, error) {
	unlock := e.lockUser(user)
	defer unlock()
	t, err := e.begin(ctx, user, 0)
	if err != nil {
		return false, err
	}
	defer t.close()
	t.fails = fails
	if _, err := t.b.Get(seqKey(user, kv.SubEpState, ep.Seq)); err != nil {
		return false, nil // retried or forgotten meanwhile
	}
	if err := t.b.Delete(seqKey(user, kv.SubEpState, ep.Seq)); err != nil {
		return false, err
	}
	t.pre = pre
	if err := t.apply(ep); err != nil {
		return false, err
	}
	if err := t.commit(); err != nil {
		return false, err
	}
	return t.failure != nil, nil
}
