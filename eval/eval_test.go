package eval_test

import (
	"context"
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor/eval"
)

func TestLoadersAgree(t *testing.T) {
	b, err := eval.Load("testdata/beam")
	if err != nil {
		t.Fatal(err)
	}
	j, err := eval.Load("testdata/small.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 1 || len(j) != 1 {
		t.Fatalf("conversations: beam %d, jsonl %d", len(b), len(j))
	}
	bc, jc := b[0], j[0]
	if len(bc.Messages) != 6 || len(jc.Messages) != 6 {
		t.Fatalf("messages: %d, %d", len(bc.Messages), len(jc.Messages))
	}
	for i := range bc.Messages {
		if bc.Messages[i] != jc.Messages[i] {
			t.Errorf("message %d: beam %+v, jsonl %+v", i, bc.Messages[i], jc.Messages[i])
		}
	}
	// The anchor holds, one minute a message; the marker is gone.
	if m := bc.Messages[3]; !m.At.Equal(time.Date(2024, 3, 15, 0, 3, 0, 0, time.UTC)) {
		t.Errorf("message 3 at %v", m.At)
	}
	if m := bc.Messages[4]; m.Text != "Now I have uploaded 30 documents." || !m.At.Equal(time.Date(2024, 4, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("message 4: %+v", m)
	}
	if len(bc.Questions) != 4 || len(jc.Questions) != 4 {
		t.Fatalf("questions: %d, %d", len(bc.Questions), len(jc.Questions))
	}
	for i := range bc.Questions {
		q, r := bc.Questions[i], jc.Questions[i]
		if q.Type != r.Type || q.Text != r.Text || strings.Join(q.Evidence, ",") != strings.Join(r.Evidence, ",") ||
			strings.Join(q.Original, ",") != strings.Join(r.Original, ",") || strings.Join(q.Updated, ",") != strings.Join(r.Updated, ",") {
			t.Errorf("question %d: beam %+v, jsonl %+v", i, q, r)
		}
	}
}

func TestStripMarker(t *testing.T) {
	for in, want := range map[string]string{
		"hi ->-> 1,1":         "hi",
		"hi ->-> 2,N/A":       "hi",
		"hi ->-> 5,14)":       "hi",
		"hi ->-> 2,22, 24":    "hi",
		"a -> b":              "a -> b",
		"x ->-> 1,1 and more": "x ->-> 1,1 and more",
	} {
		if got := eval.StripMarker(in); got != want {
			t.Errorf("StripMarker(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestJSONLErrors(t *testing.T) {
	for name, in := range map[string]string{
		"no at":             `{"conversation":"c","id":"1","text":"hi"}`,
		"unknown evidence":  `{"conversation":"c","id":"1","at":"2024-01-01","text":"hi"}` + "\n" + `{"conversation":"c","question":"q","evidence":["9"]}`,
		"text and question": `{"conversation":"c","id":"1","at":"2024-01-01","text":"hi","question":"q"}`,
		"unknown field":     `{"conversation":"c","id":"1","at":"2024-01-01","text":"hi","speaker":"x"}`,
		"bad json":          `{"conversation":`,
		"bad at":            `{"conversation":"c","id":"1","at":"March","text":"hi"}`,
	} {
		if _, err := eval.LoadJSONL(strings.NewReader(in)); !errors.Is(err, eval.ErrData) {
			t.Errorf("%s: err %v, want ErrData", name, err)
		}
	}
}

func TestRecallAndAbove(t *testing.T) {
	ranked := []string{"a", "x", "a", "b", "y", "c"}
	for _, c := range []struct {
		k    int
		want float64
	}{{1, 1.0 / 3}, {4, 2.0 / 3}, {5, 2.0 / 3}, {6, 1}, {20, 1}} {
		if got := eval.RecallAt(ranked, []string{"a", "b", "c", "a"}, c.k); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("recall@%d = %v, want %v", c.k, got, c.want)
		}
	}
	if !eval.UpdateAbove(ranked, []string{"b"}, []string{"x"}) || eval.UpdateAbove(ranked, []string{"a"}, []string{"b"}) ||
		!eval.UpdateAbove(ranked, []string{"z"}, []string{"c"}) || eval.UpdateAbove(ranked, []string{"z"}, []string{"w"}) {
		t.Error("UpdateAbove")
	}
}

// TestRunSynthetic checks figures computed by hand on testdata (see the
// comments) for the deterministic baselines, and that memor finds the one
// message naming the saxophone.
func TestRunSynthetic(t *testing.T) {
	for _, path := range []string{"testdata/beam", "testdata/small.jsonl"} {
		cs, err := eval.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := eval.Run(context.Background(), cs, eval.Options{TempDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if r.Messages != 6 || r.Questions != 3 || r.NoEvidence != 1 || r.Refused != 0 || r.Failed != 0 {
			t.Fatalf("%s: %+v", path, r)
		}
		near := func(what string, got, want float64) {
			t.Helper()
			if math.Abs(got-want) > 1e-9 {
				t.Errorf("%s: %s = %.4f, want %.4f", path, what, got, want)
			}
		}
		// bm25: the saxophone message is the only one with both words
		// (1); of {2, 5} only 2 shares a word (0.5); both uploads match
		// "documents uploaded", the shorter update first (1).
		near("bm25 information_extraction r5", r.ByType["information_extraction"]["bm25"].R5, 1)
		near("bm25 multi_session_reasoning r20", r.ByType["multi_session_reasoning"]["bm25"].R20, 0.5)
		near("bm25 knowledge_update r5", r.ByType["knowledge_update"]["bm25"].R5, 1)
		near("bm25 all r10", r.All["bm25"].R10, 2.5/3)
		// recent: the last five are 5..1: message 0 (the original) is
		// out at 5, in at 10.
		near("recent knowledge_update r5", r.ByType["knowledge_update"]["recent"].R5, 0.5)
		near("recent all r5", r.All["recent"].R5, 2.5/3)
		near("recent all r10", r.All["recent"].R10, 1)
		if a := r.UpdateAbove["bm25"]; a.Above != 1 || a.N != 1 {
			t.Errorf("%s: bm25 update above %+v, want 1/1", path, a)
		}
		if a := r.UpdateAbove["recent"]; a.Above != 1 || a.N != 1 {
			t.Errorf("%s: recent update above %+v, want 1/1", path, a)
		}
		near("memor information_extraction r5", r.ByType["information_extraction"]["memor"].R5, 1)
		// memor serves the later of the owner's two upload statements
		// first (newestFirst), and says so per question.
		if a := r.UpdateAbove["memor"]; a.Above != 1 || a.N != 1 {
			t.Errorf("%s: memor update above %+v, want 1/1", path, a)
		}
		for _, q := range r.PerQuestion {
			if _, ok := q.UpdateAbove["memor"]; ok != (q.Type == "knowledge_update") {
				t.Errorf("%s: question %s (%s): update_above %v", path, q.ID, q.Type, q.UpdateAbove)
			}
		}
		var sb strings.Builder
		if err := r.WriteTable(&sb); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(sb.String(), "recall@10") || !strings.Contains(sb.String(), "Speaker") {
			t.Errorf("table:\n%s", sb.String())
		}
	}
}

// beamDir is the BEAM-100K data (MEMOR_BEAM_DIR, else beside the repository).
func beamDir() string {
	if d := os.Getenv("MEMOR_BEAM_DIR"); d != "" {
		return d
	}
	return "../../shared/datasets/beam-100k"
}

// TestBEAM loads all 20 conversations and runs three of them (a few
// seconds).
func TestBEAM(t *testing.T) {
	if _, err := os.Stat(beamDir()); err != nil {
		t.Skipf("BEAM data absent at %s (set MEMOR_BEAM_DIR): %v", beamDir(), err)
	}
	cs, err := eval.Load(beamDir())
	if err != nil {
		t.Fatal(err)
	}
	msgs, qs := 0, 0
	for _, c := range cs {
		msgs += len(c.Messages)
		qs += len(c.Questions)
		for _, m := range c.Messages {
			if strings.Contains(m.Text, "->->") {
				t.Errorf("conversation %s message %s keeps its marker: %q", c.Name, m.ID, m.Text[max(0, len(m.Text)-40):])
			}
		}
	}
	if len(cs) != 20 || msgs != 5732 || qs != 400 {
		t.Fatalf("%d conversations, %d messages, %d questions", len(cs), msgs, qs)
	}
	cs, err = eval.Select(cs, []string{"1", "2", "3"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := eval.Run(context.Background(), cs, eval.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Failed != 0 || r.Questions == 0 {
		t.Fatalf("%+v", r)
	}
	for _, m := range eval.Methods {
		a := r.All[m]
		if !(a.R5 <= a.R10 && a.R10 <= a.R20 && a.R20 <= 1) {
			t.Errorf("%s: recall not monotone in k: %+v", m, a)
		}
	}
	var sb strings.Builder
	r.WriteTable(&sb)
	t.Logf("\n%s", sb.String())
}

// TestUpdatePair: a message named as both original and update is on
// neither side; a question whose two sets are the same has no order to
// test.
func TestUpdatePair(t *testing.T) {
	for _, c := range []struct {
		original, updated, older, newer []string
	}{
		{[]string{"1"}, []string{"4"}, []string{"1"}, []string{"4"}},
		{[]string{"1", "2"}, []string{"2", "4"}, []string{"1"}, []string{"4"}},
		{[]string{"3"}, []string{"3"}, nil, nil},
		{[]string{"3", "3"}, []string{"3"}, nil, nil},
		{nil, []string{"4"}, nil, nil},
	} {
		o, n := eval.UpdatePair(c.original, c.updated)
		if !slices.Equal(o, c.older) || !slices.Equal(n, c.newer) {
			t.Errorf("UpdatePair(%v, %v) = %v, %v; want %v, %v", c.original, c.updated, o, n, c.older, c.newer)
		}
	}
}

// TestRunUnorderedUpdate: a knowledge update naming the same message as
// original and update is scored for recall but not counted in the
// update-above rate, and the table says it was left out.
func TestRunUnorderedUpdate(t *testing.T) {
	in := `{"conversation": "1", "id": "0", "role": "user", "at": "2024-03-15", "text": "I have uploaded 25 documents to the shared review folder this morning."}
{"conversation": "1", "id": "1", "role": "user", "at": "2024-04-01", "text": "I moved my piano lesson to Thursday evenings."}
{"conversation": "1", "id": "2", "role": "user", "text": "Now I have uploaded 30 documents."}
{"conversation": "1", "type": "knowledge_update", "question": "How many documents have I uploaded?", "original": ["0"], "updated": ["2"]}
{"conversation": "1", "type": "knowledge_update", "question": "When is my piano lesson?", "original": ["1"], "updated": ["1"]}
{"conversation": "1", "type": "knowledge_update", "question": "Where is the review folder?", "evidence": ["0"]}
`
	cs, err := eval.LoadJSONL(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	r, err := eval.Run(context.Background(), cs, eval.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Questions != 3 || r.UpdateUnordered != 1 || r.UpdateUnpaired != 1 {
		t.Fatalf("questions %d, unordered %d, unpaired %d; want 3, 1, 1", r.Questions, r.UpdateUnordered, r.UpdateUnpaired)
	}
	for _, m := range eval.Methods {
		if a := r.UpdateAbove[m]; a.N != 1 {
			t.Errorf("%s: update above counted over %d questions, want 1", m, a.N)
		}
	}
	if got := r.ByType["knowledge_update"]["memor"].N; got != 3 {
		t.Errorf("knowledge_update recall over %d questions, want 3", got)
	}
	var sb strings.Builder
	if err := r.WriteTable(&sb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), "1 name the same message as original and update") {
		t.Errorf("table does not say what it left out:\n%s", sb.String())
	}
}
