package memor_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/extract"
	"github.com/memor-db/memor/internal/corpus"
)

// said adds what speaker said (Sync, so the facts are there on return).
func said(t *testing.T, e *memor.Engine, user, speaker, text string, at time.Time) memor.Episode {
	t.Helper()
	opts := []memor.AddOption{memor.At(at), memor.Sync()}
	if speaker != "" {
		opts = append(opts, memor.Speaker(speaker))
	}
	ep, err := e.Add(context.Background(), user, text, opts...)
	if err != nil {
		t.Fatalf("Add(%q, %q): %v", speaker, text, err)
	}
	return ep
}

// facts renders a user's current state as sorted "subject predicate
// object" lines.
func facts(t *testing.T, e *memor.Engine, user string) []string {
	t.Helper()
	st, err := e.State(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range st {
		out = append(out, f.String())
	}
	slices.Sort(out)
	return out
}

// TestSpeakerKeepsParticipantsApart: in a two-person conversation each
// speaker's first person is that speaker, not the memory's owner, so
// their facts stay apart and a One predicate of one never supersedes the
// other's.
func TestSpeakerKeepsParticipantsApart(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{})
	said(t, e, "u", "Caroline", "I play acoustic guitar.", day(1))
	said(t, e, "u", "Melanie", "I play the clarinet.", day(1).Add(time.Minute))
	said(t, e, "u", "Caroline", "I live in Boston.", day(2))
	said(t, e, "u", "Melanie", "I live in Seattle.", day(3))
	got := facts(t, e, "u")
	want := []string{"Caroline lives_in Boston", "Caroline plays_instrument acoustic guitar",
		"Melanie lives_in Seattle", "Melanie plays_instrument clarinet"}
	if !slices.Equal(got, want) {
		t.Fatalf("state:\n got %q\nwant %q", got, want)
	}
	log, err := e.Log(context.Background(), "u")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range log {
		if d.Rule == memor.RuleSupersede {
			t.Fatalf("one speaker's claim superseded another's: %+v", d)
		}
	}
}

// TestSpeakerRelation: relations hang off the speaker, and the people
// they name are the speaker's, known by name in the speaker's later turns.
func TestSpeakerRelation(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{})
	said(t, e, "u", "Caroline", "My brother Alex lives in Austin.", day(1))
	got := facts(t, e, "u")
	want := []string{"Alex lives_in Austin", "Caroline brother Alex"}
	if !slices.Equal(got, want) {
		t.Fatalf("state:\n got %q\nwant %q", got, want)
	}
	// The people a speaker named are known in the speaker's later turns.
	said(t, e, "u", "Caroline", "Alex moved to Dallas.", day(5))
	got = facts(t, e, "u")
	want = []string{"Alex lives_in Dallas", "Caroline brother Alex"}
	if !slices.Equal(got, want) {
		t.Fatalf("state after the move:\n got %q\nwant %q", got, want)
	}
}

// TestSpeakerQuery: a question naming a participant is answered from
// their facts and turns: "Where does Caroline live?" is Boston, with
// Caroline's turn and not Melanie's.
func TestSpeakerQuery(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{})
	said(t, e, "u", "Caroline", "I live in Boston.", day(2))
	said(t, e, "u", "Melanie", "I live in Seattle.", day(3))
	res, err := e.Query(context.Background(), "u", "Where does Caroline live?", memor.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) == 0 || res[0].Fact == nil || res[0].Fact.String() != "Caroline lives_in Boston" {
		t.Fatalf("first result: %v", resultTexts(res))
	}
	caroline, melanie := -1, -1
	for i, r := range res {
		if r.Episode == nil {
			continue
		}
		switch r.Episode.Speaker {
		case "Caroline":
			caroline = i
		case "Melanie":
			melanie = i
		}
	}
	if caroline < 0 || (melanie >= 0 && melanie < caroline) {
		t.Fatalf("Caroline's turn at %d, Melanie's at %d: %v", caroline, melanie, resultTexts(res))
	}
	for _, r := range res {
		if r.Fact != nil && strings.Contains(r.Fact.String(), "Seattle") {
			t.Fatalf("Melanie's city served for Caroline: %v", resultTexts(res))
		}
	}
}

