package memor_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/extract/llm"
)

// drivesCar is an application's own predicate, declared with everything
// the catalogue holds.
var drivesCar = memor.Predicate{Name: "drives_car", Cardinality: memor.One, Aliases: []string{"current_car"},
	Gloss: "drives car vehicle automobile", Topic: []string{"Car"}, Note: `the model, e.g. "Tesla Model 3"`}

// TestRegisteredPredicateGlossFindsFact: the gloss of a predicate
// registered through Options.Predicates reaches the text indexes, so a
// question in words the fact does not contain ("vehicle") finds it; an
// engine without the declaration does not.
func TestRegisteredPredicateGlossFindsFact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, declared := range []bool{true, false} {
		var o memor.Options
		if declared {
			o.Predicates = []memor.Predicate{drivesCar}
		}
		e, _ := openTest(t, o)
		if _, err := e.Assert(ctx, "u", memor.FactInput{Subject: "user", Predicate: "drives_car", Object: "Rivian", ValidFrom: day(1)}); err != nil {
			t.Fatal(err)
		}
		rs, err := e.Query(ctx, "u", "Which automobile?", memor.QueryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := served(rs, "Rivian"); got != declared {
			t.Errorf("declared=%v: served Rivian = %v, want %v:\n%s", declared, got, declared, texts(rs))
		}
	}
}

// TestRegisteredPredicateCardinality: a One predicate registered with an
// alias resolves as One under either name: the newer car supersedes the
// older.
func TestRegisteredPredicateCardinality(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, _ := openTest(t, memor.Options{Predicates: []memor.Predicate{drivesCar}})
	if _, err := e.Assert(ctx, "u", memor.FactInput{Subject: "user", Predicate: "drives_car", Object: "Tesla", ValidFrom: day(1)}); err != nil {
		t.Fatal(err)
	}
	ds, err := e.Assert(ctx, "u", memor.FactInput{Subject: "user", Predicate: "Current Car", Object: "Rivian", ValidFrom: day(5)})
	if err != nil {
		t.Fatal(err)
	}
	superseded := false
	for _, d := range ds {
		superseded = superseded || d.Rule == memor.RuleSupersede
	}
	if !superseded {
		t.Errorf("decisions %+v: the alias's claim superseded nothing", ds)
	}
	fs, err := e.History(ctx, "u", "user", "drives_car")
	if err != nil {
		t.Fatal(err)
	}
	var current []string
	for _, f := range fs {
		if f.VisibleAt(day(6), time.Now()) {
			current = append(current, f.Object)
		}
	}
	if len(current) != 1 || current[0] != "Rivian" {
		t.Errorf("values of drives_car at day 6: %v, want [Rivian]", current)
	}
}

// promptServer answers every extraction with ops and keeps the system
// prompts it was sent.
type promptServer struct {
	mu      sync.Mutex
	prompts []string
	ops     string
}

func (s *promptServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) != 2 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.prompts = append(s.prompts, req.Messages[0].Content)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "c", "object": "chat.completion", "created": 1, "model": "m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": s.ops}}},
	})
}

// TestRegisteredPredicateReachesLLMPrompt: the LLM extractor given to Open
// is told the predicates declared in Options.Predicates — and those
// registered after Open — with their notes, beside the defaults.
func TestRegisteredPredicateReachesLLMPrompt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := &promptServer{ops: `{"ops":[` + opJSON("drives_car", "Rivian", "I drive a Rivian") + `]}`}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c, err := llm.New(llm.WithBaseURL(srv.URL+"/v1"), llm.WithModel("m"), llm.WithAPIKey("k"),
		llm.WithTimeout(5*time.Second), llm.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	e, _ := openTest(t, memor.Options{Extractor: llm.NewExtractor(c), Predicates: []memor.Predicate{drivesCar}})
	if err := e.RegisterPredicate("bakes", memor.Many); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Add(ctx, "u", "I drive a Rivian.", memor.At(day(1))); err != nil {
		t.Fatal(err)
	}
	if err := e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	prompts := s.prompts
	s.mu.Unlock()
	if len(prompts) != 1 {
		t.Fatalf("%d extraction requests, want 1", len(prompts))
	}
	for _, want := range []string{`drives_car (the model, e.g. "Tesla Model 3")`, "bakes", "lives_in", "has_pet"} {
		if !strings.Contains(prompts[0], want) {
			t.Errorf("the prompt does not list %q:\n%s", want, prompts[0])
		}
	}
	one := prompts[0][strings.Index(prompts[0], "one value at a time:"):]
	one = one[:strings.Index(one, "\n")]
	if !strings.Contains(one, "drives_car") || strings.Contains(one, "bakes") {
		t.Errorf("single-valued line: %q, want drives_car and not bakes", one)
	}
	rs, err := e.Query(ctx, "u", "What vehicle do I have?", memor.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 || rs[0].Fact == nil || rs[0].Fact.Object != "Rivian" {
		t.Errorf("the extracted fact is not found by its gloss:\n%s", texts(rs))
	}
}

// TestRegisteredRelationNamesPeople: the objects of a relation predicate
// an application declares are people the rule extractor knows by name in
// later episodes, like a brother's.
func TestRegisteredRelationNamesPeople(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, relation := range []bool{true, false} {
		e, _ := openTest(t, memor.Options{Predicates: []memor.Predicate{{Name: "cousin", Cardinality: memor.Many, Relation: relation}}})
		if _, err := e.Assert(ctx, "u", memor.FactInput{Subject: "user", Predicate: "cousin", Object: "Maya", ValidFrom: day(1)}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Add(ctx, "u", "Maya moved to Dallas.", memor.At(day(2)), memor.Sync()); err != nil {
			t.Fatal(err)
		}
		fs, err := e.History(ctx, "u", "Maya", "lives_in")
		if err != nil {
			t.Fatal(err)
		}
		if got := len(fs) == 1 && fs[0].Object == "Dallas"; got != relation {
			t.Errorf("relation=%v: Maya's lives_in = %+v", relation, fs)
		}
	}
}
