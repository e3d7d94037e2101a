package memor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// instrumentation is the OpenTelemetry instrumentation scope of the
// engine's spans and metrics: the package's import path.
const instrumentation = "github.com/memor-db/memor"

// Span and attribute names. No attribute carries user text or a user ID:
// a user is named by userHash, text by its length.
const (
	spanAdd           = "memor.Add"
	spanApply         = "memor.apply"
	spanApplyExtract  = "memor.apply.extract"
	spanApplyResolve  = "memor.apply.resolve"
	spanApplyCommit   = "memor.apply.commit"
	spanQuery         = "memor.Query"
	spanQueryPlan     = "memor.query.plan"
	spanQueryFilter   = "memor.query.filter"
	spanQueryFocus    = "memor.query.focus"
	spanQueryBM25     = "memor.query.candidates.bm25"
	spanQueryEmbed    = "memor.query.embed"
	spanQueryVector   = "memor.query.candidates.vector"
	spanQueryEntity   = "memor.query.candidates.entity"
	spanQueryOutdated = "memor.query.candidates.outdated"
	spanQueryFuse     = "memor.query.fuse"
	spanQueryBoost    = "memor.query.boost"
	spanQueryRerank   = "memor.query.rerank"

	attrUser       = attribute.Key("memor.user_hash")
	attrSeq        = attribute.Key("memor.episode.seq")
	attrTextBytes  = attribute.Key("memor.text_bytes")
	attrK          = attribute.Key("memor.k")
	attrFusion     = attribute.Key("memor.fusion")
	attrAsOf       = attribute.Key("memor.as_of")
	attrCandidates = attribute.Key("memor.candidates")
	attrResults    = attribute.Key("memor.results")
	attrAbstained  = attribute.Key("memor.abstained")
	attrErrorKind  = attribute.Key("memor.error")
)

// userHash names a user in telemetry as the server's request log does
// (server.UserHash): the first 12 hex digits of the SHA-256 of the ID,
// enough to follow one user without exporting the ID, which may be an
// e-mail address.
func userHash(user string) string {
	if user == "" {
		return ""
	}
	h := sha256.Sum256([]byte(user))
	return hex.EncodeToString(h[:6])
}

// telemetry is the engine's OpenTelemetry instrumentation. Its zero value
// is off and costs a nil check per span: with no provider set the engine
// calls no OpenTelemetry code and reads no clock for it.
type telemetry struct {
	tracer trace.Tracer // nil: no spans
	// Nil when no MeterProvider is set.
	applyLatency, queryLatency metric.Float64Histogram
	reg                        metric.Registration
}

// newTelemetry instruments the engine with the providers of Options. The
// episode counters are observed from the counters the engine keeps for
// Stats, so counting costs nothing on the write path.
func newTelemetry(tp trace.TracerProvider, mp metric.MeterProvider, c *engineCounters) (telemetry, error) {
	var t telemetry
	if tp != nil {
		t.tracer = tp.Tracer(instrumentation, trace.WithInstrumentationVersion(Version))
	}
	if mp == nil {
		return t, nil
	}
	m := mp.Meter(instrumentation, metric.WithInstrumentationVersion(Version))
	var err error
	if t.applyLatency, err = m.Float64Histogram("memor.apply.duration", metric.WithUnit("s"),
		metric.WithDescription("Time to apply one queued episode: extraction, resolution and commit.")); err != nil {
		return t, err
	}
	if t.queryLatency, err = m.Float64Histogram("memor.query.duration", metric.WithUnit("s"),
		metric.WithDescription("Time of one Query, from its call to its return.")); err != nil {
		return t, err
	}
	applied, err := m.Int64ObservableCounter("memor.episodes.applied", metric.WithUnit("{episode}"),
		metric.WithDescription("Episodes applied (their facts resolved and committed)."))
	if err != nil {
		return t, err
	}
	failed, err := m.Int64ObservableCounter("memor.episodes.failed", metric.WithUnit("{episode}"),
		metric.WithDescription("Episodes recorded as failed (see Engine.Failed)."))
	if err != nil {
		return t, err
	}
	queued, err := m.Int64ObservableCounter("memor.episodes.queued", metric.WithUnit("{episode}"),
		metric.WithDescription("Episodes queued by Add to be applied in the background."))
	if err != nil {
		return t, err
	}
	t.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(applied, int64(c.applied.Load()))
		o.ObserveInt64(failed, int64(c.failed.Load()))
		o.ObserveInt64(queued, int64(c.queued.Load()))
		return nil
	}, applied, failed, queued)
	return t, err
}

// close unregisters the metric callback (at Engine.Close, so that a
// closed engine's counters are no longer reported).
func (t *telemetry) close() error {
	if t.reg == nil {
		return nil
	}
	return t.reg.Unregister()
}

