package memortest_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor/memortest"
	"github.com/memor-db/memor/memortest/naive"
)

func TestGenerateScaleDeterministic(t *testing.T) {
	opts := memortest.ScaleOptions{Users: 20, TurnsPerUser: 10, Seed: 7}
	a, err := memortest.GenerateScale(opts)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := memortest.GenerateScale(opts)
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed, different workloads")
	}
	opts.Rand = rand.New(rand.NewPCG(8, 8))
	c, _ := memortest.GenerateScale(opts)
	if reflect.DeepEqual(a, c) {
		t.Error("different seed, same workload")
	}
	if len(a.Turns) != 200 || len(a.Probes) != 40 {
		t.Errorf("%d turns, %d probes", len(a.Turns), len(a.Probes))
	}
	changed := 0
	for _, p := range a.Probes {
		changed += len(p.Stale)
		for _, s := range p.Stale {
			if s == p.Expect {
				t.Errorf("%s: expected %q is also stale", p.User, s)
			}
		}
	}
	if changed != 20*2 {
		t.Errorf("%d planted changes, want %d", changed, 40)
	}
	for _, bad := range []memortest.ScaleOptions{{}, {Users: 1, TurnsPerUser: 3}, {Users: 1, TurnsPerUser: 5, Changes: -1}, {Users: 1, TurnsPerUser: 50, Changes: 20}} {
		if _, err := memortest.GenerateScale(bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// Each as-of probe asks about a whole day on which its expected value was
// in force, checked against the turns themselves.
func TestGenerateScaleAsOf(t *testing.T) {
	s, err := memortest.GenerateScale(memortest.ScaleOptions{Users: 300, TurnsPerUser: 12, Changes: 4, Seed: 3, AsOf: true})
	if err != nil {
		t.Fatal(err)
	}
	turns := map[string][]memortest.Turn{}
	for _, tr := range s.Turns {
		turns[tr.User] = append(turns[tr.User], tr)
	}
	n := 0
	for _, p := range s.Probes {
		if p.AsOf.IsZero() {
			continue
		}
		n++
		if !strings.Contains(p.Question, p.AsOf.Format(time.DateOnly)) || slices.Contains(p.Stale, p.Expect) || len(p.Stale) == 0 {
			t.Errorf("%+v", p)
		}
		city := strings.Contains(p.Question, "live")
		// The value said last before the day starts, and nothing said
		// about the slot during the day.
		var inForce string
		for _, tr := range turns[p.User] {
			v, ok := slotValue(tr.Text, city)
			switch {
			case !ok:
			case !tr.At.After(p.AsOf):
				inForce = v
			case tr.At.Before(p.AsOf.Add(24 * time.Hour)):
				t.Errorf("%s: %q changes the slot on the day asked about (%v)", p.User, tr.Text, p.AsOf)
			}
		}
		if inForce != p.Expect {
			t.Errorf("%s %q: in force %q, probe expects %q", p.User, p.Question, inForce, p.Expect)
		}
	}
	if n < 300 {
		t.Errorf("%d as-of probes for 300 users with 4 changes each", n)
	}
}

// slotValue reads the city (or employer) a generated turn states.
func slotValue(text string, city bool) (string, bool) {
	prefixes := []string{"I work at "}
	if city {
		prefixes = []string{"I live in ", "I moved to "}
	}
	for _, p := range prefixes {
		if v, ok := strings.CutPrefix(text, p); ok {
			v = strings.TrimSuffix(strings.TrimSuffix(v, "."), " now")
			return v, true
		}
	}
	return "", false
}

// scaleUsers is 200, or MEMORTEST_SCALE_USERS (e.g. 10000) for the full run.
func scaleUsers(t testing.TB) int {
	if s := os.Getenv("MEMORTEST_SCALE_USERS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	return 200
}

func TestScale(t *testing.T) {
	s, err := memortest.GenerateScale(memortest.ScaleOptions{Users: scaleUsers(t), TurnsPerUser: 20, Changes: 3, Seed: 1, AsOf: true})
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]memortest.Backend{"reference": ref(), "naive": naive.New()} {
		r, err := s.Run(t.Context(), b, memortest.DefaultK)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d turns, %d probes: accuracy %.3f, stale rate %.3f (as-of: %d/%d correct, %d stale), add %v (%v/turn), query %v (%v/probe)",
			name, r.Turns, r.Probes, r.Accuracy(), r.StaleRate(), r.AsOfCorrect, r.AsOfProbes, r.AsOfStale,
			r.AddTime, r.AddTime/timeDiv(r.Turns), r.QueryTime, r.QueryTime/timeDiv(r.Probes))
		if r.AsOfProbes == 0 {
			t.Errorf("%s: no as-of probe", name)
		}
		switch name {
		case "reference":
			if r.Accuracy() != 1 || r.Stale != 0 {
				t.Errorf("reference: %+v", r)
			}
		case "naive":
			if r.StaleRate() < 0.1 || r.AsOfStale == 0 {
				t.Errorf("naive stale rate %.3f, %d as-of probes stale: the planted changes do not bite", r.StaleRate(), r.AsOfStale)
			}
		}
	}
}

func timeDiv(n int) time.Duration { return time.Duration(max(n, 1)) }

func BenchmarkScale(b *testing.B) {
	users := 1000
	if testing.Short() {
		users = 50
	}
	s, err := memortest.GenerateScale(memortest.ScaleOptions{Users: users, TurnsPerUser: 20, Changes: 3, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	for _, arm := range []struct {
		name string
		new  func() memortest.Backend
	}{{"reference", ref}, {"naive", func() memortest.Backend { return naive.New() }}} {
		b.Run(fmt.Sprintf("engine=%s/users=%d", arm.name, users), func(b *testing.B) {
			b.ReportAllocs()
			var r memortest.ScaleResult
			for b.Loop() {
				r, err = s.Run(b.Context(), arm.new(), memortest.DefaultK)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(r.Accuracy(), "accuracy")
			b.ReportMetric(r.StaleRate(), "stale-rate")
			b.ReportMetric(float64(r.AddTime.Nanoseconds())/float64(r.Turns), "ns/add")
			b.ReportMetric(float64(r.QueryTime.Nanoseconds())/float64(r.Probes), "ns/query")
		})
	}
}
