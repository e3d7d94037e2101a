package memor

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor/extract"
	"github.com/memor-db/memor/index/temporal"
	"github.com/memor-db/memor/internal/resolve"
	"github.com/memor-db/memor/kv"
)

// boundaryInstants are accepted instants where an int64 encoding can go
// wrong, in order: the range's ends, before the epoch, around it.
var boundaryInstants = []time.Time{
	time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC),
	time.Date(1678, 1, 1, 0, 0, 0, 1, time.UTC),
	time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC),
	time.Unix(0, -1).UTC(),
	time.Unix(0, 0).UTC(),
	time.Unix(0, 1).UTC(),
	time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	time.Date(2261, 12, 31, 23, 59, 59, 999999999, time.UTC),
}

// outOfRange are instants memor refuses (the zero time aside, which the
// library reads as "unset": now).
var outOfRange = []time.Time{
	time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
	time.Date(1677, 12, 31, 23, 59, 59, 999999999, time.UTC),
	time.Unix(0, -1<<63).UTC(),
	time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC),
	time.Unix(0, 1<<63-1).UTC(),
	time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC),
}

// TestTimeRoundTrip: every accepted boundary instant comes back exactly
// through every encoding of an instant, and none of them reads back as
// "unset" or "open".
func TestTimeRoundTrip(t *testing.T) {
	t.Parallel()
	for _, b := range boundaryInstants {
		if n := nanos(b); n != b.UnixNano() || !fromNanos(n).Equal(b) || fromNanos(n).IsZero() {
			t.Errorf("%v: nanos %d, back %v", b, n, fromNanos(n))
		}
		if n := nanos(b); n == nanos(time.Time{}) || n == resolve.Open {
			t.Errorf("%v: nanos %d is the unset/open value", b, n)
		}
		// Records.
		f := Fact{ID: strings.Repeat("ab", idLen), User: "u", Subject: "user", Predicate: "lives_in", Object: "x",
			ValidFrom: b, ValidTo: b, RecordedAt: b, ExpiredAt: b, LastSeen: b, Status: Active, Confidence: 1}
		g, err := decodeFact("u", appendFact(nil, &f))
		if err != nil || !g.ValidFrom.Equal(b) || !g.ValidTo.Equal(b) || !g.RecordedAt.Equal(b) || !g.ExpiredAt.Equal(b) || !g.LastSeen.Equal(b) {
			t.Errorf("%v: fact record reads back %+v, %v", b, g, err)
		}
		c := claimRec{ID: f.ID, Kind: uint8(resolve.Assert), Subject: "user", Predicate: "lives_in", Object: "x",
			ValidFrom: nanos(b), Recorded: nanos(b), Confidence: 1}
		gc, err := decodeClaim(appendClaim(nil, &c))
		if err != nil || !fromNanos(gc.ValidFrom).Equal(b) || !fromNanos(gc.Recorded).Equal(b) {
			t.Errorf("%v: claim record reads back %+v, %v", b, gc, err)
		}
		ep := Episode{User: "u", Seq: 1, Kind: EpisodeText, At: b, RecordedAt: b, Text: "t",
			Ops: []extract.Op{{Kind: extract.Assert, Subject: "user", Predicate: "p", Object: "o", ValidFrom: b, Confidence: 1}}}
		gep, err := decodeEpisode("u", appendEpisode(nil, &ep))
		if err != nil || !gep.At.Equal(b) || !gep.RecordedAt.Equal(b) || !gep.Ops[0].ValidFrom.Equal(b) {
			t.Errorf("%v: episode record reads back %+v, %v", b, gep, err)
		}
		d := Decision{Seq: 1, Rule: RuleAdd, RecordedAt: b}
		if gd, err := decodeDecision(appendDecision(nil, &d)); err != nil || !gd.RecordedAt.Equal(b) {
			t.Errorf("%v: decision record reads back %+v, %v", b, gd, err)
		}
		// Keys: the claim and version suffixes, and kv's time encoding.
		suf := versionSuffix(claimSuffix([]byte("slot"), nanos(b), mustID(f.ID)), nanos(b))
		dec := kv.NewDecoder(suf[len("slot"):])
		if vf := dec.Int64(); !fromNanos(vf).Equal(b) {
			t.Errorf("%v: claim key holds %v", b, fromNanos(vf))
		}
		if rec := kv.NewDecoder(suf[len(suf)-8:]).Int64(); !fromNanos(rec).Equal(b) {
			t.Errorf("%v: version key holds %v", b, fromNanos(rec))
		}
		if got := kv.NewDecoder(kv.AppendTime(nil, b)).Time(); !got.Equal(b) || got.IsZero() {
			t.Errorf("%v: kv.AppendTime reads back %v", b, got)
		}
		// The public JSON form.
		var jf Fact
		if js, err := json.Marshal(f); err != nil || json.Unmarshal(js, &jf) != nil || !jf.ValidTo.Equal(b) || !jf.ExpiredAt.Equal(b) {
			t.Errorf("%v: JSON reads back %+v (%s)", b, jf, js)
		}
	}
	// Key order is time order, across the epoch too.
	for i := 1; i < len(boundaryInstants); i++ {
		a := kv.AppendInt64(nil, nanos(boundaryInstants[i-1]))
		b := kv.AppendInt64(nil, nanos(boundaryInstants[i]))
		if bytes.Compare(a, b) >= 0 {
			t.Errorf("key of %v does not sort before %v", boundaryInstants[i-1], boundaryInstants[i])
		}
		if bytes.Compare(kv.AppendTime(nil, boundaryInstants[i]), kv.AppendTime(nil, time.Time{})) >= 0 {
			t.Errorf("kv.AppendTime: %v does not sort before the open end", boundaryInstants[i])
		}
	}
	// The resolver: a value closed at b ends exactly at b; the value in
	// force is open, whatever b is.
	for i := 1; i < len(boundaryInstants); i++ {
		lo, hi := nanos(boundaryInstants[i-1]), nanos(boundaryInstants[i])
		out := resolve.Fold(true, []resolve.Claim{
			{ID: "a", Kind: resolve.Assert, ObjKey: "a", ValidFrom: lo, Confidence: 1},
			{ID: "b", Kind: resolve.Assert, ObjKey: "b", ValidFrom: hi, Confidence: 1},
		})
		if out["a"].ValidTo != hi || out["b"].ValidTo != resolve.Open || out["b"].LastSeen != hi {
			t.Errorf("fold over [%v, %v): a ends %d, b ends %d", boundaryInstants[i-1], boundaryInstants[i], out["a"].ValidTo, out["b"].ValidTo)
		}
	}
}