// TestSpeakerNamedWithoutFacts: a question naming a speaker memor knows
// no fact about still ranks that speaker's turns first.
func TestSpeakerNamedWithoutFacts(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{})
	said(t, e, "u", "Melanie", "The trip to the coast was long but the food was great.", day(1))
	said(t, e, "u", "Caroline", "Our trip to the coast got rained out, sadly.", day(2))
	res, err := e.Query(context.Background(), "u", "What did Caroline say about the trip to the coast?", memor.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) == 0 || res[0].Episode == nil || res[0].Episode.Speaker != "Caroline" {
		t.Fatalf("first result is not Caroline's turn: %v", resultTexts(res))
	}
}

func resultTexts(rs []memor.Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Text()
	}
	return out
}

// TestSpeakerOwner: without Speaker, or with the owner's own ID (or the
// subject "user") as speaker, first person is the owner, exactly as before.
func TestSpeakerOwner(t *testing.T) {
	t.Parallel()
	for _, speaker := range []string{"", "u", "user", "User"} {
		e, _ := openTest(t, memor.Options{})
		said(t, e, "u", speaker, "I live in Boston.", day(1))
		if got := facts(t, e, "u"); !slices.Equal(got, []string{"user lives_in Boston"}) {
			t.Fatalf("speaker %q: state %q", speaker, got)
		}
		eps, err := e.Episodes(context.Background(), "u")
		if err != nil || len(eps) != 1 || eps[0].Speaker != speaker {
			t.Fatalf("speaker %q: episodes %+v %v", speaker, eps, err)
		}
	}
}

// TestSpeakerResultText: an episode result names its speaker.
func TestSpeakerResultText(t *testing.T) {
	t.Parallel()
	at := time.Date(2024, 3, 15, 10, 0, 0, 0, time.UTC)
	ep := memor.Episode{Kind: memor.EpisodeText, At: at, Text: "I play guitar", Speaker: "Caroline"}
	if got := (memor.Result{Episode: &ep}).Text(); got != "[2024-03-15] Caroline: I play guitar" {
		t.Fatalf("Text() = %q", got)
	}
	ep.Speaker = ""
	if got := (memor.Result{Episode: &ep}).Text(); got != "[2024-03-15] I play guitar" {
		t.Fatalf("Text() without speaker = %q", got)
	}
}

// TestSpeakerInvalid: a bad speaker name is refused with ErrInvalidSpeaker
// and nothing is stored.
func TestSpeakerInvalid(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{})
	ctx := context.Background()
	for _, name := range []string{"", "   ", "\u200b", "Ann\x00", "Ann\nBob", "\xff\xfe", strings.Repeat("a", memor.MaxSpeakerBytes+1)} {
		_, err := e.Add(ctx, "u", "I live in Boston.", memor.Speaker(name), memor.Sync())
		if !errors.Is(err, memor.ErrInvalidSpeaker) {
			t.Fatalf("Speaker(%q): %v, want ErrInvalidSpeaker", name, err)
		}
		if err := memor.ValidSpeaker(name); !errors.Is(err, memor.ErrInvalidSpeaker) {
			t.Fatalf("ValidSpeaker(%q): %v", name, err)
		}
	}
	if eps, _ := e.Episodes(ctx, "u"); len(eps) != 0 {
		t.Fatalf("refused episodes stored: %+v", eps)
	}
	if err := e.CheckEpisode(memor.Episode{User: "u", Kind: memor.EpisodeText, Text: "hi", Speaker: "a\x01"}); !errors.Is(err, memor.ErrInvalidSpeaker) {
		t.Fatalf("CheckEpisode: %v", err)
	}
	if _, err := e.Add(ctx, "u", "I live in Boston.", memor.Speaker(strings.Repeat("é", memor.MaxSpeakerBytes/2)), memor.Sync()); err != nil {
		t.Fatalf("a speaker of MaxSpeakerBytes: %v", err)
	}
}

