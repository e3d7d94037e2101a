package fuzz

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/extract"
	"github.com/memor-db/memor/extract/llm"
	"github.com/memor-db/memor/internal/diskscan"
	"github.com/memor-db/memor/internal/fakellm"
	"github.com/memor-db/memor/kv"
)

// canaryModel is an OpenAI-compatible chat-completions endpoint standing
// in for an LLM extractor and judge: a text naming the canary yields one
// op whose predicate is made of the canary's token (as a model makes
// predicates from the user's words), any other text one op of predicate
// hums_tune; the judge answers replace.
type canaryModel struct {
	token  string
	judged atomic.Int32
}

func (m *canaryModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, err := fakellm.ReadChat(r)
	if err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var content string
	switch req.Schema {
	case fakellm.Ops:
		text := req.Text()
		pred, obj, quote := "hums_tune", "a tune", strings.TrimSuffix(text, ".")
		if strings.Contains(text, m.token) {
			pred, obj = "collects_"+m.token+"_stamps", "stamps"
		}
		op, _ := json.Marshal(map[string]any{"kind": "assert", "subject": "user", "predicate": pred, "object": obj,
			"context": "", "valid_from": "", "confidence": 1, "additive": false, "quote": quote})
		content = `{"ops":[` + string(op) + `]}`
	case fakellm.Verdict:
		m.judged.Add(1)
		content = `{"verdict":"replace","reason":"one at a time"}`
	default:
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	fakellm.WriteCompletion(w, "m", content)
}

// filesContaining lists the files under dir whose bytes contain needle.
func filesContaining(t testing.TB, dir string, needle []byte) []string {
	t.Helper()
	hits, err := diskscan.FilesContaining(dir, needle)
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// TestForgetCanary: user A writes a unique canary into episodes and facts;
// after Forget(A) no file under the store's folder holds it, and user B's
// data is intact (DESIGN §4, GDPR hard delete). Some of A's episodes go
// through an LLM extractor that makes a predicate of the canary, which a
// Judge then rules on: the predicate, in A's claims and in the cached
// verdict, goes too (regression, issue 15.8: verdicts were kept under a
// global key, outside every user's range, and outlived the Forget in a
// table file and the MANIFEST).
func TestForgetCanary(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// A canary no other byte sequence in the store can contain by chance.
	// Its hex part is also what the tokenizer makes a term of (lower
	// case, split at the dashes), so that searching the files for it finds
	// index postings and graph names too, not only stored text.
	token := fmt.Sprintf("%x", time.Now().UnixNano())
	canary := "CANARY-" + token + "-zebra"
	clock := newTestClock()
	model := &canaryModel{token: token}
	srv := httptest.NewServer(model)
	defer srv.Close()
	client, err := llm.New(llm.WithBaseURL(srv.URL+"/v1"), llm.WithModel("m"), llm.WithAPIKey("k"),
		llm.WithTimeout(5*time.Second), llm.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	// The rule extractor for most writes, the model for the ones the
	// test marks.
	opts := memor.Options{Clock: clock.Now, Judge: llm.NewJudge(client),
		Extractor: routedExtractor{model: llm.NewExtractor(client)}}
	e, err := memor.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	// A's first write is a bulk import: large enough to commit as a table
	// ingested straight into the bottom level, which Forget must rewrite.
	var bulk []memor.FactInput
	for i := range 400 {
		bulk = append(bulk, memor.FactInput{Subject: "user", Predicate: "visited",
			Object: fmt.Sprintf("%s place %d", canary, i), ValidFrom: clock.Now().Add(-time.Duration(i) * time.Hour)})
	}
	if _, err := e.AssertBatch(ctx, "A", bulk); err != nil {
		t.Fatal(err)
	}
	if st, err := e.Stats(ctx); err != nil || st.IngestedTables != 1 {
		t.Fatalf("the bulk import was not ingested as a table: %+v, %v", st, err)
	}
	const n = 40
	for i := range n {
		if i == n/2 {
			// Half of A's writes go to flushed tables (which Forget's
			// compaction must rewrite), half stay in the memtable and its
			// write-ahead log.
			e = flushTables(t, e, dir, opts)
		}
		clock.Advance(time.Minute)
		if _, err := e.Add(ctx, "A", fmt.Sprintf("Note %d: my secret is %s.", i, canary), memor.Sync()); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Assert(ctx, "A", memor.FactInput{Subject: "user", Predicate: "likes",
			Object: fmt.Sprintf("%s %d", canary, i), Quote: "I like " + canary}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Assert(ctx, "A", memor.FactInput{Subject: canary + " friend", Predicate: "lives_in",
			Object: "Oslo", Context: "ctx " + canary, ValidFrom: clock.Now().Add(-time.Duration(i) * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Add(ctx, "B", fmt.Sprintf("B note %d", i), memor.Sync()); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			// Through the model: A's predicate is made of the canary.
			if _, err := e.Add(ctx, "A", fmt.Sprintf("%sI collect stamps %s, lot %d.", modelMark, canary, i), memor.Sync()); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Add(ctx, "B", fmt.Sprintf("%sI hum a tune %d.", modelMark, i), memor.Sync()); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.Assert(ctx, "B", memor.FactInput{Subject: "user", Predicate: "likes",
			Object: fmt.Sprintf("tea %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Flush(ctx, "A"); err != nil {
		t.Fatal(err)
	}
	if fs, err := e.History(ctx, "A", "user", "collects_"+token+"_stamps"); err != nil || len(fs) == 0 {
		t.Fatalf("A's model-made predicate has no fact (%v): the test would prove nothing", err)
	}
	if n := model.judged.Load(); n != 3 {
		t.Fatalf("judge asked %d times, want 3 (A's visited and model-made predicate, B's hums_tune)", n)
	}
	// The test can fail: before Forget the canary is on disk.
	if hits := filesContaining(t, dir, []byte(canary)); len(hits) == 0 {
		t.Fatal("canary not found on disk before Forget: the test would prove nothing")
	}
	wantB, err := e.History(ctx, "B", "user", "likes")
	if err != nil {
		t.Fatal(err)
	}
	epsB, err := e.Episodes(ctx, "B")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Forget(ctx, "A"); err != nil {
		t.Fatal(err)
	}

	leaks := func() []string {
		return append(filesContaining(t, dir, []byte(canary)), filesContaining(t, dir, []byte(token))...)
	}
	// While the engine is open, Pebble's MANIFEST still records A's keys
	// as table bounds (Forget's documented exception, rewritten at
	// Close); every other file must be clean at once. Pebble deletes
	// obsolete files in the background: give it a moment.
	dataLeaks := func() []string {
		var out []string
		for _, h := range leaks() {
			if !strings.HasPrefix(h, "MANIFEST-") {
				out = append(out, h)
			}
		}
		return out
	}
	hits := dataLeaks()
	for deadline := time.Now().Add(2 * time.Second); len(hits) > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		hits = dataLeaks()
	}
	if len(hits) > 0 {
		t.Errorf("after Forget the canary is still in %s", strings.Join(hits, ", "))
	}
	if fs, err := e.State(ctx, "A"); err != nil || len(fs) != 0 {
		t.Errorf("State(A) after Forget: %d facts, %v", len(fs), err)
	}
	gotB, err := e.History(ctx, "B", "user", "likes")
	if err != nil {
		t.Fatal(err)
	}
	if len(gotB) != len(wantB) || len(wantB) != n {
		t.Errorf("B has %d versions, had %d (want %d)", len(gotB), len(wantB), n)
	}
	for i := range min(len(gotB), len(wantB)) {
		if gotB[i].ID != wantB[i].ID || !gotB[i].RecordedAt.Equal(wantB[i].RecordedAt) {
			t.Errorf("B version %d changed: %v → %v", i, wantB[i], gotB[i])
		}
	}
	if eps, err := e.Episodes(ctx, "B"); err != nil || len(eps) != len(epsB) {
		t.Errorf("B has %d episodes, had %d (%v)", len(eps), len(epsB), err)
	}
	if err := e.Check(ctx); err != nil {
		t.Error(err)
	}
	// After Close no file holds it, the MANIFEST included (regression:
	// the MANIFEST kept A's keys as bounds of deleted tables; earlier, a
	// write-ahead log Pebble kept for recycling held A's bytes), nor after
	// reopening, and B's data survives both.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if hits := leaks(); len(hits) > 0 {
		t.Errorf("after Forget and Close the canary is in %s", strings.Join(hits, ", "))
	}
	e, err = memor.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	// B's own verdict survived A's Forget: B's rebuild asks nothing.
	if err := e.Rebuild(ctx, "B"); err != nil {
		t.Fatal(err)
	}
	if n := model.judged.Load(); n != 3 {
		t.Errorf("judge asked %d times after B's Rebuild, want still 3", n)
	}
	if users, err := e.Users(ctx); err != nil || len(users) != 1 || users[0] != "B" {
		t.Errorf("users after reopen: %v, %v; want [B]", users, err)
	}
	if gotB, err := e.History(ctx, "B", "user", "likes"); err != nil || len(gotB) != n {
		t.Errorf("after reopen B has %d versions (%v), want %d", len(gotB), err, n)
	}
	if err := e.Check(ctx); err != nil {
		t.Error(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if hits := leaks(); len(hits) > 0 {
		t.Errorf("after reopening the canary is in %s", strings.Join(hits, ", "))
	}
}

// modelMark starts the texts routedExtractor sends to its model.
const modelMark = "[model] "

// routedExtractor sends texts that start with modelMark to model and the
// rest to the rule extractor.
type routedExtractor struct{ model extract.Extractor }

func (r routedExtractor) Extract(ctx context.Context, text string, at time.Time) ([]extract.Op, error) {
	if strings.HasPrefix(text, modelMark) {
		return r.model.Extract(ctx, text, at)
	}
	return extract.NewRuleExtractor().Extract(ctx, text, at)
}

// flushTables closes e, flushes everything the store holds in memory into
// table files, and opens the store again.
func flushTables(t *testing.T, e *memor.Engine, dir string, o memor.Options) *memor.Engine {
	t.Helper()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	flushStore(t, dir)
	e, err := memor.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// flushStore writes everything a closed store holds in its logs into table
// files.
func flushStore(t *testing.T, dir string) {
	t.Helper()
	db, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}