// TestBoundaryTimelines: at every boundary instant, a One value superseded
// there ends there and the new one holds from there; a Many value ended
// there ends there. Through the write path, reads, Check, Rebuild and a
// reopen.
func TestBoundaryTimelines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "db")
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { e.Close() }()
	user := func(i int) string { return fmt.Sprintf("u%d", i) }
	for i := 1; i < len(boundaryInstants); i++ {
		lo, hi := boundaryInstants[i-1], boundaryInstants[i]
		for _, in := range []FactInput{
			{Subject: "user", Predicate: "lives_in", Object: "A", ValidFrom: lo},
			{Subject: "user", Predicate: "lives_in", Object: "B", ValidFrom: hi},
			{Subject: "user", Predicate: "likes", Object: "tea", ValidFrom: lo},
		} {
			if _, err := e.Assert(ctx, user(i), in); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.End(ctx, user(i), EndInput{Subject: "user", Predicate: "likes", Object: "tea", At: hi}); err != nil {
			t.Fatal(err)
		}
	}
	verify := func(when string) {
		t.Helper()
		if err := e.Check(ctx); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		for i := 1; i < len(boundaryInstants); i++ {
			lo, hi := boundaryInstants[i-1], boundaryInstants[i]
			st, err := e.AsOf(ctx, user(i), hi, e.now())
			if err != nil {
				t.Fatal(err)
			}
			if len(st) != 1 || st[0].Object != "B" || !st[0].ValidFrom.Equal(hi) || !st[0].ValidTo.IsZero() {
				t.Errorf("%s: as of %v: %v, want B from %v, open", when, hi, brief(st), hi)
			}
			at, err := e.AsOf(ctx, user(i), lo, e.now())
			if err != nil {
				t.Fatal(err)
			}
			var objs []string
			for _, f := range at {
				objs = append(objs, f.Object)
				if !f.ValidFrom.Equal(lo) || !f.ValidTo.Equal(hi) {
					t.Errorf("%s: as of %v: %s holds [%v, %v), want [%v, %v)", when, lo, f.Object, f.ValidFrom, f.ValidTo, lo, hi)
				}
			}
			if strings.Join(objs, ",") != "A,tea" && strings.Join(objs, ",") != "tea,A" {
				t.Errorf("%s: as of %v: %v, want A and tea", when, lo, brief(at))
			}
		}
	}
	verify("written")
	for i := 1; i < len(boundaryInstants); i++ {
		if err := e.Rebuild(ctx, user(i)); err != nil {
			t.Fatal(err)
		}
	}
	verify("rebuilt")
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if e, err = Open(dir, Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	verify("reopened")
}

func brief(fs []Fact) string {
	var s []string
	for _, f := range fs {
		s = append(s, fmt.Sprintf("%s [%s, %s)", f.Object, f.ValidFrom.Format(time.RFC3339Nano), f.ValidTo.Format(time.RFC3339Nano)))
	}
	return strings.Join(s, "; ")
}

// TestAssertAtEpoch is issue 15.6's library story: Rome from the epoch
// supersedes Paris.
func TestAssertAtEpoch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, in := range []FactInput{
		{Subject: "user", Predicate: "lives_in", Object: "Paris", ValidFrom: time.Date(1965, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Subject: "user", Predicate: "lives_in", Object: "Rome", ValidFrom: time.Unix(0, 0)},
	} {
		if _, err := e.Assert(ctx, "x", in); err != nil {
			t.Fatal(err)
		}
	}
	st, err := e.State(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 1 || st[0].Object != "Rome" || !st[0].ValidFrom.Equal(time.Unix(0, 0)) {
		t.Fatalf("state %s, want Rome from 1970-01-01", brief(st))
	}
}

// TestOutOfRangeTimes: every write and read refuses an instant outside
// [1678, 2262) with ErrInvalidTime and writes nothing; an extractor's op
// with one is rejected, with the reason, and the episode stands.
func TestOutOfRangeTimes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bad := outOfRange
	e, err := Open(t.TempDir(), Options{NoSync: true, Extractor: fixedExtractor(bad)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, tm := range bad {
		for what, err := range map[string]error{
			"Assert":      errOf(e.Assert(ctx, "u", FactInput{Subject: "user", Predicate: "lives_in", Object: "X", ValidFrom: tm})),
			"AssertBatch": errOf(e.AssertBatch(ctx, "u", []FactInput{{Subject: "user", Predicate: "likes", Object: "X", ValidFrom: tm}})),
			"End":         errOf(e.End(ctx, "u", EndInput{Subject: "user", Predicate: "likes", At: tm})),
			"Add":         errOf(e.Add(ctx, "u", "I live in Oslo.", At(tm), Sync())),
			"AsOf valid":  errOf(e.AsOf(ctx, "u", tm, time.Now())),
			"AsOf known":  errOf(e.AsOf(ctx, "u", time.Now(), tm)),
			"Query":       errOf(e.Query(ctx, "u", "Oslo", QueryOptions{ValidAt: tm})),
		} {
			if !errors.Is(err, ErrInvalidTime) {
				t.Errorf("%s at %v: %v, want ErrInvalidTime", what, tm, err)
			}
		}
	}
	if f, err := e.Freshness(ctx, "u"); err != nil || f.Latest != 0 {
		t.Fatalf("refused writes stored episodes: %+v, %v", f, err)
	}
	if _, err := e.Add(ctx, "u", "anything", Sync()); err != nil {
		t.Fatal(err)
	}
	log, err := e.Log(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range log {
		if d.Rule == RuleReject && strings.Contains(d.Detail, ErrInvalidTime.Error()) {
			n++
		}
	}
	if n != len(bad) {
		t.Errorf("%d ops rejected for their time, want %d: %+v", n, len(bad), log)
	}
	// The rule extractor's years before 1678 meet the same fate.
	e2, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	if _, err := e2.Add(ctx, "u", "I have lived in Paris since 1500.", Sync()); err != nil {
		t.Fatal(err)
	}
	if st, _ := e2.State(ctx, "u"); len(st) != 0 {
		t.Errorf("a fact from 1500 was stored: %s", brief(st))
	}
	log2, err := e2.Log(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	if len(log2) != 1 || log2[0].Rule != RuleReject || !strings.Contains(log2[0].Detail, ErrInvalidTime.Error()) {
		t.Errorf("the rule extractor's claim from 1500: %+v, want rejected as an invalid time", log2)
	}
}

func errOf[T any](_ T, err error) error { return err }

// fixedExtractor proposes one lives_in op per time, whatever the text.
type fixedExtractor []time.Time

func (x fixedExtractor) Extract(_ context.Context, text string, _ time.Time) ([]extract.Op, error) {
	var ops []extract.Op
	for _, tm := range x {
		ops = append(ops, extract.Op{Kind: extract.Assert, Subject: "user", Predicate: "lives_in", Object: "X",
			ValidFrom: tm, Confidence: 1, Quote: text})
	}
	return ops, nil
}

// TestCheckFindsDoubleVisibility: Check finds a One slot with two values
// visible at one (valid, known) instant, and a version whose instants
// disagree with its claim, however the store came to hold them. Each case
// corrupts one version of a clean store (Paris from 2020, Rome from 2024)
// in a way the fold comparison alone does not see.
func TestCheckFindsDoubleVisibility(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		sub     kv.Sub
		object  string
		corrupt func(f *Fact)
		want    string
	}{
		{"expired later", kv.SubHistory, "Paris", func(f *Fact) { f.ExpiredAt = f.ExpiredAt.Add(time.Hour) }, "visible together"},
		{"live reopened", kv.SubLive, "Paris", func(f *Fact) { f.ValidTo = time.Time{} }, "visible together"},
		{"valid from moved", kv.SubLive, "Rome", func(f *Fact) { f.ValidFrom = time.Time{} }, "valid from"},
		{"recorded earlier", kv.SubLive, "Rome", func(f *Fact) { f.RecordedAt = f.RecordedAt.Add(-time.Hour) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			e, err := Open(dir, Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { e.Close() }()
			for _, in := range []FactInput{
				{Subject: "user", Predicate: "lives_in", Object: "Paris", ValidFrom: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)},
				{Subject: "user", Predicate: "lives_in", Object: "Rome", ValidFrom: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)},
			} {
				if _, err := e.Assert(ctx, "x", in); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.Check(ctx); err != nil {
				t.Fatal(err)
			}
			p := kv.UserKey("x", tc.sub)
			var key []byte
			var f Fact
			err = e.db.Scan(ctx, p, func(k, v []byte) error {
				g, err := decodeFact("x", v)
				if err != nil {
					return err
				}
				// Paris's history: the version open in valid time,
				// expired when Rome arrived.
				if g.Object == tc.object && key == nil && (tc.sub != kv.SubHistory || g.ValidTo.IsZero() == (tc.name == "expired later")) {
					key, f = bytes.Clone(k), g
				}
				return nil
			})
			if err != nil || key == nil {
				t.Fatalf("no version to corrupt (%v)", err)
			}
			// The version and its temporal index entry, consistently:
			// what a resolver bug would have written.
			tc.corrupt(&f)
			b := e.db.NewBatch()
			if err := b.Set(key, appendFact(nil, &f)); err != nil {
				t.Fatal(err)
			}
			if err := temporal.WriteInterval(b, kv.UserKey("x", kv.SubTemporal), f.Doc, interval(&f)); err != nil {
				t.Fatal(err)
			}
			if err := b.Commit(); err != nil {
				t.Fatal(err)
			}
			b.Close()
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			if e, err = Open(dir, Options{NoSync: true}); err != nil {
				t.Fatal(err)
			}
			err = e.Check(ctx)
			if !errors.Is(err, ErrCheck) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check after %s: %v, want ErrCheck saying %q", tc.name, err, tc.want)
			}
		})
	}
}

// TestDoubleVisibleEqualsBruteForce: the sweep finds an overlap exactly
// when some pair of rectangles shares a (valid, known) instant.
func TestDoubleVisibleEqualsBruteForce(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(15, 6))
	for trial := range 20000 {
		rs := make([]rect, r.IntN(7))
		for i := range rs {
			end := func(lo int64) int64 {
				if r.IntN(4) == 0 {
					return math.MaxInt64
				}
				return lo + int64(r.IntN(5)) - 1 // sometimes empty
			}
			rs[i].vf, rs[i].ra = int64(r.IntN(8)-4), int64(r.IntN(8)-4)
			rs[i].vt, rs[i].ea = end(rs[i].vf), end(rs[i].ra)
			rs[i].id[0] = byte(i)
		}
		want := false
		for i := range rs {
			for j := range i {
				a, b := rs[i], rs[j]
				if max(a.vf, b.vf) < min(a.vt, b.vt) && max(a.ra, b.ra) < min(a.ea, b.ea) {
					want = true
				}
			}
		}
		a, b, got := doubleVisible(rs)
		if got != want {
			t.Fatalf("trial %d: %+v: found %v, want %v", trial, rs, got, want)
		}
		if got && !(max(a.vf, b.vf) < min(a.vt, b.vt) && max(a.ra, b.ra) < min(a.ea, b.ea)) {
			t.Fatalf("trial %d: reported %+v and %+v, which do not overlap", trial, a, b)
		}
	}
}

// TestFormat4EpochStoreUpgrades opens a store written by the build before
// issue 15.6 (format 4, testdata/format4-epoch; gen.go.txt beside it is the
// program that wrote it). Its user x has claims at 1970-01-01, which that
// build folded wrongly (Rome and Paris both current, Rome valid from year
// 1; Initech beside Acme; jazz still liked after its end): the upgrade
// rebuilds x, whose answers become the right ones. User y has no such
// claim: every answer, transaction times and IDs included, is what the old
// build gave.
func TestFormat4EpochStoreUpgrades(t *testing.T) {
	if encryptAllBuild {
		t.Skip("plain files only: it opens a plain golden store")
	}
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	if err := os.CopyFS(dir, os.DirFS("testdata/format4-epoch/store")); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("testdata/format4-epoch/answers.json")
	if err != nil {
		t.Fatal(err)
	}
	var old map[string]json.RawMessage
	if err := json.Unmarshal(raw, &old); err != nil {
		t.Fatal(err)
	}
	e, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { e.Close() }()
	verify := func(when string) {
		t.Helper()
		if err := e.Check(ctx); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		d := func(s string) time.Time { x, _ := time.Parse(time.DateOnly, s); return x }
		epoch := time.Unix(0, 0).UTC()
		st, err := e.State(ctx, "x")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]time.Time{}
		for _, f := range st {
			got[f.Object] = f.ValidFrom
		}
		if len(got) != 2 || !got["Rome"].Equal(epoch) || !got["Initech"].Equal(epoch) {
			t.Errorf("%s: x's state %s, want Rome and Initech from 1970-01-01", when, brief(st))
		}
		then, err := e.AsOf(ctx, "x", d("1969-06-01"), e.now())
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range then {
			if !f.ValidTo.Equal(epoch) {
				t.Errorf("%s: x as of 1969-06-01: %s ends %v, want 1970-01-01", when, f.Object, f.ValidTo)
			}
		}
		if len(then) != 3 {
			t.Errorf("%s: x as of 1969-06-01: %s, want Paris, Acme, jazz", when, brief(then))
		}
		// y: byte for byte what the old build answered.
		ans := map[string]any{}
		if ans["state"], err = e.State(ctx, "y"); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"lives_in", "works_at", "plays_instrument"} {
			if ans["history "+p], err = e.History(ctx, "y", "user", p); err != nil {
				t.Fatal(err)
			}
		}
		if ans["asof 2022-01-01"], err = e.AsOf(ctx, "y", d("2022-01-01"), e.now()); err != nil {
			t.Fatal(err)
		}
		for k, v := range ans {
			b, _ := json.Marshal(v)
			var want, have any
			_ = json.Unmarshal(old[k], &want)
			_ = json.Unmarshal(b, &have)
			if bad := dropEpisodes(have); bad != "" {
				t.Errorf("%s: y's %s: %s", when, k, bad)
			}
			if !reflect.DeepEqual(want, have) {
				t.Errorf("%s: y's %s changed:\n got %s\nwant %s", when, k, b, old[k])
			}
		}
	}
	verify("upgraded")
	if from, err := e.db.UpgradedFrom(); err != nil || from != 0 {
		t.Fatalf("upgrade marker after Open: %d, %v", from, err)
	}
	if v, err := e.db.Get([]byte{kv.TagMeta, 'f', 'o', 'r', 'm', 'a', 't'}); err != nil || binary.BigEndian.Uint32(v) != kv.FormatVersion {
		t.Fatalf("format after open: %x, %v", v, err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if e, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	verify("reopened")
}

// TestUpgradeMarkerSurvivesUntilDone: a store raised to format 5 whose
// upgrade did not finish (a crash after kv raised the number) is upgraded
// at the next Open; an older store without epoch claims just loses the
// marker.
func TestUpgradeMarkerSurvivesUntilDone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "db")
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Assert(ctx, "u", FactInput{Subject: "user", Predicate: "lives_in", Object: "Oslo", ValidFrom: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	before := dumpUser(t, e, "u")
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SetFormatVersionForTest(dir, 4); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = kv.Open(dir, kv.Options{}) // raises the number: what a crash would leave
	if err != nil {
		t.Fatal(err)
	}
	if from, err := db.UpgradedFrom(); err != nil || from != 4 {
		t.Fatalf("marker: %d, %v; want 4", from, err)
	}
	db.Close()
	var rebuilt []string
	e, err = Open(dir, Options{NoSync: true, RebuildProgress: func(u string, _, _ int) { rebuilt = append(rebuilt, u) }})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if len(rebuilt) == 0 {
		t.Error("the user with a claim at the epoch was not rebuilt")
	}
	if from, err := e.db.UpgradedFrom(); err != nil || from != 0 {
		t.Fatalf("marker after Open: %d, %v", from, err)
	}
	if after := dumpUser(t, e, "u"); after != before {
		t.Errorf("a store this build wrote changed in the rebuild:\n%s\n%s", before, after)
	}
}

// dropEpisodes removes from facts decoded from JSON the field Episodes,
// which the old build did not have, after checking that it holds the
// fact's own episode only (the old build stored no more). It returns what
// it found wrong.
func dropEpisodes(v any) string {
	switch x := v.(type) {
	case []any:
		for _, y := range x {
			if bad := dropEpisodes(y); bad != "" {
				return bad
			}
		}
	case map[string]any:
		if eps, ok := x["episodes"]; ok {
			if l, _ := eps.([]any); len(l) != 1 || l[0] != x["episode"] {
				return fmt.Sprintf("fact %v: episodes %v, want [%v]", x["id"], eps, x["episode"])
			}
			delete(x, "episodes")
		}
	}
	return ""
}

func dumpUser(t *testing.T, e *Engine, user string) string {
	t.Helper()
	var b strings.Builder
	err := e.db.Scan(context.Background(), kv.UserRoot(user), func(k, v []byte) error {
		fmt.Fprintf(&b, "%x=%x\n", k, v)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
