package reference

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/memor-db/memor/memortest"
)

func date(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

func TestResolveTime(t *testing.T) {
	at := time.Date(2025, 8, 20, 15, 0, 0, 0, time.UTC) // a Wednesday
	for _, tc := range []struct {
		in, rest string
		want     time.Time
	}{
		{"I moved to Vienna on 2025-08-01", "I moved to Vienna", date(2025, 8, 1)},
		{"I am vegetarian since March 2024", "I am vegetarian", date(2024, 3, 1)},
		{"I moved to Oslo in January", "I moved to Oslo", date(2025, 1, 1)},
		{"I moved to Oslo in December", "I moved to Oslo", date(2024, 12, 1)},
		{"I got married last weekend", "I got married", date(2025, 8, 16).Add(15 * time.Hour)},
		{"I relocated to Porto last month", "I relocated to Porto", at.AddDate(0, -1, 0)},
		{"I live in Oslo", "I live in Oslo", at},
	} {
		rest, got := resolveTime(tc.in, at)
		if rest != tc.rest || !got.Equal(tc.want) {
			t.Errorf("resolveTime(%q) = %q, %v; want %q, %v", tc.in, rest, got, tc.rest, tc.want)
		}
	}
}

func TestExtract(t *testing.T) {
	at := date(2025, 5, 1)
	persons := map[string]bool{}
	for _, tc := range []struct {
		text string
		want []string // "subject predicate object context conf end"
	}{
		{"I live in Seattle.", []string{"user lives_in Seattle  1 false"}},
		{"My brother Alex lives in Austin.", []string{"user brother Alex  1 false", "Alex lives_in Austin  1 false"}},
		{"Alex moved to Dallas.", []string{"Alex lives_in Dallas  1 false"}},
		{"I think I might move to Boston.", []string{"user lives_in Boston  0.4 false"}},
		{"Maybe I will work at Apple.", []string{"user works_at Apple  0.4 false"}},
		{"At work I use a BlackBerry.", []string{"user uses_device BlackBerry work 1 false"}},
		{"I quit my job.", []string{"user works_at   1 true", "user job_title   1 true"}},
		{"I no longer play the violin.", []string{"user plays_instrument violin  1 true"}},
		{"I have a dog named Max.", []string{"user has_pet dog named Max  1 false"}},
		{"My favourite food is ramen now.", []string{"user favorite_food ramen  1 false"}},
		{"I'm vegan. I also speak French!", []string{"user diet vegan  1 false", "user speaks_language French  1 false"}},
		{"The weather is nice.", nil},
	} {
		var got []string
		for _, o := range extract(tc.text, at, persons) {
			got = append(got, o.subject+" "+o.predicate+" "+o.object+" "+o.context+" "+ftoa(o.conf)+" "+btoa(o.end))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("extract(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func ftoa(f float64) string {
	if f == 1 {
		return "1"
	}
	return "0.4"
}

func btoa(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// The state of a user is a function of what was said, not of the order it
// arrived in (DESIGN §3): replaying every case's turns shuffled gives the
// same Current and the same answers.
func TestOrderIndependence(t *testing.T) {
	cases, err := memortest.Cases()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range cases {
		if slices.ContainsFunc(c.Turns, func(tr memortest.Turn) bool { return tr.Text[0] != 'I' && tr.Text[0] != 'M' }) {
			continue // a name-only subject needs the relation said first
		}
		want := replay(t, c.Turns, c.User, c.Question)
		for range 5 {
			turns := slices.Clone(c.Turns)
			rng.Shuffle(len(turns), func(i, j int) { turns[i], turns[j] = turns[j], turns[i] })
			if got := replay(t, turns, c.User, c.Question); !slices.Equal(got, want) {
				t.Errorf("%s: shuffled turns give %q, in order %q", c.Name, got, want)
			}
		}
	}
}

func replay(t *testing.T, turns []memortest.Turn, user, q string) []string {
	ctx := context.Background()
	m := New(Options{})
	for _, tr := range turns {
		if err := m.Add(ctx, tr.User, tr.Text, tr.At); err != nil {
			t.Fatal(err)
		}
	}
	cur, err := m.Current(ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tr := range cur {
		out = append(out, tr.String())
	}
	slices.Sort(out)
	res, err := m.Query(ctx, user, q, 10)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(res)
	return append(out, res...)
}