// span is one span of the engine's; its zero value (tracing off) does
// nothing.
type span struct {
	s trace.Span
}

// start starts span name as a child of ctx's span; with tracing off it
// returns ctx and the zero span.
func (t *telemetry) start(ctx context.Context, name string) (context.Context, span) {
	if t.tracer == nil {
		return ctx, span{}
	}
	ctx, s := t.tracer.Start(ctx, name)
	return ctx, span{s: s}
}

// on reports whether the span records: compute its attributes only then.
func (s span) on() bool { return s.s != nil && s.s.IsRecording() }

// set sets attributes of a recording span: call it under on, so that
// no attribute is built, and no slice allocated, with tracing off.
func (s span) set(attrs ...attribute.KeyValue) {
	s.s.SetAttributes(attrs...)
}

// setInt sets one integer attribute; with tracing off it builds nothing.
func (s span) setInt(k attribute.Key, v int) {
	if s.on() {
		s.s.SetAttributes(k.Int(v))
	}
}

// end ends the span with err's outcome. The status names the error's
// kind, never its message, which may quote user text or a user ID.
func (s span) end(err error) {
	if s.s == nil {
		return
	}
	if err != nil {
		kind := errorKind(err)
		s.s.SetAttributes(attrErrorKind.String(kind))
		s.s.SetStatus(codes.Error, kind)
	}
	s.s.End()
}

// errorKind names err by the sentinel it matches, for telemetry.
func errorKind(err error) string {
	for _, k := range []struct {
		err  error
		name string
	}{
		{context.Canceled, "canceled"}, {context.DeadlineExceeded, "deadline_exceeded"},
		{ErrClosed, "closed"}, {ErrInvalidUser, "invalid_user"}, {ErrInvalidText, "invalid_text"},
		{ErrTooLarge, "too_large"}, {ErrInvalidTime, "invalid_time"}, {ErrInvalidFact, "invalid_fact"},
		{ErrInvalidSpeaker, "invalid_speaker"}, {ErrNotFound, "not_found"}, {ErrCorrupt, "corrupt"},
		{ErrReadOnly, "read_only"}, {ErrStorage, "storage"}, {ErrExtractionFailed, "extraction_failed"},
		{ErrInternal, "internal"},
	} {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return "error"
}

// op times one operation for a latency histogram alongside its span; with
// neither on it reads no clock.
type op struct {
	span
	h     metric.Float64Histogram
	start time.Time
}

// startOp starts span name and, if h is set, the operation's clock.
func (t *telemetry) startOp(ctx context.Context, name string, h metric.Float64Histogram) (context.Context, op) {
	ctx, s := t.start(ctx, name)
	o := op{span: s, h: h}
	if h != nil {
		o.start = time.Now()
	}
	return ctx, o
}

// end ends the span and records the latency, with the error kind as an
// attribute of the measurement.
func (o op) end(ctx context.Context, err error) {
	if o.h != nil {
		if err != nil {
			o.h.Record(ctx, time.Since(o.start).Seconds(), metric.WithAttributes(attrErrorKind.String(errorKind(err))))
		} else {
			o.h.Record(ctx, time.Since(o.start).Seconds())
		}
	}
	o.span.end(err)
}

// startAdd starts the span of one Add.
func (t *telemetry) startAdd(ctx context.Context, user string, textBytes int) (context.Context, span) {
	ctx, s := t.start(ctx, spanAdd)
	if s.on() {
		s.set(attrUser.String(userHash(user)), attrTextBytes.Int(textBytes))
	}
	return ctx, s
}

// startApply starts the span, and the latency clock, of applying one
// queued episode: its extraction, resolution and commit are its children.
func (t *telemetry) startApply(ctx context.Context, user string, seq uint64) (context.Context, op) {
	ctx, o := t.startOp(ctx, spanApply, t.applyLatency)
	if o.on() {
		o.set(attrUser.String(userHash(user)), attrSeq.Int64(int64(seq)))
	}
	return ctx, o
}

// extract runs an episode's extraction in its span; an extraction that
// failed (and will be recorded as failed) ends it with its error.
func (t *telemetry) extract(ctx context.Context, fn func(context.Context) *extracted) *extracted {
	if t.tracer == nil {
		return fn(ctx)
	}
	ctx, s := t.start(ctx, spanApplyExtract)
	pre := fn(ctx)
	var err error
	if pre != nil {
		err = pre.err
	}
	s.end(err)
	return pre
}

// stage runs fn in span name, a child of ctx's.
func (t *telemetry) stage(ctx context.Context, name string, fn func() error) error {
	if t.tracer == nil {
		return fn()
	}
	_, s := t.start(ctx, name)
	err := fn()
	s.end(err)
	return err
}
