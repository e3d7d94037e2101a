package memor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor/kv"
)

// episodesEngine opens an engine (with tune) whose user "u" had the
// corpus's two-speaker conversation, a turn at a time with its speaker,
// and the corpus's long chat turn and assistant reply: more episodes than
// a query serves, most of them long.
func episodesEngine(t *testing.T, tune tuning) *Engine {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC) // (the forgetting curve's)
	e, err := openTuned(filepath.Join(t.TempDir(), "db"), Options{Clock: func() time.Time { return now }}, tune)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	add := func(text, speaker string) {
		t.Helper()
		at = at.Add(time.Minute)
		opts := []AddOption{At(at), Sync()}
		if speaker != "" {
			opts = append(opts, Speaker(speaker))
		}
		if _, err := e.Add(ctx, "u", text, opts...); err != nil {
			t.Fatal(err)
		}
	}
	conv, err := os.ReadFile("testdata/texts/conversation-two-speakers.txt")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(conv)) {
		if text, ok := strings.CutPrefix(line, "Assistant: "); ok {
			add(strings.TrimSpace(text), "assistant")
		} else if text, ok := strings.CutPrefix(line, "User: "); ok {
			add(strings.TrimSpace(text), "")
		}
	}
	for _, name := range []string{"chat-long-turn.txt", "assistant-reply-markdown.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata/texts", name))
		if err != nil {
			t.Fatal(err)
		}
		add(string(b), map[string]string{"assistant-reply-markdown.txt": "assistant"}[name])
	}
	return e
}

