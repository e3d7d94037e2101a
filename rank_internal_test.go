package memor

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor/index/bm25"
)

func openRankTest(t *testing.T) *Engine {
	t.Helper()
	e, err := Open(filepath.Join(t.TempDir(), "db"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// chatter adds n turns of everyday talk: the common words ("what", "did",
// "how", "the") get the low IDF they have in a real conversation.
func chatter(t *testing.T, e *Engine, user string, at time.Time, n int) time.Time {
	t.Helper()
	lines := []string{
		"What did you think of the weather today?",
		"How did the meeting go this morning?",
		"What time did the train leave?",
		"Did you see what happened at the office?",
		"How was the dinner with the neighbours?",
	}
	for i := range n {
		at = at.Add(time.Hour)
		if _, err := e.Add(context.Background(), user, fmt.Sprintf("%s (%d)", lines[i%len(lines)], i), At(at)); err != nil {
			t.Fatal(err)
		}
	}
	return at
}

// TestQueryVectorWeightsRareWords: the question's vector weighs its words
// by their rarity in the user's own documents, so a short turn sharing
// only a name and "what"/"did" with the question loses ground against a
// turn sharing the words that say what is asked; and with the signals
// scaled against the best candidate and the noise floor instead of min-max
// (which tied the two here), the short turn does not push out the lexical
// match.
func TestQueryVectorWeightsRareWords(t *testing.T) {
	ctx := context.Background()
	e := openRankTest(t)
	at := chatter(t, e, "u", time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), 30)
	short, err := e.Add(ctx, "u", "Gina: what did you do?", At(at.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	match, err := e.Add(ctx, "u", "Gina started a pottery class at the community centre", At(at.Add(2*time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	q := "What did Gina do in her pottery class?"
	ui, err := e.idx.get(ctx, e.db, "u")
	if err != nil {
		t.Fatal(err)
	}
	qv, err := e.queryVector(ctx, ui, q)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := e.idx.embedOne(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := e.idx.emb.Embed(ctx, []string{short.Text, match.Text})
	if err != nil {
		t.Fatal(err)
	}
	cos := func(a, b []float32) (s float64) {
		for i := range a {
			s += float64(a[i] * b[i])
		}
		return s
	}
	before := cos(plain, vs[1]) - cos(plain, vs[0])
	after := cos(qv, vs[1]) - cos(qv, vs[0])
	if after <= before+0.05 {
		t.Errorf("lexical match minus short turn: %.3f weighted, %.3f unweighted; want the weighted margin larger", after, before)
	}
	rs, err := e.Query(ctx, "u", q, QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 || rs[0].Episode == nil || rs[0].Episode.Seq != match.Seq {
		t.Errorf("first result %s, want the pottery turn", first(rs))
		for _, r := range rs[:min(3, len(rs))] {
			t.Logf("%+v %s", r.Signals, r.Text())
		}
	}
	// A stop word keeps a weight (the first-person wording of a user's
	// statements matters), a rare word weighs more than a common one.
	idf := termIDF(ui.bm, q)
	if w := wordWeight(ui.bm, idf, "what"); w != stopWordWeight {
		t.Errorf("weight of a stop word %g, want %g", w, float64(stopWordWeight))
	}
	if wp, wt := wordWeight(ui.bm, idf, "pottery"), wordWeight(ui.bm, idf, "time"); wp <= wt {
		t.Errorf("weight of pottery %g ≤ weight of time %g", wp, wt)
	}
}

func first(rs []Result) string {
	if len(rs) == 0 {
		return "none"
	}
	return rs[0].Text()
}

// TestFactsOverSources: a fact ranks at least as high as the episode it
// came from, ahead of it on the same score, and says what it gained.
func TestFactsOverSources(t *testing.T) {
	ep := &Episode{Seq: 7}
	src := &candidate{doc: 1, episode: ep, score: 0.9}
	fact := &candidate{doc: 2, fact: &Fact{Episode: 7}, score: 0.5}
	other := &candidate{doc: 3, fact: &Fact{Episode: 8}, score: 0.4}
	list := []*candidate{src, fact, other}
	factsOverSources(list)
	sortCandidates(list)
	if list[0] != fact || list[1] != src {
		t.Fatalf("order %v, want the fact before its episode", []uint32{list[0].doc, list[1].doc, list[2].doc})
	}
	if d := fact.signals.Source - 0.4; d > 1e-12 || d < -1e-12 {
		t.Errorf("Signals.Source = %g, want 0.4", fact.signals.Source)
	}
	if other.score != 0.4 || other.signals.Source != 0 {
		t.Errorf("a fact whose episode is no candidate changed: %+v", other)
	}
}

// TestNewestFirst: a later message restating the same matter with a new
// value is served above the earlier one, without any fact extracted from
// either, and says so in its Signals; a message on another matter gains
// nothing.
func TestNewestFirst(t *testing.T) {
	ctx := context.Background()
	e := openRankTest(t)
	at := chatter(t, e, "u", time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), 20)
	old, err := e.Add(ctx, "u", "I have uploaded 25 documents to the shared research folder so far.", At(at.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	at = chatter(t, e, "u", at.Add(2*time.Hour), 10)
	newer, err := e.Add(ctx, "u", "Quick update: I have now uploaded 30 documents to the research folder.", At(at.Add(72*time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	q := "How many documents have I uploaded to the shared research folder?"
	rank := func(rs []Result, seq uint64) int {
		for i, r := range rs {
			if r.Episode != nil && r.Episode.Seq == seq {
				return i
			}
		}
		return -1
	}
	rs, err := e.Query(ctx, "u", q, QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ro, rn := rank(rs, old.Seq), rank(rs, newer.Seq)
	if rn < 0 || ro < 0 || ro < rn {
		t.Fatalf("old at %d, newer at %d; want both, the newer first", ro, rn)
	}
	// The old one has the closer wording: it ranked first before the
	// reordering, so the newer one gained and the old one lost.
	if rs[rn].Signals.Newer <= 0 || rs[ro].Signals.Stale <= 0 || rs[ro].Signals.Stale >= 1 {
		t.Errorf("signals: newer %+v, old %+v", rs[rn].Signals, rs[ro].Signals)
	}
	for i, r := range rs {
		if i > 0 && r.Score > rs[i-1].Score {
			t.Errorf("scores out of order at %d: %v after %v", i, r.Score, rs[i-1].Score)
		}
		if r.Episode != nil && strings.HasPrefix(r.Episode.Text, "What") && r.Signals.Newer > 0 {
			t.Errorf("result %d %q gained from another matter", i, r.Episode.Text)
		}
	}
}

// nopWriter discards what an index writes: the tests below need its
// in-memory statistics only.
type nopWriter struct{}

func (nopWriter) Set(_, _ []byte) error { return nil }
func (nopWriter) Delete([]byte) error   { return nil }

// TestNewestFirstPermutes states newestFirst's semantics on a served list:
// the owner's two turns on the question's matter swap places so the later
// is first; the assistant's echo of the update (another speaker) and the
// owner's later turn on another matter keep theirs; the list holds the
// same results, with scores still in order.
func TestNewestFirstPermutes(t *testing.T) {
	ix := bm25.New([]byte("t"), bm25.Options{})
	day := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	turns := []struct {
		speaker, text string
		day           int
	}{
		{"", "I have uploaded 25 documents to the shared research folder so far.", 1},
		{"assistant", "Great, so you have uploaded 30 documents to the shared research folder: here is how to tag them.", 9},
		{"", "I have now uploaded 30 documents to the research folder, two more to go.", 8},
		{"", "The research seminar moved to Thursday, so I will present then.", 10},
	}
	for i, tu := range turns {
		if err := ix.Add(nopWriter{}, uint32(i), tu.text); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 30 {
		if err := ix.Add(nopWriter{}, uint32(100+i), fmt.Sprintf("What did you think of the weather today? (%d)", i)); err != nil {
			t.Fatal(err)
		}
	}
	var list []*candidate
	for i, tu := range turns {
		list = append(list, &candidate{doc: uint32(i), score: 1 - 0.1*float64(i),
			episode: &Episode{Seq: uint64(i), User: "u", Speaker: tu.speaker, Text: tu.text, At: day.AddDate(0, 0, tu.day)}})
	}
	newestFirst(ix, "How many documents have I uploaded to the shared research folder?", list)
	var got []uint32
	for i, c := range list {
		got = append(got, c.doc)
		if i > 0 && c.score > list[i-1].score {
			t.Errorf("scores out of order at %d", i)
		}
	}
	if want := []uint32{2, 1, 0, 3}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v (the owner's later statement first, the others in place)", got, want)
	}
	if list[0].signals.Newer <= 0 || list[2].signals.Stale <= 0 || list[2].signals.Stale >= 1 {
		t.Errorf("signals: moved up %+v, moved down %+v", list[0].signals, list[2].signals)
	}
	if list[1].signals.Newer != 0 || list[3].signals.Newer != 0 {
		t.Errorf("a result that kept its place gained: %+v, %+v", list[1].signals, list[3].signals)
	}
}

// TestLengthNormalise: the vector signal's height above the noise floor
// is divided by the pivoted length 1 − s + s·len/avg, so of three turns
// equally close to the question the long one (a real assistant reply in
// Markdown) falls below the average, the short ones rise above it, by at
// most 1/(1 − s); a hit at the noise floor is left alone, and so is the
// raw cosine the noise thresholds read. With s = 0 nothing moves.
func TestLengthNormalise(t *testing.T) {
	long, err := os.ReadFile(filepath.Join("testdata", "texts", "assistant-reply-markdown.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ix := bm25.New([]byte("t"), bm25.Options{})
	texts := []string{"I moved the standup to nine.", string(long), "What did you think of the weather today?"}
	for i, s := range texts {
		if err := ix.Add(nopWriter{}, uint32(i), s); err != nil {
			t.Fatal(err)
		}
	}
	fresh := func() map[uint32]*candidate {
		cands := map[uint32]*candidate{}
		for i := range texts {
			cands[uint32(i)] = &candidate{doc: uint32(i), rawVector: 0.6, signals: Signals{Vector: 0.6}}
		}
		cands[2].signals.Vector, cands[2].rawVector = minVector, minVector
		return cands
	}
	const s = 0.5
	cands := fresh()
	lengthNormalise(ix, cands, s)
	short, lng := cands[0].signals.Vector, cands[1].signals.Vector
	if !(short > 0.6 && short <= minVector+(0.6-minVector)/(1-s)) || !(lng < 0.6 && lng > minVector) {
		t.Errorf("short %.3f, long %.3f: want the short raised above 0.6 by at most 1/(1-s), the long below 0.6 and above the floor", short, lng)
	}
	for doc, got := range map[uint32]float64{0: short, 1: lng} {
		n, _ := ix.DocLen(doc)
		if want := minVector + (0.6-minVector)/(1-s+s*float64(n)/ix.AvgDocLen()); math.Abs(got-want) > 1e-12 {
			t.Errorf("doc %d (%d terms): %.6f, want %.6f", doc, n, got, want)
		}
	}
	if cands[2].signals.Vector != minVector || cands[0].rawVector != 0.6 || cands[1].rawVector != 0.6 {
		t.Errorf("floor hit %v, raw cosines %v %v: want them untouched", cands[2].signals.Vector, cands[0].rawVector, cands[1].rawVector)
	}
	flat := fresh()
	lengthNormalise(ix, flat, 0)
	if flat[0].signals.Vector != 0.6 || flat[1].signals.Vector != 0.6 {
		t.Errorf("s = 0 moved the signal: %v, %v", flat[0].signals.Vector, flat[1].signals.Vector)
	}
}

// TestScaleTextKeepsRatios: BM25 is scaled as a fraction of the best
// candidate's score, so a match a third as strong is worth a third, not
// the 0.1 min-max gave the weakest whatever the gap.
func TestScaleTextKeepsRatios(t *testing.T) {
	t.Parallel()
	a, b, c := &candidate{}, &candidate{}, &candidate{}
	a.signals.BM25, b.signals.BM25 = 6, 2
	scaleText([]*candidate{a, b, c})
	if a.signals.BM25 != 1 || math.Abs(b.signals.BM25-1.0/3) > 1e-12 || c.signals.BM25 != 0 {
		t.Errorf("scaled %g %g %g, want 1 1/3 0", a.signals.BM25, b.signals.BM25, c.signals.BM25)
	}
}

// TestScaleVectorFloor: cosine counts by its height above the noise floor
// relative to the best candidate's: a hit at the floor is worth nothing,
// and two hits both barely above it are not stretched to 0.1 and 1.
func TestScaleVectorFloor(t *testing.T) {
	t.Parallel()
	best, mid, floor := &candidate{}, &candidate{}, &candidate{}
	best.signals.Vector = minVector + 0.4
	mid.signals.Vector = minVector + 0.1
	floor.signals.Vector = minVector
	scaleVector([]*candidate{best, mid, floor})
	if best.signals.Vector != 1 || math.Abs(mid.signals.Vector-0.25) > 1e-9 || floor.signals.Vector != 0 {
		t.Errorf("scaled %g %g %g, want 1 0.25 0", best.signals.Vector, mid.signals.Vector, floor.signals.Vector)
	}
}

// TestCompleteSignals: a candidate one signal found gets the other
// signal's score too (it shares words with the question and its vector is
// close), instead of counting 0 there; one that shares no word gets no
// BM25 score.
func TestCompleteSignals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := openRankTest(t)
	chatter(t, e, "u", time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), 10)
	if _, err := e.Add(ctx, "u", "Gina started a pottery class at the community centre", At(time.Date(2026, 3, 5, 9, 0, 0, 0, time.UTC))); err != nil {
		t.Fatal(err)
	}
	if err := e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	ui, err := e.idx.get(ctx, e.db, "u")
	if err != nil {
		t.Fatal(err)
	}
	q := "Gina's pottery class"
	hits, err := ui.bm.Search(ctx, q, 5, nil)
	if err != nil || len(hits) == 0 {
		t.Fatalf("search: %v, %v", hits, err)
	}
	qv, err := e.queryVector(ctx, ui, q)
	if err != nil {
		t.Fatal(err)
	}
	// The pottery turn as if only the vector found it, a chatter turn as
	// if only BM25 had.
	pottery := &candidate{doc: hits[0].Doc, rawVector: 0.5}
	pottery.signals.Vector = 0.5
	other, err := ui.bm.Search(ctx, "weather today", 1, nil)
	if err != nil || len(other) == 0 {
		t.Fatalf("search: %v, %v", other, err)
	}
	chat := &candidate{doc: other[0].Doc}
	chat.signals.BM25 = other[0].Score
	cands := map[uint32]*candidate{pottery.doc: pottery, chat.doc: chat}
	if err := completeSignals(ctx, ui, q, qv, cands); err != nil {
		t.Fatal(err)
	}
	if d := pottery.signals.BM25 - hits[0].Score; d > 1e-9 || d < -1e-9 {
		t.Errorf("pottery turn BM25 %g, want its score %g", pottery.signals.BM25, hits[0].Score)
	}
	if pottery.rawVector != 0.5 {
		t.Errorf("a signal the candidate had was changed: %g", pottery.rawVector)
	}
	if chat.signals.BM25 != other[0].Score {
		t.Errorf("a BM25 score the candidate had was changed")
	}
	// The other way round: the pottery turn as if only BM25 found it.
	byText := &candidate{doc: hits[0].Doc}
	byText.signals.BM25 = hits[0].Score
	if err := completeSignals(ctx, ui, q, qv, map[uint32]*candidate{byText.doc: byText}); err != nil {
		t.Fatal(err)
	}
	if byText.rawVector < minVector || byText.signals.Vector != byText.rawVector {
		t.Errorf("pottery turn found by BM25: vector %g / %g, want its cosine", byText.signals.Vector, byText.rawVector)
	}
	// The chatter turn shares no word with the question: its vector,
	// if filled in at all, is at most noise-level.
	if chat.rawVector != 0 && chat.rawVector < minVector {
		t.Errorf("vector filled in below the noise floor: %g", chat.rawVector)
	}
}

// TestNewestFirstValues: two turns of one speaker that each state a
// figure are the same matter at a lower share of the question's wording
// (sameValueShare), since an update is phrased anew around its new
// figure; the same pair without figures keeps its order.
func TestNewestFirstValues(t *testing.T) {
	day := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	q := "How many volunteers have I listed on the charity run poster for the spring fundraiser?"
	for _, c := range []struct {
		name          string
		older, update string
		swap          bool
	}{
		{"figures", "I'm glad the 12 volunteers are listed on the charity run poster for the spring fundraiser.",
			"The volunteer count on the poster has gone up to 15 now.", true},
		{"no figures", "I'm glad the volunteers are listed on the charity run poster for the spring fundraiser.",
			"The volunteer count on the poster has gone up again now.", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ix := bm25.New([]byte("t"), bm25.Options{})
			for i, text := range []string{c.older, c.update} {
				if err := ix.Add(nopWriter{}, uint32(i), text); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 30 {
				if err := ix.Add(nopWriter{}, uint32(100+i), fmt.Sprintf("What did you think of the weather today? (%d)", i)); err != nil {
					t.Fatal(err)
				}
			}
			list := []*candidate{
				{doc: 0, score: 1, episode: &Episode{Seq: 1, User: "u", Text: c.older, At: day}},
				{doc: 1, score: 0.9, episode: &Episode{Seq: 2, User: "u", Text: c.update, At: day.AddDate(0, 0, 7)}},
			}
			newestFirst(ix, q, list)
			if swapped := list[0].doc == 1; swapped != c.swap {
				t.Errorf("update first: %v, want %v", swapped, c.swap)
			}
		})
	}
}

// TestSupersedersFirst: a served fact that superseded the value an
// earlier served turn stated is moved above that turn; a fact that
// superseded nothing, or another slot's, keeps its place.
func TestSupersedersFirst(t *testing.T) {
	ctx := context.Background()
	e := openRankTest(t)
	day := time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC)
	add := func(text string, at time.Time) Episode {
		t.Helper()
		ep, err := e.Add(ctx, "u", text, At(at))
		if err != nil {
			t.Fatal(err)
		}
		return ep
	}
	older := add("Our budget for groceries is $400 a month, and the market on Elm Street is the cheapest.", day)
	other := add("My phone plan is $35 a month.", day.AddDate(0, 0, 1))
	chatter(t, e, "u", day.AddDate(0, 0, 2), 10)
	update := add("Prices went up, so I've raised our grocery budget to $450 a month.", day.AddDate(0, 1, 0))
	if err := e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	state, err := e.State(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	var grocery, phone *Fact
	for i, f := range state {
		switch f.Predicate {
		case "amount_grocery_budget":
			grocery = &state[i]
		case "amount_phone_plan":
			phone = &state[i]
		}
	}
	if grocery == nil || grocery.Object != "$450 monthly" || grocery.Rule != RuleSupersede || grocery.Episode != update.Seq {
		t.Fatalf("grocery budget in force: %+v, want $450 monthly from the update, superseding", grocery)
	}
	if phone == nil || phone.Rule == RuleSupersede {
		t.Fatalf("phone plan in force: %+v, want a first value", phone)
	}
	qv, err := e.queryView(ctx, "u", time.Time{}, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	defer qv.snap.Close()
	list := []*candidate{
		{score: 1, episode: &older},
		{score: 0.9, episode: &other},
		{score: 0.5, fact: phone},
		{score: 0.4, fact: grocery},
	}
	if err := supersedersFirst(ctx, qv, "u", list); err != nil {
		t.Fatal(err)
	}
	if list[0].fact != grocery || list[1].episode != &older || list[2].episode != &other || list[3].fact != phone {
		t.Fatalf("order %v, want the $450 fact, the $400 turn, the phone turn, the phone fact", describe(list))
	}
	if list[0].score != 1 || list[0].signals.Newer != 0.6 {
		t.Errorf("moved fact: score %v, newer %v; want 1 and 0.6", list[0].score, list[0].signals.Newer)
	}
}

func describe(list []*candidate) []string {
	var out []string
	for _, c := range list {
		if c.fact != nil {
			out = append(out, c.fact.String())
		} else {
			out = append(out, c.episode.Text)
		}
	}
	return out
}

// TestNewestFirstFacts: two facts of one subject that the question's words
// make one matter are served newest first, though the resolver keeps them
// apart (different predicates); a fact never trades places with a turn,
// nor with another subject's fact.
func TestNewestFirstFacts(t *testing.T) {
	day := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	q := "What is my monthly sheet music budget?"
	docs := []string{
		"user amount music budget $40 monthly",
		"user amount sheet music budget $55",
		"Dana amount sheet music budget $70",
		"I keep my sheet music in a folder by the piano.",
	}
	ix := bm25.New([]byte("t"), bm25.Options{})
	for i, text := range docs {
		if err := ix.Add(nopWriter{}, uint32(i), text); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 30 {
		if err := ix.Add(nopWriter{}, uint32(100+i), fmt.Sprintf("What did you think of the weather today? (%d)", i)); err != nil {
			t.Fatal(err)
		}
	}
	older := &Fact{Subject: "user", Predicate: "amount_music_budget", Object: "$40 monthly", ValidFrom: day}
	newer := &Fact{Subject: "user", Predicate: "amount_sheet_music_budget", Object: "$55", ValidFrom: day.AddDate(0, 1, 0)}
	dana := &Fact{Subject: "Dana", Predicate: "amount_sheet_music_budget", Object: "$70", ValidFrom: day.AddDate(0, 2, 0)}
	turn := &Episode{Seq: 9, User: "u", Text: docs[3], At: day.AddDate(0, 3, 0)}
	list := []*candidate{
		{doc: 0, score: 1, fact: older},
		{doc: 1, score: 0.9, fact: newer},
		{doc: 2, score: 0.8, fact: dana},
		{doc: 3, score: 0.7, episode: turn},
	}
	newestFirst(ix, q, list)
	if list[0].fact != newer || list[1].fact != older || list[2].fact != dana || list[3].episode != turn {
		t.Fatalf("order %v, want the $55 fact, the $40 fact, Dana's, the turn", describe(list))
	}
	if list[0].signals.Newer <= 0 || list[1].signals.Stale <= 0 || list[1].signals.Stale >= 1 {
		t.Errorf("signals: newer %v, stale %v", list[0].signals.Newer, list[1].signals.Stale)
	}
}
