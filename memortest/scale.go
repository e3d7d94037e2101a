package memortest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// ErrScale reports invalid ScaleOptions.
var ErrScale = errors.New("memortest: bad scale options")

// ScaleOptions configure [GenerateScale].
type ScaleOptions struct {
	// Users and TurnsPerUser size the workload; TurnsPerUser must be at
	// least 2 + Changes.
	Users, TurnsPerUser int
	// Changes is how many moves or job changes are planted per user, at
	// random turns after the first two; default 2, at most 19. A change
	// never returns to an earlier value.
	Changes int
	// Start is the first turn's time (default 2025-01-01T09:00Z); a user's
	// turns are Step apart (default 24h), users a second apart.
	Start time.Time
	Step  time.Duration
	// Rand drives every choice; nil means rand.New(rand.NewPCG(Seed, Seed)).
	Rand *rand.Rand
	Seed uint64
	// AsOf adds time-travel probes: for each slot (city, employer) that
	// changed, one probe asks for the value in force on a day strictly
	// between a superseded value's start and the next change ("Where did I
	// live on 2025-01-04?"). A slot whose changes are all on consecutive
	// days gets none.
	AsOf bool
}

// Probe is a question about a user's state, now or on a past day, with a
// known answer.
type Probe struct {
	User, Question string
	Expect         string
	// Stale holds the slot's values that were not in force at the instant
	// asked about: the superseded ones for a current probe, every other
	// one (later values included) for an as-of probe.
	Stale []string
	// ChangedAt is when the expected value was planted.
	ChangedAt time.Time
	// AsOf is the day (midnight UTC) an as-of probe asks about, named in
	// Question; zero for a question about now.
	AsOf time.Time
}

// Scale is a generated workload: turns interleaved across users in time
// order, and the probes whose answers the turns determine.
type Scale struct {
	Turns  []Turn
	Probes []Probe
}

var (
	scaleCities    = []string{"Seattle", "Denver", "Austin", "Boston", "Chicago", "Portland", "Miami", "Atlanta", "Phoenix", "Dallas", "Oslo", "Lisbon", "Madrid", "Berlin", "Vienna", "Prague", "Dublin", "Toronto", "Montreal", "Sydney", "Melbourne", "Auckland", "Nairobi", "Lagos", "Cairo", "Seoul", "Osaka", "Taipei", "Hanoi", "Lima"}
	scaleCompanies = []string{"Acme", "Globex", "Initech", "Umbrella", "Hooli", "Stark Industries", "Wayne Enterprises", "Soylent", "Tyrell", "Cyberdyne", "Wonka", "Vandelay", "Dunder Mifflin", "Pied Piper", "Aperture", "Massive Dynamic", "Oscorp", "Gringotts", "Monarch", "Nakatomi"}
	scaleFoods     = []string{"sushi", "tacos", "ramen", "pizza", "curry", "dumplings", "falafel", "paella", "pho", "bagels"}
	scaleInstr     = []string{"guitar", "piano", "cello", "violin", "drums", "flute", "trumpet", "saxophone"}
	scaleLangs     = []string{"Spanish", "French", "German", "Italian", "Japanese", "Korean", "Portuguese", "Dutch"}
	scaleChatter   = []string{"Today was a long day.", "The weather is nice this week.", "Can you help me plan a trip?", "Remind me to call the bank.", "What a game last night!"}
)

// GenerateScale builds a deterministic workload of Users × TurnsPerUser
// turns. Each user starts with "I live in X." and "I work at Y.", then says
// filler facts and chatter, with Changes planted moves ("I moved to Z.") or
// job changes ("I work at W now.") at random turns; the probes ask for the
// city and employer in force at the end and, with AsOf, on a past day.
func GenerateScale(opts ScaleOptions) (Scale, error) {
	if opts.Changes == 0 {
		opts.Changes = 2
	}
	if opts.Users <= 0 || opts.Changes < 0 || opts.Changes >= len(scaleCompanies) || opts.TurnsPerUser < 2+opts.Changes {
		return Scale{}, fmt.Errorf("%w: users=%d turns=%d changes=%d", ErrScale, opts.Users, opts.TurnsPerUser, opts.Changes)
	}
	if opts.Start.IsZero() {
		opts.Start = time.Date(2025, 1, 1, 9, 0, 0, 0, time.UTC)
	}
	if opts.Step <= 0 {
		opts.Step = 24 * time.Hour
	}
	rng := opts.Rand
	if rng == nil {
		rng = rand.New(rand.NewPCG(opts.Seed, opts.Seed))
	}
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	// fresh never returns to an earlier value, so each planted change
	// leaves exactly one more stale value behind.
	fresh := func(xs, used []string) string {
		for {
			if x := pick(xs); !slices.Contains(used, x) {
				return x
			}
		}
	}
	var s Scale
	s.Turns = make([]Turn, 0, opts.Users*opts.TurnsPerUser)
	perUser := make([][]Turn, opts.Users)
	for u := range opts.Users {
		user := fmt.Sprintf("user-%06d", u)
		at := func(i int) time.Time {
			return opts.Start.Add(time.Duration(i)*opts.Step + time.Duration(u)*time.Second)
		}
		city, company := pick(scaleCities), pick(scaleCompanies)
		cities, companies := []string{city}, []string{company}
		cityAt, companyAt := at(0), at(1)
		// The instants each value of a slot took effect, for as-of probes.
		citiesAt, companiesAt := []time.Time{cityAt}, []time.Time{companyAt}
		turns := []Turn{
			{User: user, At: at(0), Text: "I live in " + city + "."},
			{User: user, At: at(1), Text: "I work at " + company + "."},
		}
		changeAt := rng.Perm(opts.TurnsPerUser - 2)[:opts.Changes]
		for i := 2; i < opts.TurnsPerUser; i++ {
			var text string
			switch {
			case slices.Contains(changeAt, i-2) && rng.IntN(2) == 0:
				city = fresh(scaleCities, cities)
				cities, cityAt = append(cities, city), at(i)
				citiesAt = append(citiesAt, cityAt)
				text = "I moved to " + city + "."
			case slices.Contains(changeAt, i-2):
				company = fresh(scaleCompanies, companies)
				companies, companyAt = append(companies, company), at(i)
				companiesAt = append(companiesAt, companyAt)
				text = "I work at " + company + " now."
			default:
				switch rng.IntN(4) {
				case 0:
					text = "I like " + pick(scaleFoods) + "."
				case 1:
					text = "I play the " + pick(scaleInstr) + "."
				case 2:
					text = "I speak " + pick(scaleLangs) + "."
				default:
					text = pick(scaleChatter)
				}
			}
			turns = append(turns, Turn{User: user, At: at(i), Text: text})
		}
		perUser[u] = turns
		s.Probes = append(s.Probes,
			Probe{User: user, Question: "Where do I live?", Expect: city, Stale: staleOf(cities, city), ChangedAt: cityAt},
			Probe{User: user, Question: "Where do I work?", Expect: company, Stale: staleOf(companies, company), ChangedAt: companyAt})
		if opts.AsOf {
			if p, ok := asOfProbe(rng, user, "Where did I live on ", cities, citiesAt); ok {
				s.Probes = append(s.Probes, p)
			}
			if p, ok := asOfProbe(rng, user, "Where did I work on ", companies, companiesAt); ok {
				s.Probes = append(s.Probes, p)
			}
		}
	}
	// Interleave users turn by turn, as traffic arrives.
	for i := range opts.TurnsPerUser {
		for u := range perUser {
			s.Turns = append(s.Turns, perUser[u][i])
		}
	}
	return s, nil
}

