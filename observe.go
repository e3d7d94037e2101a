package memor

import (
	"context"
	"sync/atomic"
	"time"
)

// Observer receives measurements of the engine's work, for a metrics
// system (the server exports them in the Prometheus format). Set it in
// Options.Observer; nil, the default, costs nothing: the engine then reads
// no clock for it.
//
// Its methods are called on the goroutine that did the work, right after
// it, so they must be safe for concurrent use and quick (an atomic add, a
// histogram bucket): they sit on the query path. Counters that the engine
// keeps anyway (syncs, queued and applied episodes, the index cache) are
// in Stats, for a collector to read when scraped.
type Observer interface {
	// ObserveQueryStage reports how long one stage of one Query took.
	// Stages that a query skips (no reranker, an empty view) are not
	// reported.
	ObserveQueryStage(stage QueryStage, d time.Duration)
	// ObserveQuery reports one whole Query, from its call to its return,
	// and whether it failed (err is nil on success).
	ObserveQuery(d time.Duration, err error)
}

// QueryStage names a stage of Query: the candidate generation of each
// signal, and the work around it.
type QueryStage int

// The stages of Query, in the order they run.
const (
	// StageFocus reads who and what the question is about (the focus
	// prior and filter).
	StageFocus QueryStage = iota
	// StageBM25 is the text search's candidate generation.
	StageBM25
	// StageEmbed embeds the question (a call to the embedder).
	StageEmbed
	// StageVector is the vector search's candidate generation.
	StageVector
	// StageEntity is the graph walk from the question's entities.
	StageEntity
	// StageOutdated finds the current versions of what the question's
	// words name in the past.
	StageOutdated
	// StageLoad fuses the signals and resolves the best candidates to
	// facts and episodes.
	StageLoad
	// StageRerank is the reranker's call.
	StageRerank
	// NumQueryStages is how many stages there are (for arrays indexed by
	// stage).
	NumQueryStages
)

var stageNames = [NumQueryStages]string{"focus", "bm25", "embed", "vector", "entity", "outdated", "load", "rerank"}

// String returns the stage's name as metrics label it: "bm25", "vector", ...
func (s QueryStage) String() string {
	if s < 0 || s >= NumQueryStages {
		return "unknown"
	}
	return stageNames[s]
}

// stageClock times the stages of one query for an Observer; with none it
// reads no clock.
type stageClock struct {
	o    Observer
	t, q time.Time
}

func newStageClock(o Observer) stageClock {
	if o == nil {
		return stageClock{}
	}
	now := time.Now()
	return stageClock{o: o, t: now, q: now}
}

// skip restarts the clock without reporting (work between stages that is
// not a stage of its own).
func (c *stageClock) skip() {
	if c.o != nil {
		c.t = time.Now()
	}
}

// lap reports the time since the last lap (or skip) as stage s.
func (c *stageClock) lap(s QueryStage) {
	if c.o == nil {
		return
	}
	now := time.Now()
	c.o.ObserveQueryStage(s, now.Sub(c.t))
	c.t = now
}

// done reports the whole query.
func (c *stageClock) done(err error) {
	if c.o != nil {
		c.o.ObserveQuery(time.Since(c.q), err)
	}
}

// episodeOutcomes counts what one write did with episodes.
type episodeOutcomes struct {
	applied, failed uint64
}

// engineCounters are the counters of Stats that the engine keeps itself
// (the store keeps the syncs).
type engineCounters struct {
	queued, applied, failed atomic.Uint64
}

// settle adds the outcomes of a committed write.
func (c *engineCounters) settle(o episodeOutcomes) {
	if o.applied > 0 {
		c.applied.Add(o.applied)
	}
	if o.failed > 0 {
		c.failed.Add(o.failed)
	}
}

// Progress is how far a long operation has come, as reported to the
// function given to WithProgress.
type Progress struct {
	// Op is the operation: "rebuild", "check", or another long
	// operation of the engine's.
	Op string
	// User is the user being worked on ("" when the unit is users).
	User string
	// Done of Total units are finished; Total may grow (a rebuild that
	// starts over without a failed episode counts from 1 again).
	Done, Total int
	// Unit names what Done counts: "episodes", "users".
	Unit string
}

type progressKey struct{}

// WithProgress returns a context that makes the long operations run with
// it (Rebuild, Check) call fn after each unit of their work, on the
// operation's goroutine: fn must be quick, and must not call the engine.
// The context carries the callback the way net/http/httptrace carries a
// trace, so that every long operation reports through one mechanism
// without a parameter of its own.
func WithProgress(ctx context.Context, fn func(Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// progressReporter reports one operation's progress; the zero value
// reports nothing.
type progressReporter struct {
	fn             func(Progress)
	op, user, unit string
}

func progressFrom(ctx context.Context, op, user, unit string) progressReporter {
	fn, _ := ctx.Value(progressKey{}).(func(Progress))
	return progressReporter{fn: fn, op: op, user: user, unit: unit}
}

func (p *progressReporter) report(done, total int) {
	if p.fn != nil {
		p.fn(Progress{Op: p.op, User: p.user, Done: done, Total: total, Unit: p.unit})
	}
}
