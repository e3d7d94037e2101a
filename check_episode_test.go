package memor_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/extract"
)

// replay writes ep through the public calls, as `memor import` does.
func replay(ctx context.Context, e *memor.Engine, ep memor.Episode) error {
	switch ep.Kind {
	case memor.EpisodeText:
		var opts []memor.AddOption
		if !ep.At.IsZero() {
			opts = append(opts, memor.At(ep.At))
		}
		_, err := e.Add(ctx, ep.User, ep.Text, opts...)
		return err
	case memor.EpisodeFacts:
		var batch []memor.FactInput
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			_, err := e.AssertBatch(ctx, ep.User, batch)
			batch = nil
			return err
		}
		for _, op := range ep.Ops {
			if op.Kind == extract.Assert {
				batch = append(batch, memor.FactInput{Subject: op.Subject, Predicate: op.Predicate, Object: op.Object,
					Context: op.Context, ValidFrom: op.ValidFrom, Confidence: op.Confidence, Quote: op.Quote})
				continue
			}
			if err := flush(); err != nil {
				return err
			}
			if _, err := e.End(ctx, ep.User, memor.EndInput{Subject: op.Subject, Predicate: op.Predicate,
				Object: op.Object, Context: op.Context, At: op.ValidFrom, Quote: op.Quote}); err != nil {
				return err
			}
		}
		return flush()
	case memor.EpisodeCorrect:
		return e.Correct(ctx, ep.User, ep.Correct.FactID)
	}
	return errors.New("no call replays this kind")
}

// TestCheckEpisode: CheckEpisode refuses an episode exactly when the calls
// that replay it refuse it as invalid input, with the same sentinel.
func TestCheckEpisode(t *testing.T) {
	t.Parallel()
	e, _ := openTest(t, memor.Options{MaxTextBytes: 200})
	ctx := context.Background()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	assert := func(subject, object string) extract.Op {
		return extract.Op{Kind: extract.Assert, Subject: subject, Predicate: "lives_in", Object: object, ValidFrom: at}
	}
	end := extract.Op{Kind: extract.End, Subject: "user", Predicate: "lives_in", ValidFrom: at.AddDate(0, 1, 0)}
	long := strings.Repeat("x", 150)
	facts := func(ops ...extract.Op) memor.Episode {
		return memor.Episode{User: "u", Kind: memor.EpisodeFacts, At: at, Ops: ops}
	}
	for name, tc := range map[string]struct {
		ep   memor.Episode
		want error // nil: valid
	}{
		"text":              {memor.Episode{User: "u", Kind: memor.EpisodeText, At: at, Text: "I live in Oslo."}, nil},
		"text, no time":     {memor.Episode{User: "u", Kind: memor.EpisodeText, Text: "I live in Oslo."}, nil},
		"blank user":        {memor.Episode{User: " ", Kind: memor.EpisodeText, Text: "I live in Oslo."}, memor.ErrInvalidUser},
		"NUL in user":       {memor.Episode{User: "u\x00", Kind: memor.EpisodeText, Text: "I live in Oslo."}, memor.ErrInvalidUser},
		"blank text":        {memor.Episode{User: "u", Kind: memor.EpisodeText, Text: " \n"}, memor.ErrInvalidText},
		"text not UTF-8":    {memor.Episode{User: "u", Kind: memor.EpisodeText, Text: "Oslo\xff"}, memor.ErrInvalidText},
		"text too long":     {memor.Episode{User: "u", Kind: memor.EpisodeText, Text: strings.Repeat("a ", 101)}, memor.ErrTooLarge},
		"time out of range": {memor.Episode{User: "u", Kind: memor.EpisodeText, At: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), Text: "hi"}, memor.ErrInvalidTime},
		"facts":             {facts(assert("user", "Oslo"), end, assert("user", "Rome")), nil},
		"empty object":      {facts(assert("user", "Oslo"), assert("user", " ")), memor.ErrInvalidFact},
		"empty subject":     {facts(end, assert("", "Oslo")), memor.ErrInvalidFact},
		"bad confidence":    {facts(extract.Op{Kind: extract.Assert, Subject: "user", Predicate: "lives_in", Object: "Oslo", Confidence: 2}), memor.ErrInvalidFact},
		"valid time out of range": {facts(extract.Op{Kind: extract.Assert, Subject: "user", Predicate: "lives_in", Object: "Oslo",
			ValidFrom: time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC)}), memor.ErrInvalidTime},
		"one long fact":           {facts(end, assert(long, long), end), memor.ErrTooLarge},
		"long facts in a batch":   {facts(assert(long, long), assert(long, long+"y")), nil},
		"correction":              {memor.Episode{User: "u", Kind: memor.EpisodeCorrect, Correct: &memor.Correction{FactID: strings.Repeat("ab", 16)}}, memor.ErrNotFound},
		"correction without fact": {memor.Episode{User: "u", Kind: memor.EpisodeCorrect}, memor.ErrInvalidFact},
		"no kind":                 {memor.Episode{User: "u", Text: "hi"}, memor.ErrInvalidFact},
	} {
		t.Run(name, func(t *testing.T) {
			got := e.CheckEpisode(tc.ep)
			if errors.Is(tc.want, memor.ErrNotFound) {
				// CheckEpisode does not look the fact up.
				if got != nil {
					t.Fatalf("CheckEpisode = %v, want nil", got)
				}
			} else if !errors.Is(got, tc.want) || (tc.want == nil) != (got == nil) {
				t.Fatalf("CheckEpisode = %v, want %v", got, tc.want)
			}
			if tc.ep.Kind == 0 || tc.ep.Kind == memor.EpisodeCorrect && tc.ep.Correct == nil {
				return // no call replays it
			}
			// The replay of an episode of several calls can fail after
			// writing some ("empty subject", "one long fact"): that is why
			// import checks every episode first.
			if err := replay(ctx, e, tc.ep); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("replay = %v, want %v", err, tc.want)
			}
		})
	}
}
