package fuzz

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/extract"
)

// The vocabulary the generated programs draw from: few values, so that
// slots, objects and instants collide often.
var (
	vocabUsers    = []string{"alice", "alice", "alice/", "bob"}
	vocabSubjects = []string{"user", "User", " user ", "alex"}
	// One predicates dominate: that is where the rules interact.
	vocabPreds = []string{"lives_in", "Home City", "lives_in", "works_at", "employer", "likes", "Enjoys",
		"has_pet", "Favourite Color", "rank", "standing", "zz_mood"}
	vocabObjects  = []string{"Paris", "paris", "Berlin", "Oslo", "  oslo ", "Acme"}
	vocabContexts = []string{"", "", "", "work", "Work ", "home"}
	vocabConf     = []float64{0, 1, 0.95, 0.9, 0.85, 0.5}
	// The narrow vocabulary: two slots of a One predicate, one Many.
	narrowSubjects = []string{"user", " User"}
	narrowPreds    = []string{"lives_in", "Home City", "likes"}
	narrowContexts = []string{"", "", "work"}
	// validBase is the first valid instant; the clock starts in the middle
	// of the valid instants, so some claims are about the future.
	validBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clockBase = time.Date(2026, 1, 3, 12, 0, 0, 0, time.UTC)
)

// modelConfig is what the engine knows about the vocabulary's predicates:
// its defaults plus the harness's predicates.
func modelConfig() Config {
	return Config{
		One: map[string]bool{"lives_in": true, "works_at": true, "rank": true},
		Aliases: map[string]string{"home_city": "lives_in", "employer": "works_at", "enjoys": "likes",
			"standing": "rank"},
	}
}

// predicates are the harness's own predicates, registered through
// Options.Predicates so that they apply before Open recovers pending
// episodes.
var predicates = []memor.Predicate{{Name: "rank", Cardinality: memor.One, Aliases: []string{"standing"}}}

// validTime maps a byte to one of a few instants: whole days (colliding),
// one a nanosecond after a day (nearly colliding), and the instants where
// an int64 encoding can go wrong: around the Unix epoch (0 ns is an
// instant, not "unset"), before it, and both ends of the accepted range.
func validTime(b byte) time.Time {
	switch b % 16 {
	case 8:
		return validBase.Add(2*24*time.Hour + time.Nanosecond)
	case 9:
		return validBase.Add(3*24*time.Hour + 12*time.Hour)
	case 10:
		return time.Unix(0, -1).UTC()
	case 11:
		return time.Unix(0, 0).UTC()
	case 12:
		return time.Unix(0, 1).UTC()
	case 13:
		return time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)
	case 14:
		return time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC) // the first accepted
	case 15:
		return time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC).Add(-time.Nanosecond) // the last
	}
	return validBase.Add(time.Duration(b%16) * 24 * time.Hour)
}

