package memor

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memor-db/memor/kv"
)

// The index cache's warm-up: Close records which users' indexes were
// loaded, most recently used first, and the next Open loads them again in
// the background, so that a restarted server's first queries of its
// active users find their indexes loaded instead of each paying for a
// load (InnoDB's buffer pool dump and load does the same for pages).
//
// The record is a hint. Close writes it only when the users it would
// name differ from those it names (a reopen that changed nothing writes
// nothing: a write at every Close left the next Open a log to replay and
// a table to flush while its first queries ran, 1.3 ms of each). What
// Open read and did not warm (the warm-up was off, stopped at the cache's
// budget or cut short by Close) is recorded again after the users then
// cached, so that a short session (a CLI command) neither loses the list
// nor pays for warming it. Forget rewrites the record without its user in
// the batch that deletes the user's keys, and compacts the record's range
// with them, so that no byte naming a forgotten user is left. A user the
// record names who holds nothing now is not loaded.
var warmKey = []byte{kv.TagMeta, 'w', 'a', 'r', 'm'}

// warmRange holds the record: a Forget compacts it with the user's keys,
// so that the record's old bytes naming the user are not left on disk.
var warmRange = [2][]byte{warmKey, kv.PrefixEnd(warmKey)}

const (
	// warmVersion is the first byte of the record.
	warmVersion = 1
	// warmMaxBytes bounds the record: the users most recently used
	// whose IDs fit (user IDs may be long).
	warmMaxBytes = 1 << 20
)

// warmUser is one user the record names, with the estimated bytes its
// indexes held: the warm-up stops before the cache's budget is passed,
// without loading a user to learn its size.
type warmUser struct {
	user  string
	bytes int64
}

func appendWarm(dst []byte, us []warmUser) []byte {
	dst = append(dst, warmVersion)
	for _, u := range us {
		dst = binary.AppendUvarint(dst, uint64(len(u.user)))
		dst = append(dst, u.user...)
		dst = binary.AppendUvarint(dst, uint64(max(u.bytes, 0)))
	}
	return dst
}

// errWarmRecord: the record is not one this build wrote.
var errWarmRecord = errors.New("memor: index warm-up record")

func decodeWarm(v []byte) ([]warmUser, error) {
	if len(v) == 0 || v[0] != warmVersion {
		return nil, fmt.Errorf("%w: version %x", errWarmRecord, v[:min(len(v), 1)])
	}
	v = v[1:]
	var us []warmUser
	for len(v) > 0 {
		n, w := binary.Uvarint(v)
		if w <= 0 || n > uint64(len(v)-w) {
			return nil, fmt.Errorf("%w: user %d cut short", errWarmRecord, len(us))
		}
		user := string(v[w : w+int(n)])
		v = v[w+int(n):]
		b, w := binary.Uvarint(v)
		if w <= 0 || b > 1<<62 {
			return nil, fmt.Errorf("%w: size of user %d", errWarmRecord, len(us))
		}
		v = v[w:]
		us = append(us, warmUser{user, int64(b)})
	}
	return us, nil
}

// warmList returns the cached users, most recently used first, whose IDs
// fit in warmMaxBytes.
func (s *indexSet) warmList() []warmUser {
	s.mu.Lock()
	defer s.mu.Unlock()
	var us []warmUser
	n := 1
	for el := s.lru.Front(); el != nil; el = el.Next() {
		c := el.Value.(*cachedIndex)
		if n += len(c.user) + 2*binary.MaxVarintLen64; n > warmMaxBytes {
			break
		}
		us = append(us, warmUser{c.user, c.counted})
	}
	return us
}

// has reports whether user's indexes are cached, without using them.
func (s *indexSet) has(user string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.users[user] != nil
}

// putWarm caches indexes the warm-up loaded behind every cached user (a
// user the warm-up loads is less recent than any a caller used since
// Open), if they fit the budget without evicting anyone; it reports
// whether they did.
func (s *indexSet) putWarm(user string, ui *userIndex) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users[user] != nil {
		return true // a caller loaded it meanwhile
	}
	n := ui.size()
	if s.budget > 0 && s.total+n > s.budget {
		return false
	}
	c := &cachedIndex{user: user, ui: ui, counted: n}
	s.users[user] = s.lru.PushBack(c)
	s.total += n
	return true
}