// TestShallowEpisodeMatchesRecord: what a query ranks an episode on
// before reading it (the document map's times and speaker) is what the
// episode's record says.
func TestShallowEpisodeMatchesRecord(t *testing.T) {
	ctx := context.Background()
	e := episodesEngine(t, defaultTuning())
	qv, err := e.queryView(ctx, "u", time.Time{}, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	defer qv.snap.Close()
	shallow, speakers := 0, map[string]bool{}
	for doc := range qv.ui.episodes {
		s, full := &candidate{doc: doc}, &candidate{doc: doc}
		if err := qv.loadDoc("u", s, nil, true); err != nil {
			t.Fatal(err)
		}
		if err := qv.loadDoc("u", full, nil, false); err != nil {
			t.Fatal(err)
		}
		if !s.shallow || full.shallow {
			t.Fatalf("document %d: shallow %v and %v", doc, s.shallow, full.shallow)
		}
		shallow++
		want := Episode{User: full.episode.User, Seq: full.episode.Seq, Kind: full.episode.Kind,
			At: full.episode.At, RecordedAt: full.episode.RecordedAt, Speaker: full.episode.Speaker}
		if !reflect.DeepEqual(*s.episode, want) {
			t.Errorf("document %d: ranked on %+v, the record says %+v", doc, *s.episode, want)
		}
		if s.episode.voice() != full.episode.voice() || full.episode.Text == "" {
			t.Errorf("document %d: voice %q, the record's %q (text %q)", doc, s.episode.voice(), full.episode.voice(), full.episode.Text)
		}
		speakers[full.episode.Speaker] = true
	}
	if shallow < 15 || !speakers[""] || !speakers["assistant"] {
		t.Fatalf("%d episodes, speakers %v: the test's conversation is not what it should be", shallow, speakers)
	}
}

// TestQueryServesEpisodesReadInFull: ranking episodes on the document map
// and reading only those served gives what reading every candidate gave
// (a document map written before format 15, which holds no speaker, is
// read so), with the served episodes read one after the other or at once,
// for questions with and without a focus, a reranker, the forgetting
// curve and a small k.
func TestQueryServesEpisodesReadInFull(t *testing.T) {
	ctx := context.Background()
	e := episodesEngine(t, defaultTuning())
	ui, err := e.idx.view(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	setVoiced := func(on bool) {
		ui.mu.Lock()
		defer ui.mu.Unlock()
		for _, d := range ui.episodes {
			d.voiced = on
		}
	}
	questions := []struct {
		text string
		opts QueryOptions
	}{
		{"what is my budget for the party?", QueryOptions{}},
		{"where does my sister live now?", QueryOptions{}},
		{"Thai cooking class price per person", QueryOptions{}},
		{"what did the assistant suggest for Denver?", QueryOptions{}},
		{"when is her birthday and when do the invites go out?", QueryOptions{K: 3}},
		{"vegan dinner options", QueryOptions{Reranker: constRR{}}},
		{"how many people are coming?", QueryOptions{Forgetting: true}},
		{"climbing wrist injury", QueryOptions{K: 30}},
	}
	episodes := 0
	for _, q := range questions {
		e.tune.readAtOnce = defaultReadAtOnce
		ranked, err := e.Query(ctx, "u", q.text, q.opts)
		if err != nil {
			t.Fatal(err)
		}
		e.tune.readAtOnce = 0 // every served episode after the first read at once
		atOnce, err := e.Query(ctx, "u", q.text, q.opts)
		if err != nil {
			t.Fatal(err)
		}
		setVoiced(false)
		read, err := e.Query(ctx, "u", q.text, q.opts)
		setVoiced(true)
		if err != nil {
			t.Fatal(err)
		}
		if len(read) == 0 {
			t.Fatalf("%q: nothing served", q.text)
		}
		if !reflect.DeepEqual(ranked, read) || !reflect.DeepEqual(atOnce, read) {
			t.Errorf("%q: ranked on the document map\n%s\nread at once\n%s\nevery candidate read\n%s",
				q.text, resultLines(ranked), resultLines(atOnce), resultLines(read))
		}
		for _, r := range ranked {
			if r.Episode != nil {
				episodes++
				if want, err := getEpisode(e.db, "u", r.Episode.Seq); err != nil || !reflect.DeepEqual(*r.Episode, want) {
					t.Errorf("%q: served episode %d is %+v, its record %+v (%v)", q.text, r.Episode.Seq, *r.Episode, want, err)
				}
			}
		}
	}
	if episodes < 2*len(questions) {
		t.Fatalf("%d episodes served over %d questions: the test does not reach them", episodes, len(questions))
	}
}

func resultLines(rs []Result) string {
	var b strings.Builder
	for _, r := range rs {
		b.WriteString(fmt.Sprintf("  %.6f %+v %.40q\n", r.Score, r.Signals, r.Text()))
	}
	return b.String()
}

// TestReadEpisodesDropsMissing: of the candidates ranked, the first n are
// read in full and the rest are not; one whose episode the snapshot lacks
// (a damaged store) is dropped and the next moves up and is read, one
// after the other or at once.
func TestReadEpisodesDropsMissing(t *testing.T) {
	ctx := context.Background()
	for _, atOnce := range []time.Duration{defaultReadAtOnce, 0} {
		tune := defaultTuning()
		tune.readAtOnce = atOnce
		e := episodesEngine(t, tune)
		ui, err := e.idx.view(ctx, "u")
		if err != nil {
			t.Fatal(err)
		}
		docs := slices.Sorted(func(yield func(uint32) bool) {
			ui.mu.RLock()
			defer ui.mu.RUnlock()
			for d := range ui.episodes {
				if !yield(d) {
					return
				}
			}
		})
		// The third candidate's episode is gone from the store (the
		// document map still names it).
		var missing uint64
		{
			qv, err := e.queryView(ctx, "u", time.Time{}, time.Time{}, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			c := &candidate{doc: docs[2]}
			if err := qv.loadDoc("u", c, nil, true); err != nil {
				t.Fatal(err)
			}
			qv.snap.Close()
			missing = c.episode.Seq
			b := e.db.NewBatch()
			if err := b.Delete(seqKey("u", kv.SubEpisode, missing)); err != nil {
				t.Fatal(err)
			}
			if err := b.Commit(); err != nil {
				t.Fatal(err)
			}
			b.Close()
		}
		qv, err := e.queryView(ctx, "u", time.Time{}, time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		var list []*candidate
		for _, d := range docs {
			c := &candidate{doc: d}
			if err := qv.loadDoc("u", c, nil, true); err != nil {
				t.Fatal(err)
			}
			list = append(list, c)
		}
		const n = 5
		got, err := e.readEpisodes(qv, "u", slices.Clone(list), n)
		qv.snap.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(list)-1 {
			t.Fatalf("readAtOnce %v: %d candidates of %d, want the missing one dropped", atOnce, len(got), len(list))
		}
		for i, c := range got {
			if c.episode.Seq == missing {
				t.Fatalf("readAtOnce %v: the missing episode %d is still a candidate", atOnce, missing)
			}
			if full := c.episode.Text != ""; c.shallow == full || full != (i < n) {
				t.Errorf("readAtOnce %v: candidate %d (episode %d): shallow %v, text %q; want the first %d read", atOnce, i, c.episode.Seq, c.shallow, c.episode.Text, n)
			}
		}
	}
}
