package fuzz

import (
	"sort"
	"strings"
	"testing"
	"time"
)

func day(d int) time.Time { return validBase.Add(time.Duration(d) * 24 * time.Hour) }

func tx(n int) time.Time { return clockBase.Add(time.Duration(n) * time.Minute) }

// TestModel pins the model to the rules of DESIGN §3 with hand-written
// timelines (the same stories as testdata/scenarios), so that a model bug
// cannot hide behind an engine with the same bug.
func TestModel(t *testing.T) {
	a := func(obj string, d int, conf float64) Op {
		return Op{Subject: "user", Predicate: "lives_in", Object: obj, ValidFrom: day(d), Confidence: conf}
	}
	cases := []struct {
		name string
		run  func(m *Model)
		// want is the current belief, one version per line, sorted.
		want string
	}{{
		name: "supersede",
		run: func(m *Model) {
			_ = m.Apply("u", tx(1), []Op{a("Pune", 1, 0)})
			_ = m.Apply("u", tx(2), []Op{a("Paris", 5, 0)})
		},
		want: `user lives_in Paris () [2026-01-06T00:00:00Z, ∞) active
user lives_in Pune () [2026-01-02T00:00:00Z, 2026-01-06T00:00:00Z) active`,
	}, {
		name: "late value closes at the next one and never becomes current",
		run: func(m *Model) {
			_ = m.Apply("u", tx(1), []Op{a("Paris", 5, 0)})
			_ = m.Apply("u", tx(2), []Op{a("Pune", 1, 0)})
		},
		want: `user lives_in Paris () [2026-01-06T00:00:00Z, ∞) active
user lives_in Pune () [2026-01-02T00:00:00Z, 2026-01-06T00:00:00Z) active`,
	}, {
		name: "same instant, two objects: both contested, value in force untouched",
		run: func(m *Model) {
			_ = m.Apply("u", tx(1), []Op{a("Acme", 0, 0)})
			_ = m.Apply("u", tx(2), []Op{a("Google", 1, 0)})
			_ = m.Apply("u", tx(3), []Op{a("Microsoft", 1, 0)})
		},
		want: `user lives_in Acme () [2026-01-01T00:00:00Z, ∞) active
user lives_in Google () [2026-01-02T00:00:00Z, ∞) contested
user lives_in Microsoft () [2026-01-02T00:00:00Z, ∞) contested`,
	}, {
		name: "low confidence contested; within the margin supersedes",
		run: func(m *Model) {
			_ = m.Apply("u", tx(1), []Op{a("Oslo", 0, 0.9)})
			_ = m.Apply("u", tx(2), []Op{a("Rome", 2, 0.5)})
			_ = m.Apply("u", tx(3), []Op{a("Lima", 3, 0.8)})
		},
		want: `user lives_in Lima () [2026-01-04T00:00:00Z, ∞) active
user lives_in Oslo () [2026-01-01T00:00:00Z, 2026-01-04T00:00:00Z) active
user lives_in Rome () [2026-01-03T00:00:00Z, ∞) contested`,
	}, {
		name: "restatement reinforces, replay is a no-op",
		run: func(m *Model) {
			_ = m.Apply("u", tx(1), []Op{a("Oslo", 0, 0.9)})
			_ = m.Apply("u", tx(2), []Op{a(" oslo", 2, 1)})
			_ = m.Apply("u", tx(3), []Op{a("OSLO", 2, 0.5)})
		},
		want: `user lives_in Oslo () [2026-01-01T00:00:00Z, ∞) active ×2 conf=1.00`,
	}, {
		name: "end before assert at the same instant",
		run: func(m *Model) {
			_ = m.Apply("u", tx(1), []Op{a("Oslo", 0, 0)})
			_ = m.Apply("u", tx(2), []Op{a("Oslo", 3, 0), {End: true, Subject: "user", Predicate: "lives_in", ValidFrom: day(3)}})
		},
		want: `user lives_in Oslo () [2026-01-01T00:00:00Z, 2026-01-04T00:00:00Z) active
user lives_in Oslo () [2026-01-04T00:00:00Z, ∞) active`,
	}, {
		name: "correct restores the displaced value and retracts the restatements",
		run: func(m *Model) {
			_ = m.Apply("u", tx(1), []Op{a("Pune", 1, 0)})
			_ = m.Apply("u", tx(2), []Op{a("Paris", 5, 0)})
			_ = m.Apply("u", tx(3), []Op{a("paris", 6, 0)})
			if ok, err := m.Correct("u", tx(4), "user", "Home City", "PARIS", "", day(5)); !ok || err != nil {
				panic("correct failed")
			}
		},
		want: `user lives_in Paris () [2026-01-06T00:00:00Z, ∞) retracted
user lives_in Pune () [2026-01-02T00:00:00Z, ∞) active
user lives_in paris () [2026-01-07T00:00:00Z, ∞) retracted`,
	}, {
		name: "accept applies a contested value; a later acceptance of its rival wins the tie",
		run: func(m *Model) {
			_ = m.Apply("u", tx(1), []Op{a("Pune", 1, 0)})
			_ = m.Apply("u", tx(2), []Op{a("Paris", 5, 0), a("Rome", 5, 0)})
			_ = m.Apply("u", tx(3), []Op{a("Oslo", 8, 0.5)})
			if ok, err := m.Accept("u", tx(4), "user", "lives_in", "Paris", "", day(5)); !ok || err != nil {
				panic("accept failed")
			}
			if _, err := m.Accept("u", tx(5), "user", "lives_in", "Pune", "", day(1)); err != ErrNotContested {
				panic("accept of the value in force")
			}
			if ok, err := m.Accept("u", tx(6), "user", "lives_in", "Rome", "", day(5)); !ok || err != nil {
				panic("accept of the rival failed")
			}
		},
		want: `user lives_in Oslo () [2026-01-09T00:00:00Z, ∞) contested
user lives_in Paris () [2026-01-06T00:00:00Z, ∞) contested
user lives_in Pune () [2026-01-02T00:00:00Z, 2026-01-06T00:00:00Z) active
user lives_in Rome () [2026-01-06T00:00:00Z, ∞) active`,
	}, {
		name: "many: values coexist, an end without object closes them all",
		run: func(m *Model) {
			l := func(obj string, d int) Op {
				return Op{Subject: "user", Predicate: "likes", Object: obj, ValidFrom: day(d)}
			}
			_ = m.Apply("u", tx(1), []Op{l("tea", 1), l("jazz", 2)})
			_ = m.Apply("u", tx(2), []Op{{End: true, Subject: "user", Predicate: "enjoys", ValidFrom: day(4)}, l("tea", 5)})
		},
		want: `user likes jazz () [2026-01-03T00:00:00Z, 2026-01-05T00:00:00Z) active
user likes tea () [2026-01-02T00:00:00Z, 2026-01-05T00:00:00Z) active
user likes tea () [2026-01-06T00:00:00Z, ∞) active`,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := NewModel(modelConfig())
			c.run(m)
			var lines []string
			for _, f := range m.Current("u") {
				if f.Reinforced > 1 {
					lines = append(lines, render(f, view{reinforced: true}))
				} else {
					lines = append(lines, render(f, view{}))
				}
			}
			sort.Strings(lines)
			got := strings.Join(lines, "\n")
			if got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

// TestModelAudit: what the model believed at a past transaction time.
func TestModelAudit(t *testing.T) {
	m := NewModel(modelConfig())
	op := func(obj string, d int) Op {
		return Op{Subject: "project", Predicate: "rank", Object: obj, ValidFrom: day(d)}
	}
	_ = m.Apply("u", tx(10), []Op{op("biweekly", 17)})
	_ = m.Apply("u", tx(20), []Op{op("weekly", 9)})
	if got := m.AsOf("u", day(14), tx(15)); len(got) != 0 {
		t.Errorf("before the late claim arrived: %v", got)
	}
	got := m.AsOf("u", day(14), tx(20))
	if len(got) != 1 || got[0].Object != "weekly" || !got[0].ValidTo.Equal(day(17)) {
		t.Errorf("after the late claim: %v", got)
	}
	if err := m.Apply("u", tx(20), nil); err == nil {
		t.Error("a transaction time that does not increase was accepted")
	}
}
