package memor_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memor-db/memor"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// telUser is an e-mail address, the kind of user ID that must not leave
// the engine in a span.
const telUser = "alice.secret@example.com"

// hashOf is the request log's user hash (server.UserHash).
func hashOf(user string) string {
	h := sha256.Sum256([]byte(user))
	return hex.EncodeToString(h[:6])
}

// tracedEngine opens an engine that records its spans in memory.
func tracedEngine(t *testing.T, o memor.Options) (*memor.Engine, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	o.TracerProvider = tp
	e, _ := openTest(t, o)
	return e, exp
}

// children returns the names of the spans whose parent is p, in start
// order.
func children(spans tracetest.SpanStubs, p tracetest.SpanStub) []string {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Parent.SpanID() == p.SpanContext.SpanID() && s.SpanContext.TraceID() == p.SpanContext.TraceID() {
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
	names := make([]string, len(out))
	for i, s := range out {
		names[i] = s.Name
	}
	return names
}

func spansNamed(spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func attr(s tracetest.SpanStub, k string) (attribute.Value, bool) {
	for _, a := range s.Attributes {
		if string(a.Key) == k {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

// noUserData fails if any attribute or status of spans carries the user
// ID or a word of the texts.
func noUserData(t *testing.T, spans tracetest.SpanStubs, texts ...string) {
	t.Helper()
	secrets := []string{telUser, "alice.secret"}
	for _, text := range texts {
		for _, w := range strings.Fields(text) {
			if len([]rune(w)) >= 5 {
				secrets = append(secrets, w)
			}
		}
	}
	for _, s := range spans {
		vals := []string{s.Status.Description}
		for _, a := range s.Attributes {
			vals = append(vals, a.Value.String())
		}
		for _, ev := range s.Events {
			vals = append(vals, ev.Name)
			for _, a := range ev.Attributes {
				vals = append(vals, a.Value.String())
			}
		}
		for _, v := range vals {
			for _, sec := range secrets {
				if strings.Contains(v, sec) {
					t.Errorf("span %s carries %q in %q", s.Name, sec, v)
				}
			}
		}
	}
}

// TestTracingQuerySpanTree: a Query is one memor.Query span whose
// children are its stages in pipeline order (the focus inside the
// filter), the stages' attributes count candidates, and the root names
// the user by the request log's hash, never by the ID or the question.
func TestTracingQuerySpanTree(t *testing.T) {
	ctx := context.Background()
	e, exp := tracedEngine(t, memor.Options{})
	said := "I live in Oslo and I work at Acme. My brother Alex has a golden retriever."
	if _, err := e.Add(ctx, telUser, said, memor.Sync()); err != nil {
		t.Fatal(err)
	}
	exp.Reset()
	question := "What kind of retriever does my brother Alex have?"
	rs, err := e.Query(ctx, telUser, question, memor.QueryOptions{Reranker: constReranker{}})
	if err != nil || len(rs) == 0 {
		t.Fatalf("%d results, %v", len(rs), err)
	}
	spans := exp.GetSpans()
	roots := spansNamed(spans, "memor.Query")
	if len(roots) != 1 {
		t.Fatalf("%d memor.Query spans", len(roots))
	}
	root := roots[0]
	if root.Parent.IsValid() {
		t.Error("memor.Query has a parent")
	}
	want := []string{"memor.query.plan", "memor.query.filter", "memor.query.candidates.bm25", "memor.query.embed",
		"memor.query.candidates.vector", "memor.query.candidates.entity", "memor.query.candidates.outdated",
		"memor.query.fuse", "memor.query.boost", "memor.query.rerank"}
	if got := children(spans, root); !slices.Equal(got, want) {
		t.Errorf("children of memor.Query:\n got %v\nwant %v", got, want)
	}
	filter := spansNamed(spans, "memor.query.filter")[0]
	if got := children(spans, filter); !slices.Equal(got, []string{"memor.query.focus"}) {
		t.Errorf("children of the filter: %v", got)
	}
	if v, _ := attr(root, "memor.user_hash"); v.AsString() != hashOf(telUser) {
		t.Errorf("memor.user_hash = %q, want %q", v.AsString(), hashOf(telUser))
	}
	if v, _ := attr(root, "memor.results"); v.AsInt64() != int64(len(rs)) {
		t.Errorf("memor.results = %d, want %d", v.AsInt64(), len(rs))
	}
	if v, _ := attr(root, "memor.k"); v.AsInt64() != memor.DefaultK {
		t.Errorf("memor.k = %d", v.AsInt64())
	}
	if v, ok := attr(spansNamed(spans, "memor.query.candidates.bm25")[0], "memor.candidates"); !ok || v.AsInt64() == 0 {
		t.Errorf("bm25 candidates: %v", v.String())
	}
	for _, s := range spans {
		if s.Status.Code == codes.Error {
			t.Errorf("span %s failed: %s", s.Name, s.Status.Description)
		}
		if s.EndTime.Before(s.StartTime) {
			t.Errorf("span %s ends before it starts", s.Name)
		}
	}
	noUserData(t, spans, said, question)
}

// TestTracingQueryError: a failed Query's span has an error status that
// names the error's kind, not its message (which quotes the user ID).
func TestTracingQueryError(t *testing.T) {
	ctx := context.Background()
	e, exp := tracedEngine(t, memor.Options{})
	bad := telUser + "\x00"
	_, err := e.Query(ctx, bad, "where do I live", memor.QueryOptions{})
	if !errors.Is(err, memor.ErrInvalidUser) {
		t.Fatalf("Query: %v", err)
	}
	spans := exp.GetSpans()
	roots := spansNamed(spans, "memor.Query")
	if len(roots) != 1 {
		t.Fatalf("%d memor.Query spans", len(roots))
	}
	for _, name := range []string{"memor.Query", "memor.query.plan"} {
		s := spansNamed(spans, name)[0]
		if s.Status.Code != codes.Error || s.Status.Description != "invalid_user" {
			t.Errorf("%s status %v %q, want Error \"invalid_user\"", name, s.Status.Code, s.Status.Description)
		}
	}
	if got := children(spans, roots[0]); !slices.Equal(got, []string{"memor.query.plan"}) {
		t.Errorf("a query refused in its plan ran %v", got)
	}
	noUserData(t, spans)
}

// TestTracingAddAndApply: an Add is a memor.Add span; the queued
// episode's application, on a worker, is a memor.apply span with its
// extraction, resolution and commit as children, naming the episode by
// its sequence number and the user by hash. Texts from the corpus (CJK,
// code, a long turn) leave no word in any span.
func TestTracingAddAndApply(t *testing.T) {
	ctx := context.Background()
	e, exp := tracedEngine(t, memor.Options{})
	var texts []string
	for _, name := range []string{"cjk-zh.txt", "chat-long-turn.txt", "code-go.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", "texts", name))
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(b))
	}
	texts = append(texts, "I moved to Lisbon last spring.")
	for _, text := range texts {
		if _, err := e.Add(ctx, telUser, text); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Flush(ctx, telUser); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	adds := spansNamed(spans, "memor.Add")
	if len(adds) != len(texts) {
		t.Fatalf("%d memor.Add spans, want %d", len(adds), len(texts))
	}
	for i, s := range adds {
		if v, _ := attr(s, "memor.text_bytes"); v.AsInt64() != int64(len(texts[i])) {
			t.Errorf("Add %d: memor.text_bytes %d, want %d", i, v.AsInt64(), len(texts[i]))
		}
	}
	applies := spansNamed(spans, "memor.apply")
	if len(applies) != len(texts) {
		t.Fatalf("%d memor.apply spans, want %d", len(applies), len(texts))
	}
	seqs := map[int64]bool{}
	for _, s := range applies {
		if got := children(spans, s); !slices.Equal(got, []string{"memor.apply.extract", "memor.apply.resolve", "memor.apply.commit"}) {
			t.Errorf("children of memor.apply: %v", got)
		}
		if v, _ := attr(s, "memor.user_hash"); v.AsString() != hashOf(telUser) {
			t.Errorf("memor.apply user hash %q", v.AsString())
		}
		v, _ := attr(s, "memor.episode.seq")
		seqs[v.AsInt64()] = true
	}
	if len(seqs) != len(texts) || !seqs[1] || !seqs[int64(len(texts))] {
		t.Errorf("episodes applied: %v", seqs)
	}
	noUserData(t, spans, texts...)
}

// TestMetricsEpisodesAndLatency: with a MeterProvider, the episode
// counters follow Stats and each Query and each applied episode is one
// latency measurement.
func TestMetricsEpisodesAndLatency(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	e, _ := openTest(t, memor.Options{MeterProvider: mp})
	for _, text := range []string{"I live in Oslo.", "I work at Acme.", "My sister is Maya."} {
		if _, err := e.Add(ctx, telUser, text); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Flush(ctx, telUser); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, err := e.Query(ctx, telUser, "where do I live", memor.QueryOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Query(ctx, "", "where do I live", memor.QueryOptions{}); err == nil {
		t.Fatal("Query of an empty user: no error")
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != "github.com/memor-db/memor" {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			got[m.Name] = m.Data
		}
	}
	sum := func(name string) int64 {
		s, ok := got[name].(metricdata.Sum[int64])
		if !ok || len(s.DataPoints) != 1 {
			t.Fatalf("%s: %T %v", name, got[name], got[name])
		}
		return s.DataPoints[0].Value
	}
	if n := sum("memor.episodes.applied"); n != 3 {
		t.Errorf("memor.episodes.applied = %d, want 3", n)
	}
	if n := sum("memor.episodes.queued"); n != 3 {
		t.Errorf("memor.episodes.queued = %d, want 3", n)
	}
	if n := sum("memor.episodes.failed"); n != 0 {
		t.Errorf("memor.episodes.failed = %d, want 0", n)
	}
	count := func(name string, failed bool) uint64 {
		h, ok := got[name].(metricdata.Histogram[float64])
		if !ok {
			t.Fatalf("%s: %T", name, got[name])
		}
		var n uint64
		for _, dp := range h.DataPoints {
			_, isErr := dp.Attributes.Value("memor.error")
			if isErr == failed {
				n += dp.Count
			}
		}
		return n
	}
	if n := count("memor.query.duration", false); n != 4 {
		t.Errorf("memor.query.duration: %d successful queries, want 4", n)
	}
	if n := count("memor.query.duration", true); n != 1 {
		t.Errorf("memor.query.duration: %d failed queries, want 1", n)
	}
	if n := count("memor.apply.duration", false); n != 3 {
		t.Errorf("memor.apply.duration: %d episodes, want 3", n)
	}
}

// TestTelemetryBesideObserver: the Observer keeps reporting every stage
// when OpenTelemetry is on too.
func TestTelemetryBesideObserver(t *testing.T) {
	ctx := context.Background()
	obs := &recordingObserver{}
	e, exp := tracedEngine(t, memor.Options{Observer: obs})
	if _, err := e.Add(ctx, telUser, "I live in Oslo and I work at Acme.", memor.Sync()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Query(ctx, telUser, "where do I live", memor.QueryOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(obs.queries) != 1 || obs.stages[memor.StageBM25] != 1 || obs.stages[memor.StageLoad] != 1 {
		t.Errorf("observer: %v %v", obs.queries, obs.stages)
	}
	if len(spansNamed(exp.GetSpans(), "memor.Query")) != 1 {
		t.Error("no memor.Query span")
	}
}

// BenchmarkQueryTelemetry: what OpenTelemetry costs a Query: none (no
// provider: no OpenTelemetry code runs), the API's no-op providers, and
// the SDK recording every span in memory.
func BenchmarkQueryTelemetry(b *testing.B) {
	for _, c := range []struct {
		name string
		o    func() memor.Options
	}{
		{"otel=none", func() memor.Options { return memor.Options{} }},
		{"otel=noop", func() memor.Options {
			return memor.Options{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()}
		}},
		{"otel=sdk", func() memor.Options {
			return memor.Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter())),
				MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			o := c.o()
			o.NoSync = true
			e, err := memor.Open(b.TempDir(), o)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			for i := range 50 {
				if _, err := e.Add(ctx, "u", fmt.Sprintf("I visited City%d and met Person%d.", i, i), memor.Sync()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Query(ctx, "u", "where did I meet Person7", memor.QueryOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