// inputRecorder is an InputExtractor that records what it was told and
// answers in the owner's voice, as a model that ignored the speaker would.
type inputRecorder struct {
	mu  sync.Mutex
	got []extract.Input
}

func (x *inputRecorder) Extract(ctx context.Context, text string, at time.Time) ([]extract.Op, error) {
	return x.ExtractInput(ctx, extract.Input{Text: text, At: at})
}

func (x *inputRecorder) ExtractInput(ctx context.Context, in extract.Input) ([]extract.Op, error) {
	x.mu.Lock()
	x.got = append(x.got, in)
	x.mu.Unlock()
	return []extract.Op{{Kind: extract.Assert, Subject: "user", Predicate: "lives_in", Object: "Boston", Quote: "Boston"}}, nil
}

// TestSpeakerReachesExtractor: an InputExtractor is told the speaker, and
// whatever an extractor says about the owner in a spoken episode is about
// the speaker (the engine's safety net, for every extractor).
func TestSpeakerReachesExtractor(t *testing.T) {
	t.Parallel()
	x := &inputRecorder{}
	e, _ := openTest(t, memor.Options{Extractor: x})
	said(t, e, "u", "Caroline", "I live in Boston.", day(1))
	said(t, e, "u", "", "I live in Boston.", day(2))
	if len(x.got) != 2 || x.got[0].Speaker != "Caroline" || x.got[1].Speaker != "" || x.got[0].Text != "I live in Boston." {
		t.Fatalf("extractor inputs: %+v", x.got)
	}
	plain := extract.ExtractorFunc(func(ctx context.Context, text string, at time.Time) ([]extract.Op, error) {
		return []extract.Op{{Kind: extract.Assert, Subject: "User", Predicate: "lives_in", Object: "Boston", Quote: "Boston"}}, nil
	})
	e2, _ := openTest(t, memor.Options{Extractor: plain})
	said(t, e2, "u", "Caroline", "I live in Boston.", day(1))
	if got := facts(t, e2, "u"); !slices.Equal(got, []string{"Caroline lives_in Boston"}) {
		t.Fatalf("plain extractor in a spoken episode: %q", got)
	}
}