// factID is the fact identity of DESIGN §3 as the engine computes it:
// SHA-256 over length-prefixed normalised fields and ValidFrom, truncated
// to 16 bytes. The harness needs it to correct claims that have no version
// of their own (restatements); TestFactIDs checks it against the engine.
func factID(user, subjKey, pred, objKey, ctxKey string, vf time.Time) string {
	h := sha256.New()
	var n [8]byte
	for _, s := range []string{user, subjKey, pred, objKey, ctxKey} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	binary.BigEndian.PutUint64(n[:], uint64(vf.UnixNano()))
	h.Write(n[:])
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func claimID(user string, c Claim) string {
	if c.End {
		return factID(user+"\x00end", c.SubjKey, c.Pred, c.ObjKey, c.CtxKey, c.ValidFrom)
	}
	return factID(user, c.SubjKey, c.Pred, c.ObjKey, c.CtxKey, c.ValidFrom)
}

// lineExtractor is a deterministic extractor for the harness: every line
// of the text is one op, "A|subject|predicate|object|context|validFrom|conf"
// or "E|…", quoted verbatim (validFrom in Unix nanoseconds, empty for the
// episode's time: 0 is 1970-01-01). A line "Q|…" proposes an op whose quote is not in the
// text, which the engine must reject. Other lines are ignored.
type lineExtractor struct{}

func (lineExtractor) Extract(_ context.Context, text string, _ time.Time) ([]extract.Op, error) {
	var ops []extract.Op
	for _, line := range strings.Split(text, "\n") {
		f := strings.Split(line, "|")
		if len(f) != 7 {
			continue
		}
		vf, err1 := int64(0), error(nil)
		if f[5] != "" {
			vf, err1 = strconv.ParseInt(f[5], 10, 64)
		}
		conf, err2 := strconv.ParseFloat(f[6], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		op := extract.Op{Kind: extract.Assert, Subject: f[1], Predicate: f[2], Object: f[3], Context: f[4],
			Confidence: conf, Quote: line}
		if f[5] != "" {
			op.ValidFrom = time.Unix(0, vf).UTC()
		}
		switch f[0] {
		case "E":
			op.Kind = extract.End
		case "Q":
			op.Quote = "not in the text: " + line
		case "A":
		default:
			continue
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// opLine renders op for lineExtractor.
func opLine(kind string, op Op) string {
	vf := ""
	if !op.ValidFrom.IsZero() {
		vf = strconv.FormatInt(op.ValidFrom.UnixNano(), 10)
	}
	return fmt.Sprintf("%s|%s|%s|%s|%s|%s|%g", kind, op.Subject, op.Predicate, op.Object, op.Context, vf, op.Confidence)
}

// fromEngine converts an engine version to the model's form.
func fromEngine(f memor.Fact) Fact {
	return Fact{Subject: f.Subject, Predicate: f.Predicate, Object: f.Object, Context: f.Context,
		ValidFrom: f.ValidFrom, ValidTo: f.ValidTo, RecordedAt: f.RecordedAt, ExpiredAt: f.ExpiredAt,
		Status: statusOf(f.Status), Reinforced: f.Reinforced, Confidence: f.Confidence}
}

// statusOf maps the engine's status onto the model's by name; a status the
// model does not know renders as such and fails every comparison.
func statusOf(s memor.Status) Status {
	switch s {
	case memor.Active:
		return Active
	case memor.Contested:
		return Contested
	case memor.Retracted:
		return Retracted
	}
	return Status(100 + s)
}

// view selects the fields a comparison looks at.
type view struct {
	tx         bool // RecordedAt, ExpiredAt
	reinforced bool // Reinforced, Confidence
}

func fmtT(t time.Time) string {
	if t.IsZero() {
		return "∞"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func render(f Fact, v view) string {
	s := fmt.Sprintf("%s %s %s (%s) [%s, %s) %s", f.Subject, f.Predicate, f.Object, f.Context,
		fmtT(f.ValidFrom), fmtT(f.ValidTo), f.Status)
	if v.reinforced {
		s += fmt.Sprintf(" ×%d conf=%.2f", f.Reinforced, f.Confidence)
	}
	if v.tx {
		s += fmt.Sprintf(" tx=[%s, %s)", fmtT(f.RecordedAt), fmtT(f.ExpiredAt))
	}
	return s
}

// renderAll renders facts sorted, one per line: comparisons are of sets.
func renderAll(fs []Fact, v view) string {
	lines := make([]string, len(fs))
	for i, f := range fs {
		lines[i] = render(f, v)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func renderEngine(fs []memor.Fact, v view) string {
	m := make([]Fact, len(fs))
	for i, f := range fs {
		m[i] = fromEngine(f)
	}
	return renderAll(m, v)
}

// diffLines shows what one rendering has that the other lacks.
func diffLines(want, got string) string {
	w, g := map[string]int{}, map[string]int{}
	for _, l := range strings.Split(want, "\n") {
		w[l]++
	}
	for _, l := range strings.Split(got, "\n") {
		g[l]++
	}
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if w[l] > g[l] {
			fmt.Fprintf(&b, "  model only:  %s\n", l)
			w[l]--
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if g[l] > w[l] {
			fmt.Fprintf(&b, "  engine only: %s\n", l)
			g[l]--
		}
	}
	return b.String()
}