// indexWarmer loads, after Open, the users the last Close recorded, and,
// once imports are idle, the users a bulk import wrote (see noteImport).
type indexWarmer struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	// rest is what the record named and the warm-up has not loaded, in
	// its order; stored is what the record names.
	rest, stored []warmUser
	// imported: the users bulk imports wrote and the warm-up has not
	// loaded, most recent last; lastImport: when the last import
	// committed; wake: signalled by an import; importing: the goroutine
	// loading them runs (importCancel stops it).
	imported     []string
	lastImport   time.Time
	wake         chan struct{}
	importing    bool
	importCancel context.CancelFunc
	importWG     sync.WaitGroup
	// stopped: Close has stopped the warm-up; an import committing
	// after does not start it again.
	stopped bool
	// warmed counts the users it loaded; running is set until it has
	// finished; recorded is set once Close has written the record.
	warmed   atomic.Uint64
	running  atomic.Bool
	recorded atomic.Bool
}

// startWarm reads and deletes the record and loads its users in the
// background. A record that cannot be read or deleted is logged and
// ignored: it is only a hint.
func (e *Engine) startWarm() {
	w := &indexWarmer{}
	e.warm = w
	v, err := e.db.Get(warmKey)
	if err != nil {
		if !errors.Is(err, kv.ErrNotFound) {
			e.log.Warn("memor: cannot read the index warm-up record", "err", err)
		}
		return
	}
	us, err := decodeWarm(v)
	if err != nil {
		// Replaced by Close (it names nobody the new one would).
		e.log.Warn("memor: the index warm-up record is not readable; no user is warmed", "err", err)
	}
	w.rest, w.stored = us, slices.Clone(us) // rest shrinks in place
	if e.opts.NoIndexWarmup || len(us) == 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.running.Store(true)
	w.wg.Go(func() {
		defer w.running.Store(false)
		e.warmUsers(ctx, w)
	})
}

// next returns the first user not yet warmed, if any.
func (w *indexWarmer) next() (warmUser, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.rest) == 0 {
		return warmUser{}, false
	}
	return w.rest[0], true
}

// done drops user from the users to warm.
func (w *indexWarmer) done(user string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rest = slices.DeleteFunc(w.rest, func(u warmUser) bool { return u.user == user })
}

// forgetWarm is Forget's part: in b, the batch deleting user's keys, the
// record is rewritten without user (deleted if it names no one else); the
// caller holds e.warmMu until b commits, so that two Forgets do not each
// rewrite the record they read. commit is called once b has committed.
func (e *Engine) forgetWarm(b *kv.Batch, user string) (commit func(), err error) {
	v, err := b.Get(warmKey)
	if errors.Is(err, kv.ErrNotFound) {
		return e.warmForgot(user), nil
	}
	if err != nil {
		return nil, err
	}
	us, err := decodeWarm(v)
	if err != nil {
		// Unreadable: deleted, as it may name the user.
		return e.warmForgot(user), b.Delete(warmKey)
	}
	kept := slices.DeleteFunc(us, func(u warmUser) bool { return u.user == user })
	switch {
	case len(kept) == 0:
		err = b.Delete(warmKey)
	case len(kept) < len(us):
		err = b.Set(warmKey, appendWarm(nil, kept))
	}
	return e.warmForgot(user), err
}

// warmForgot returns what a committed Forget of user changes in the
// warm-up's memory (nothing before it started, during Open).
func (e *Engine) warmForgot(user string) func() {
	return func() {
		if w := e.warm; w != nil {
			w.done(user)
			w.mu.Lock()
			w.stored = slices.DeleteFunc(w.stored, func(u warmUser) bool { return u.user == user })
			w.imported = slices.DeleteFunc(w.imported, func(u string) bool { return u == user })
			w.mu.Unlock()
		}
	}
}

