package memor_test

import (
	"context"
	"testing"
	"time"

	"github.com/memor-db/memor"
)

// timeEngine plays turns (time, text) and returns an engine whose clock
// stands on 2026-08-01.
func timeEngine(t *testing.T, turns ...[2]string) *memor.Engine {
	t.Helper()
	clock := newClock()
	e, _ := openTest(t, memor.Options{Clock: clock.Now})
	ctx := context.Background()
	for _, turn := range turns {
		when, err := time.Parse(time.RFC3339, turn[0])
		if err != nil {
			t.Fatal(err)
		}
		clock.Set(when)
		if _, err := e.Add(ctx, "me", turn[1], memor.At(when), memor.Sync()); err != nil {
			t.Fatal(err)
		}
	}
	clock.Set(at("2026-08-01"))
	return e
}

// TestTimeFromTextNamedDayCoversTheDay: a question about a named day, in
// any of the ways people write one, is asked as of that day's end: the
// afternoon's session is inside the view, the next day's is not.
func TestTimeFromTextNamedDayCoversTheDay(t *testing.T) {
	t.Parallel()
	e := timeEngine(t,
		[2]string{"2022-03-27T15:30:00Z", "We visited the museum of modern art."},
		[2]string{"2022-03-28T10:00:00Z", "We visited the museum of natural history."})
	ctx := context.Background()
	for _, q := range []string{
		"Which museum did we visit on 27 March, 2022?",
		"Which museum did we visit on March 27th, 2022?",
		"Which museum did we visit on 27/03/2022?",
		"Which museum did we visit on 2022-03-27?",
	} {
		rs, err := e.Query(ctx, "me", q, memor.QueryOptions{TimeFromText: true})
		if err != nil {
			t.Fatal(err)
		}
		if !served(rs, "modern art") || served(rs, "natural history") {
			t.Errorf("%s\n%s", q, texts(rs))
		}
	}
}

// TestTimeInTextResolves: the exported resolver gives a named day's last
// instant, a month's and a year's middle, and the span of each.
func TestTimeInTextResolves(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		q          string
		at         time.Time
		start, end time.Time
	}{
		{"on 27 March, 2022", time.Date(2022, 3, 28, 0, 0, 0, 0, time.UTC).Add(-time.Nanosecond),
			time.Date(2022, 3, 27, 0, 0, 0, 0, time.UTC), time.Date(2022, 3, 28, 0, 0, 0, 0, time.UTC)},
		{"in March 2025", time.Date(2025, 3, 15, 0, 0, 0, 0, time.UTC),
			time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2025, 4, 1, 0, 0, 0, 0, time.UTC)},
		{"in 2024", time.Date(2024, 7, 1, 0, 0, 0, 0, time.UTC),
			time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)},
		// Today: the view cannot be after now.
		{"on 2026-08-01", now, time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 8, 2, 0, 0, 0, 0, time.UTC)},
	} {
		got, ok := memor.TimeInText("what happened "+tt.q+"?", now)
		if !ok || !got.Equal(tt.at) {
			t.Errorf("TimeInText(%q) = %v, %v; want %v", tt.q, got, ok, tt.at)
		}
		s, e, ok := memor.TimeSpanInText("what happened "+tt.q+"?", now)
		if !ok || !s.Equal(tt.start) || !e.Equal(tt.end) {
			t.Errorf("TimeSpanInText(%q) = [%v, %v), %v; want [%v, %v)", tt.q, s, e, ok, tt.start, tt.end)
		}
	}
}

// TestTimeFromTextWhenQuestion: "When did …" asks for an event: the date
// it names does not move the view, so a move said after that date is
// still found. A question about what held then still moves it.
func TestTimeFromTextWhenQuestion(t *testing.T) {
	t.Parallel()
	e := timeEngine(t,
		[2]string{"2024-01-10T09:00:00Z", "I live in Seattle."},
		[2]string{"2025-06-02T09:00:00Z", "I moved to Denver."})
	ctx := context.Background()
	rs, err := e.Query(ctx, "me", "When did I move to Denver, in 2024?", memor.QueryOptions{TimeFromText: true})
	if err != nil {
		t.Fatal(err)
	}
	if !served(rs, "Denver") {
		t.Errorf("when-question lost the event:\n%s", texts(rs))
	}
	rs, err = e.Query(ctx, "me", "Where did I live in 2024?", memor.QueryOptions{TimeFromText: true})
	if err != nil {
		t.Fatal(err)
	}
	if !served(rs, "Seattle") || served(rs, "Denver") {
		t.Errorf("where-question in 2024:\n%s", texts(rs))
	}
}