// TestSpeakerRebuild: the speaker is part of the episode: kept, and
// replayed by Rebuild to the same facts byte for byte, also after reopen.
func TestSpeakerRebuild(t *testing.T) {
	t.Parallel()
	e, dir := openTest(t, memor.Options{})
	ctx := context.Background()
	said(t, e, "u", "Caroline", "I live in Boston. My brother Alex plays the drums.", day(1))
	said(t, e, "u", "Melanie", "I live in Seattle.", day(2))
	if _, err := e.Add(ctx, "u", "I moved to Denver.", memor.At(day(3)), memor.Speaker("Caroline")); err != nil {
		t.Fatal(err)
	}
	if err := e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	hist := func() string {
		var b strings.Builder
		for _, subj := range []string{"Caroline", "Melanie", "Alex"} {
			for _, p := range []string{"lives_in", "brother", "plays_instrument"} {
				fs, err := e.History(ctx, "u", subj, p)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range fs {
					b.WriteString(f.String() + " " + f.ID + " " + f.RecordedAt.String() + "\n")
				}
			}
		}
		return b.String()
	}
	before, beforeEps := hist(), episodeLines(t, e)
	if !strings.Contains(before, "Caroline lives_in Denver") || !strings.Contains(before, "Melanie lives_in Seattle") {
		t.Fatalf("history:\n%s", before)
	}
	if err := e.Rebuild(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if got := hist(); got != before {
		t.Fatalf("Rebuild changed history:\n%s---\n%s", before, got)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err := memor.Open(dir, memor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got := episodeLines(t, e); got != beforeEps || !strings.Contains(got, "Melanie: I live in Seattle.") {
		t.Fatalf("episodes after reopen:\n%s---\n%s", beforeEps, got)
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

func episodeLines(t *testing.T, e *memor.Engine) string {
	t.Helper()
	eps, err := e.Episodes(context.Background(), "u")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, ep := range eps {
		b.WriteString((memor.Result{Episode: &ep}).Text() + "\n")
	}
	return b.String()
}

// TestSpeakerCorpus: every realistic text, said by a named speaker
// (queued and Sync), is stored with its speaker, applied without failure,
// found by its own words after the speaker's name, and survives Rebuild.
func TestSpeakerCorpus(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{NoSync: true})
	ctx := context.Background()
	speakers := []string{"Caroline", "José María", "李娜", "O'Brien-Smith", "assistant"}
	for i, tx := range corpus.MustTexts() {
		sp := speakers[i%len(speakers)]
		if _, err := e.Add(ctx, "u", tx.Body, memor.At(day(i)), memor.Speaker(sp)); err != nil {
			t.Fatalf("%s: Add: %v", tx.Name, err)
		}
		if _, err := e.Add(ctx, "u", tx.Body, memor.At(day(i)), memor.Speaker(sp), memor.Sync()); err != nil {
			t.Fatalf("%s: Add Sync: %v", tx.Name, err)
		}
	}
	if err := e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	check := func(stage string) {
		t.Helper()
		if f, err := e.Freshness(ctx, "u"); err != nil || f.Failed != 0 || f.Pending != 0 {
			t.Fatalf("%s: freshness %+v %v", stage, f, err)
		}
		eps, err := e.Episodes(ctx, "u")
		if err != nil {
			t.Fatal(err)
		}
		for i, tx := range corpus.MustTexts() {
			sp := speakers[i%len(speakers)]
			for _, ep := range eps[2*i : 2*i+2] {
				if ep.Text != tx.Body || ep.Speaker != sp {
					t.Fatalf("%s: %s: episode %d kept as %q by %q", stage, tx.Name, ep.Seq, cut(ep.Text, 40), ep.Speaker)
				}
			}
			if !searchable(tx.Body) {
				continue
			}
			// Asked the way a transcript reads, naming the speaker: the
			// owner's first person is not the speaker's.
			q := sp + ": " + cut(tx.Body, 200)
			res, err := e.Query(ctx, "u", q, memor.QueryOptions{K: 20})
			if err != nil {
				t.Fatalf("%s: %s: Query: %v", stage, tx.Name, err)
			}
			found := slices.ContainsFunc(res, func(r memor.Result) bool {
				return r.Episode != nil && r.Episode.Text == tx.Body ||
					r.Fact != nil && (r.Fact.Episode == eps[2*i].Seq || r.Fact.Episode == eps[2*i+1].Seq)
			})
			if !searchable(q) {
				continue
			}
			if !found {
				t.Fatalf("%s: %s: not found by its own words", stage, tx.Name)
			}
		}
		if err := e.Check(ctx); err != nil {
			t.Fatalf("%s: Check: %v", stage, err)
		}
	}
	check("written")
	before := facts(t, e, "u")
	if err := e.Rebuild(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	check("rebuilt")
	if got := facts(t, e, "u"); !slices.Equal(got, before) {
		t.Fatalf("Rebuild changed the state")
	}
}

// TestSpeakerOwnerQuestion: in a memory where others speak too, the
// owner's first-person question is answered with the owner's facts, never
// a speaker's, while the speakers' turns stay searchable.
func TestSpeakerOwnerQuestion(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{})
	said(t, e, "u", "", "I live in Denver.", day(1))
	said(t, e, "u", "Melanie", "I live in Seattle.", day(2))
	said(t, e, "u", "assistant", "I work as a producer and I plan the mixer at the Coral Bay Hotel.", day(3))
	res, err := e.Query(context.Background(), "u", "Where do I live?", memor.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) == 0 || res[0].Fact == nil || res[0].Fact.String() != "user lives_in Denver" {
		t.Fatalf("first result: %v", resultTexts(res))
	}
	for _, r := range res {
		if r.Fact != nil && r.Fact.Subject != "user" {
			t.Fatalf("a speaker's fact answers the owner's question: %v", resultTexts(res))
		}
	}
	res, err = e.Query(context.Background(), "u", "How should I plan the mixer at the Coral Bay Hotel?", memor.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(res, func(r memor.Result) bool { return r.Episode != nil && r.Episode.Speaker == "assistant" }) {
		t.Fatalf("the assistant's turn is not found for the owner's question: %v", resultTexts(res))
	}
	if got := facts(t, e, "u"); !slices.Contains(got, "assistant job_title producer") {
		t.Fatalf("the assistant's own fact (which must not hide its turn) is not there: %q", got)
	}
}

// TestSpeakerNamedRelation: "Where does Caroline's brother live?" walks
// the relation facts Caroline's own turns made (Caroline → brother →
// Alex), and not Melanie's brother's.
func TestSpeakerNamedRelation(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{})
	said(t, e, "u", "Caroline", "I live in Boston.", day(1))
	said(t, e, "u", "Caroline", "My brother Alex lives in Austin.", day(2))
	said(t, e, "u", "Melanie", "My brother Tom lives in Chicago.", day(3))
	for q, want := range map[string][2]string{
		"Where does Caroline's brother live?": {"Alex lives_in Austin", "Caroline → brother → Alex → lives_in → Austin"},
		"Where does Melanie's brother live?":  {"Tom lives_in Chicago", "Melanie → brother → Tom → lives_in → Chicago"},
	} {
		res, err := e.Query(context.Background(), "u", q, memor.QueryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res) == 0 || res[0].Fact == nil || res[0].Fact.String() != want[0] {
			t.Fatalf("%q: first result: %v", q, resultTexts(res))
		}
		if res[0].Path != want[1] {
			t.Errorf("%q: path %q, want %q", q, res[0].Path, want[1])
		}
	}
}

// TestSpeakerParticipantNamed: the other participants of the user's
// conversation (the speakers of earlier episodes) are known names, so
// Melanie saying "Caroline moved to Denver" is a fact about Caroline;
// the names come from earlier episodes only, so Rebuild replays the same
// facts.
func TestSpeakerParticipantNamed(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{})
	ctx := context.Background()
	// Before Caroline has spoken, her name is not known.
	said(t, e, "u", "Melanie", "Caroline moved to Denver.", day(1))
	if got := facts(t, e, "u"); len(got) != 0 {
		t.Fatalf("a name no earlier episode knows made facts: %q", got)
	}
	said(t, e, "u", "Caroline", "I live in Boston.", day(2))
	said(t, e, "u", "Melanie", "Caroline moved to Denver.", day(3))
	want := []string{"Caroline lives_in Denver"}
	if got := facts(t, e, "u"); !slices.Equal(got, want) {
		t.Fatalf("state:\n got %q\nwant %q", got, want)
	}
	hist := func() string {
		fs, err := e.History(ctx, "u", "Caroline", "lives_in")
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, f := range fs {
			b.WriteString(f.String() + " " + f.ID + " " + f.RecordedAt.String() + "\n")
		}
		return b.String()
	}
	before := hist()
	if err := e.Rebuild(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if got := hist(); got != before {
		t.Fatalf("Rebuild changed history:\n%s---\n%s", before, got)
	}
	if got := facts(t, e, "u"); !slices.Equal(got, want) {
		t.Fatalf("state after Rebuild:\n got %q\nwant %q", got, want)
	}
}