// asOfProbe asks for a superseded value of a slot on a whole day after it
// took effect and before the next value did, so that the answer does not
// depend on which instant of the day a backend reads the date as. values
// never repeat, and from[i] is when values[i] took effect.
func asOfProbe(rng *rand.Rand, user, ask string, values []string, from []time.Time) (Probe, bool) {
	var days []time.Time
	var idx []int
	for i := 0; i+1 < len(values); i++ {
		day := from[i].UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
		if day.Add(24 * time.Hour).After(from[i+1]) {
			continue
		}
		days, idx = append(days, day), append(idx, i)
	}
	if len(days) == 0 {
		return Probe{}, false
	}
	j := rng.IntN(len(days))
	v := values[idx[j]]
	return Probe{User: user, Question: ask + days[j].Format(time.DateOnly) + "?", Expect: v,
		Stale: staleOf(values, v), ChangedAt: from[idx[j]], AsOf: days[j]}, true
}

func staleOf(values []string, current string) []string {
	var out []string
	for _, v := range values {
		if v != current && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// ScaleResult is how a backend did on a Scale.
type ScaleResult struct {
	Turns, Probes int
	// Correct probes served the expected value and no stale one; Stale
	// probes served a value not in force at the instant asked about.
	// Both count every probe, as-of ones included.
	Correct, Stale int
	// AsOfProbes, AsOfCorrect and AsOfStale are the same counts for the
	// as-of probes alone.
	AsOfProbes, AsOfCorrect, AsOfStale int
	AddTime, QueryTime                 time.Duration
}

// Accuracy is Correct / Probes.
func (r ScaleResult) Accuracy() float64 { return ratio(r.Correct, r.Probes) }

// StaleRate is Stale / Probes.
func (r ScaleResult) StaleRate() float64 { return ratio(r.Stale, r.Probes) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Run resets the scale's users in b, adds every turn, asks every probe
// with top-k and grades the answers as the cases are graded. It returns
// the first backend error.
func (s Scale) Run(ctx context.Context, b Backend, k int) (ScaleResult, error) {
	r := ScaleResult{Turns: len(s.Turns), Probes: len(s.Probes)}
	for i, p := range s.Probes {
		if i > 0 && s.Probes[i-1].User == p.User { // a user's probes are adjacent
			continue
		}
		if err := b.Reset(ctx, p.User); err != nil {
			return r, fmt.Errorf("%w: reset: %w", ErrBackend, err)
		}
	}
	start := time.Now()
	for i, t := range s.Turns {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return r, err
			}
		}
		if err := b.Add(ctx, t.User, t.Text, t.At); err != nil {
			return r, fmt.Errorf("%w: add: %w", ErrBackend, err)
		}
	}
	r.AddTime = time.Since(start)
	start = time.Now()
	for _, p := range s.Probes {
		served, err := b.Query(ctx, p.User, p.Question, k)
		if err != nil {
			return r, fmt.Errorf("%w: query: %w", ErrBackend, err)
		}
		hit, stale := false, false
		for _, sv := range served {
			hit = hit || Contains(sv, p.Expect)
			for _, st := range p.Stale {
				stale = stale || Contains(sv, st)
			}
		}
		asOf := !p.AsOf.IsZero()
		if asOf {
			r.AsOfProbes++
		}
		switch {
		case stale:
			r.Stale++
			if asOf {
				r.AsOfStale++
			}
		case hit:
			r.Correct++
			if asOf {
				r.AsOfCorrect++
			}
		}
	}
	r.QueryTime = time.Since(start)
	return r, nil
}