// remaining returns the users not yet warmed: those imported, most
// recent first, then those the record names; and those the record names.
func (w *indexWarmer) remaining() (rest, stored []warmUser) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, u := range slices.Backward(w.imported) {
		rest = append(rest, warmUser{user: u})
	}
	return append(rest, w.rest...), slices.Clone(w.stored)
}

// warmUsers loads w's users in order until one does not fit the cache or
// the engine closes. Each load takes the user's lock and the engine's
// gate, as a query's would: a query of a user being warmed waits for that
// load and uses it.
func (e *Engine) warmUsers(ctx context.Context, w *indexWarmer) {
	var total int64
	for {
		u, ok := w.next()
		if !ok {
			return
		}
		if total += u.bytes; e.idx.budget > 0 && total > e.idx.budget {
			return
		}
		loaded, more, err := e.warmUser(ctx, u.user)
		if err != nil {
			if ctx.Err() == nil {
				e.log.Warn("memor: cannot warm a user's indexes", "user", u.user, "err", err)
			}
			return
		}
		if !more {
			return
		}
		w.done(u.user)
		if loaded {
			w.warmed.Add(1)
		}
	}
}

// warmUser loads user's indexes unless they are cached or the user holds
// nothing, and reports whether it loaded them and whether the warm-up
// goes on (false: they did not fit the cache).
func (e *Engine) warmUser(ctx context.Context, user string) (loaded, more bool, err error) {
	if storedUser(user) != nil {
		return false, true, nil // not a user ID this build stores: skipped
	}
	release, err := e.enter(ctx)
	if err != nil {
		return false, false, err
	}
	defer release()
	defer e.recovered(&err, "warm", user)
	unlock := e.lockUser(user)
	defer unlock()
	if e.idx.has(user) {
		return false, true, nil
	}
	m, err := loadMeta(e.db, user)
	if err != nil {
		return false, false, err
	}
	if m.Doc == 0 {
		return false, true, nil // holds nothing now (forgotten, say)
	}
	ui, err := e.idx.loadWith(ctx, e.db, user, m, false)
	if err != nil {
		return false, false, err
	}
	ok := e.idx.putWarm(user, ui)
	if ok {
		e.warmEpisodes(ctx, user)
	}
	return ok, ok, nil
}

// warmEpisodesBytes bounds what warmEpisodes reads of a user.
const warmEpisodesBytes = 4 << 20

// warmEpisodes reads the user's episodes (up to warmEpisodesBytes), for
// their blocks to be in Pebble's block cache when a query serves their
// texts. A load from the records read them (for their times, see
// episodeTimed) and so filled the cache as a side effect; a load no
// longer does, and a warmed conversation's first query then read its
// texts' blocks from the files: 0.63 ms instead of 0.45. Errors are the
// query's to meet.
func (e *Engine) warmEpisodes(ctx context.Context, user string) {
	n := 0
	_ = e.db.Scan(ctx, kv.UserKey(user, kv.SubEpisode), func(k, v []byte) error {
		if n += len(k) + len(v); n > warmEpisodesBytes {
			return errWarmEnough
		}
		return nil
	})
}

// errWarmEnough stops warmEpisodes' scan.
var errWarmEnough = errors.New("warmed enough")

// stopWarm cancels the warm-up and waits for it.
func (w *indexWarmer) stop() {
	w.mu.Lock()
	w.stopped = true
	if w.cancel != nil {
		w.cancel()
	}
	if w.importCancel != nil {
		w.importCancel()
	}
	w.mu.Unlock()
	w.wg.Wait()
	w.importWG.Wait()
}

// A bulk import (a new user's large first write: bulkIndex writes its
// index records without building the indexes) leaves the user's indexes
// unloaded, so its first query would load them from the records: 3 ms
// for 1,000 facts, 6 ms for a conversation of 190 long messages. Once
// imports have been idle for importIdle, the warm-up loads the users
// imported, most recent first, as many as fit the cache without evicting
// anyone; a load from the records also asks for the user's image (see
// indexSet.load), which the next Open reads. Waiting for idleness keeps
// the loads out of an import of many users, whose throughput they would
// take (a load costs about a fifth of an import); a query arriving
// before the load starts loads the user itself, as it would without.
const (
	importIdle = 50 * time.Millisecond
	// importWarmMax bounds the users held to load: the most recent.
	importWarmMax = 64
)

// noteImport tells the warm-up that a bulk import of user committed.
// Without the warm-up (a CLI command, NoIndexWarmup), or if Close comes
// first, the users imported and not loaded are recorded for the next
// Open to warm (see recordWarm): a store bulk-loaded by one process and
// served by the next then serves its users' first queries loaded.
func (e *Engine) noteImport(user string) {
	w := e.warm
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	w.lastImport = time.Now()
	w.imported = append(slices.DeleteFunc(w.imported, func(u string) bool { return u == user }), user)
	if len(w.imported) > importWarmMax {
		w.imported = slices.Delete(w.imported, 0, len(w.imported)-importWarmMax)
	}
	if e.opts.NoIndexWarmup {
		return
	}
	if !w.importing {
		ctx, cancel := context.WithCancel(context.Background())
		w.importing, w.importCancel, w.wake = true, cancel, make(chan struct{}, 1)
		w.importWG.Go(func() { e.warmImported(ctx, w) })
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// warmImported loads the imported users once imports have been idle for
// importIdle, until Close.
func (e *Engine) warmImported(ctx context.Context, w *indexWarmer) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		}
		for {
			w.mu.Lock()
			idle, n := time.Since(w.lastImport), len(w.imported)
			var user string
			if n > 0 && idle >= importIdle {
				user = w.imported[n-1]
				w.imported = w.imported[:n-1]
			}
			w.mu.Unlock()
			if n == 0 {
				break
			}
			if user == "" {
				select {
				case <-ctx.Done():
					return
				case <-time.After(importIdle - idle):
				}
				continue
			}
			loaded, more, err := e.warmUser(ctx, user)
			if err != nil {
				// The user stays to warm: Close's record names it for the
				// next Open (a Close that cut this load short lost it).
				w.mu.Lock()
				if !slices.Contains(w.imported, user) {
					w.imported = append(w.imported, user)
				}
				w.mu.Unlock()
				if ctx.Err() == nil && !errors.Is(err, ErrClosed) {
					e.log.Warn("memor: cannot warm an imported user's indexes", "user", user, "err", err)
				}
				break
			}
			if loaded {
				w.warmed.Add(1)
			}
			if !more {
				// The cache is full: the rest would not fit either.
				w.mu.Lock()
				w.imported = nil
				w.mu.Unlock()
				break
			}
		}
	}
}

// recordWarm writes the record for the next Open, if the users it names
// change: the cached users, most recently used first, then those the
// record read at Open named and were not warmed (the engine's gate held:
// nothing changes the cache). A failure is logged: Close does not fail
// for a hint.
func (e *Engine) recordWarm() {
	us := e.idx.warmList()
	n := 1
	for _, u := range us {
		n += len(u.user) + 2*binary.MaxVarintLen64
	}
	rest, stored := e.warm.remaining()
	listed := make(map[string]bool, len(rest)) // an imported user the record also named
	for _, u := range rest {
		if n += len(u.user) + 2*binary.MaxVarintLen64; n > warmMaxBytes {
			break
		}
		if !listed[u.user] && !e.idx.has(u.user) {
			listed[u.user] = true
			us = append(us, u)
		}
	}
	if slices.EqualFunc(us, stored, func(a, b warmUser) bool { return a.user == b.user }) {
		return // sizes are estimates: not worth a write
	}
	if len(us) == 0 {
		return // a record naming users that hold nothing is harmless
	}
	if err := e.setKey(warmKey, appendWarm(nil, us)); err != nil {
		e.log.Warn("memor: cannot record the users to warm at the next Open", "err", err)
		return
	}
	e.warm.recorded.Store(true)
}
