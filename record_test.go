package memor

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/memor-db/memor/extract"
	"github.com/memor-db/memor/kv"
)

func randString(r *rand.Rand) string {
	words := []string{"", "user", "Seattle", "San Francisco", "ünïcödé", "a\x00b", "lives_in", "{", "\x02"}
	if r.IntN(4) == 0 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte('a' + r.IntN(26))
		}
		return string(b)
	}
	return words[r.IntN(len(words))]
}

func randTime(r *rand.Rand) time.Time {
	switch r.IntN(5) {
	case 0:
		return time.Time{}
	case 1:
		return time.Unix(0, 0).UTC() // the epoch must not read back as zero
	case 2:
		return time.Unix(0, -r.Int64N(1<<60)).UTC()
	}
	return time.Unix(0, r.Int64N(1<<62)).UTC()
}

func randID(r *rand.Rand) string {
	if r.IntN(8) == 0 {
		return randString(r) // not a hex ID: kept as a string
	}
	var id [idLen]byte
	for i := range id {
		id[i] = byte(r.IntN(256))
	}
	return fmt.Sprintf("%x", id[:])
}

func randConfidence(r *rand.Rand) float64 {
	if r.IntN(2) == 0 {
		return 1
	}
	return r.Float64()
}

func randClaim(r *rand.Rand) claimRec {
	return claimRec{ID: randID(r), Kind: uint8(r.IntN(3)), Subject: randString(r), Predicate: randString(r),
		Object: randString(r), Context: randString(r), ValidFrom: r.Int64() - r.Int64(), Confidence: randConfidence(r),
		Quote: randString(r), Episode: r.Uint64(), Recorded: r.Int64() - r.Int64(), Retracted: r.IntN(2) == 0,
		Rule: Rule(randString(r))}
}

func randFact(r *rand.Rand) Fact {
	f := Fact{ID: randID(r), User: "u", Subject: randString(r), Predicate: randString(r), Object: randString(r),
		Context: randString(r), ValidFrom: randTime(r), ValidTo: randTime(r), RecordedAt: randTime(r),
		ExpiredAt: randTime(r), Status: Status(1 + r.IntN(3)), Confidence: randConfidence(r), Reinforced: r.IntN(1 << 20),
		LastSeen: randTime(r), Episode: r.Uint64(), Quote: randString(r), Rule: Rule(randString(r)), Doc: r.Uint32()}
	f.Episodes = []uint64{f.Episode}
	for range r.IntN(3) {
		f.Episodes = append(f.Episodes, r.Uint64())
	}
	return f
}

func randDecision(r *rand.Rand) Decision {
	return Decision{Seq: r.Uint64(), Rule: Rule(randString(r)), FactID: randID(r), Subject: randString(r),
		Predicate: randString(r), Object: randString(r), Context: randString(r), Episode: r.Uint64(),
		RecordedAt: randTime(r), Detail: randString(r)}
}

func randDecisionTyped(r *rand.Rand) Decision {
	d := randDecision(r)
	d.Reason = Reason(r.IntN(int(numReasons)))
	if r.IntN(2) == 0 {
		d.Reinforces = randID(r)
	}
	for range r.IntN(3) {
		d.Closed = append(d.Closed, randID(r))
	}
	return d
}

func randEpisode(r *rand.Rand) Episode {
	ep := Episode{User: "u", Seq: r.Uint64(), Kind: EpisodeKind(1 + r.IntN(3)), At: randTime(r), RecordedAt: randTime(r),
		Text: randString(r)}
	for range r.IntN(4) {
		ep.Ops = append(ep.Ops, extract.Op{Kind: extract.Kind(r.IntN(2)), Subject: randString(r),
			Predicate: randString(r), Object: randString(r), Context: randString(r), ValidFrom: randTime(r),
			Confidence: r.Float64(), Quote: randString(r), Additive: r.IntN(2) == 0})
	}
	if r.IntN(2) == 0 {
		if ep.Speaker = randString(r); ep.Speaker == "" {
			ep.Speaker = "Caroline"
		}
	}
	if r.IntN(3) == 0 {
		ep.Correct = &Correction{FactID: randID(r)}
		for range r.IntN(3) {
			ep.Correct.Claims = append(ep.Correct.Claims, randID(r))
		}
	}
	return ep
}

// TestRecordRoundTrip: every record decodes to what was encoded, and every
// truncation of it is an ErrCorrupt, never a panic or a shorter record.
func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		c, f, d, ep := randClaim(r), randFact(r), randDecision(r), randEpisode(r)
		if r.IntN(2) == 0 {
			d = randDecisionTyped(r)
		}
		cases := []struct {
			what   string
			in     any
			b      []byte
			decode func([]byte) (any, error)
		}{
			{"claim", c, appendClaim(nil, &c), func(b []byte) (any, error) { return decodeClaim(b) }},
			{"fact", f, appendFact(nil, &f), func(b []byte) (any, error) { return decodeFact("u", b) }},
			{"decision", d, appendDecision(nil, &d), func(b []byte) (any, error) { return decodeDecision(b) }},
			{"episode", ep, appendEpisode(nil, &ep), func(b []byte) (any, error) { return decodeEpisode("u", b) }},
		}
		for _, tc := range cases {
			got, err := tc.decode(tc.b)
			if err != nil {
				t.Fatalf("%s: %v", tc.what, err)
			}
			if !reflect.DeepEqual(got, tc.in) {
				t.Fatalf("%s round trip:\n got %+v\nwant %+v", tc.what, got, tc.in)
			}
			for n := 1; n < len(tc.b); n++ {
				if _, err := tc.decode(tc.b[:n]); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%s cut at %d of %d: %v", tc.what, n, len(tc.b), err)
				}
			}
			if _, err := tc.decode(append(bytes.Clone(tc.b), 0)); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s with a trailing byte: %v", tc.what, err)
			}
		}
	}
}

// TestEpisodeRecordBeforeSpeakers: episode records written before
// episodes had a speaker (these bytes come from that build) decode as
// they did, with no speaker, and re-encode to the same bytes.
func TestEpisodeRecordBeforeSpeakers(t *testing.T) {
	t.Parallel()
	at := time.Date(2024, 3, 15, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		hex  string
		want Episode
	}{
		{"0207018280c58b97a0f2bc2f82a89bc59ea0f2bc2f1149206c69766520696e20426f73746f6e2e0000",
			Episode{User: "u", Seq: 7, Kind: EpisodeText, At: at, RecordedAt: at.Add(time.Second), Text: "I live in Boston."}},
		{"0208028280c58b97a0f2bc2f8280c58b97a0f2bc2f1475736572206c697665735f696e20426f73746f6e0101000475736572086c697665735f696e06426f73746f6e008280c58b97a0f2bc2f000000000000f03f017100",
			Episode{User: "u", Seq: 8, Kind: EpisodeFacts, At: at, RecordedAt: at, Text: "user lives_in Boston",
				Ops: []extract.Op{{Kind: extract.Assert, Subject: "user", Predicate: "lives_in", Object: "Boston", ValidFrom: at, Confidence: 1, Quote: "q"}}}},
	} {
		b, err := hex.DecodeString(tc.hex)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeEpisode("u", b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tc.want) || got.Speaker != "" {
			t.Fatalf("old record:\n got %+v\nwant %+v", got, tc.want)
		}
		if again := appendEpisode(nil, &got); !bytes.Equal(again, b) {
			t.Fatalf("an episode without speaker re-encodes differently:\n%x\n%x", again, b)
		}
	}
	// A speaker is a flag in the same trailer byte, after the ops.
	ep := Episode{User: "u", Seq: 7, Kind: EpisodeText, At: at, RecordedAt: at.Add(time.Second), Text: "I live in Boston.", Speaker: "Caroline"}
	b := appendEpisode(nil, &ep)
	if got, err := decodeEpisode("u", b); err != nil || got.Speaker != "Caroline" {
		t.Fatalf("speaker record: %+v %v", got, err)
	}
	for _, bad := range [][]byte{
		append(bytes.Clone(b[:len(b)-len("Caroline")-2]), epSpeaker, 0), // flagged, empty
		append(bytes.Clone(b[:len(b)-len("Caroline")-2]), 0x80),         // an unknown flag
	} {
		if _, err := decodeEpisode("u", bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%x: %v, want ErrCorrupt", bad, err)
		}
	}
}

// TestRecordReadsFormat1: the JSON records of format-1 stores decode as
// before.
func TestRecordReadsFormat1(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		c, f, d, ep := randClaim(r), randFact(r), randDecision(r), randEpisode(r)
		if r.IntN(2) == 0 {
			d = randDecisionTyped(r)
		}
		if got, err := decodeClaim(mustJSON(c)); err != nil || !reflect.DeepEqual(got, c) {
			t.Fatalf("claim: %v\n got %+v\nwant %+v", err, got, c)
		}
		if got, err := decodeFact("u", format1Fact(f)); err != nil || !sameFact(got, f) {
			t.Fatalf("fact: %v\n got %+v\nwant %+v", err, got, f)
		}
		if got, err := decodeDecision(mustJSON(d)); err != nil || !reflect.DeepEqual(got, d) {
			t.Fatalf("decision: %v\n got %+v\nwant %+v", err, got, d)
		}
		if got, err := decodeEpisode("u", format1Episode(ep)); err != nil || got.Seq != ep.Seq || got.Text != ep.Text ||
			len(got.Ops) != len(ep.Ops) || !got.At.Equal(ep.At) {
			t.Fatalf("episode: %v\n got %+v\nwant %+v", err, got, ep)
		}
	}
}

func format1Fact(f Fact) []byte {
	sf := storedFact{Fact: f, DocID: f.Doc}
	sf.User = ""
	return mustJSON(sf)
}

func format1Episode(ep Episode) []byte {
	ep.User = ""
	return mustJSON(ep)
}

// sameFact compares facts with time.Time.Equal (JSON keeps instants, not
// the location pointer).
func sameFact(a, b Fact) bool {
	ta := []time.Time{a.ValidFrom, a.ValidTo, a.RecordedAt, a.ExpiredAt, a.LastSeen}
	tb := []time.Time{b.ValidFrom, b.ValidTo, b.RecordedAt, b.ExpiredAt, b.LastSeen}
	for i := range ta {
		if !ta[i].Equal(tb[i]) {
			return false
		}
	}
	a.ValidFrom, a.ValidTo, a.RecordedAt, a.ExpiredAt, a.LastSeen = b.ValidFrom, b.ValidTo, b.RecordedAt, b.ExpiredAt, b.LastSeen
	return reflect.DeepEqual(a, b)
}

// FuzzRecordDecoders: no input makes a decoder panic, and whatever decodes
// re-encodes to a record that decodes the same.
func FuzzRecordDecoders(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	c, fa, d, ep := randClaim(r), randFact(r), randDecision(r), randEpisode(r)
	f.Add(appendClaim(nil, &c))
	f.Add(appendFact(nil, &fa))
	f.Add(appendDecision(nil, &d))
	f.Add(appendEpisode(nil, &ep))
	f.Add([]byte(`{"id":"x"}`))
	f.Add([]byte{recBinary, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		if c, err := decodeClaim(b); err == nil {
			if c2, err := decodeClaim(appendClaim(nil, &c)); err != nil || !reflect.DeepEqual(c, c2) {
				t.Fatalf("claim re-encode: %v", err)
			}
		}
		if f, err := decodeFact("u", b); err == nil {
			if f2, err := decodeFact("u", appendFact(nil, &f)); err != nil || !sameFact(f, f2) {
				t.Fatalf("fact re-encode: %v", err)
			}
		}
		if d, err := decodeDecision(b); err == nil {
			if _, err := decodeDecision(appendDecision(nil, &d)); err != nil {
				t.Fatalf("decision re-encode: %v", err)
			}
		}
		if ep, err := decodeEpisode("u", b); err == nil {
			if _, err := decodeEpisode("u", appendEpisode(nil, &ep)); err != nil {
				t.Fatalf("episode re-encode: %v", err)
			}
		}
	})
}

// TestFormat1StoreUpgrades: a store whose records are all JSON (as format 1
// wrote them) opens, reads the same state, history, log and episodes,
// passes Check, takes new binary writes beside the old records, and is
// marked format 2 so that an older build refuses it.
func TestFormat1StoreUpgrades(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "db")
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	d0 := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	for i, city := range []string{"San Francisco", "Seattle", "Austin"} {
		if _, err := e.Assert(ctx, "u", FactInput{Subject: "user", Predicate: "lives_in", Object: city,
			ValidFrom: d0.AddDate(0, i, 0)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Add(ctx, "u", "I play the guitar and I also play the cello", At(d0)); err != nil {
		t.Fatal(err)
	}
	if err := e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	snapshot := func() string {
		st, err1 := e.State(ctx, "u")
		h, err2 := e.History(ctx, "u", "user", "lives_in")
		lg, err3 := e.Log(ctx, "u")
		eps, err4 := e.Episodes(ctx, "u")
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal([]any{st, h, lg, eps})
		return string(b)
	}
	want := snapshot()

	// Rewrite every record as format 1 did.
	b := e.db.NewBatch()
	root := kv.UserRoot("u")
	n := 0
	err = e.db.Scan(ctx, root, func(k, v []byte) error {
		var j []byte
		switch kv.Sub(k[len(root)]) {
		case kv.SubClaim:
			c, err := decodeClaim(v)
			if err != nil {
				return err
			}
			j = mustJSON(c)
		case kv.SubLive, kv.SubHistory, kv.SubArchive:
			f, err := decodeFact("u", v)
			if err != nil {
				return err
			}
			j = format1Fact(f)
		case kv.SubLog:
			d, err := decodeDecision(v)
			if err != nil {
				return err
			}
			j = mustJSON(d)
		case kv.SubEpisode:
			ep, err := decodeEpisode("u", v)
			if err != nil {
				return err
			}
			j = format1Episode(ep)
		default:
			return nil
		}
		n++
		return b.Set(bytes.Clone(k), j)
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("rewrote only %d records", n)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := kv.Open(dir, kv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SetFormatVersionForTest(dir, 1); err != nil {
		t.Fatal(err)
	}
	db.Close()

	e, err = Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got := snapshot(); got != want {
		t.Fatalf("format-1 store reads differently:\n got %s\nwant %s", got, want)
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := e.db.Get([]byte{kv.TagMeta, 'f', 'o', 'r', 'm', 'a', 't'}); err != nil || binary.BigEndian.Uint32(v) != kv.FormatVersion {
		t.Fatalf("format after open: %x, %v", v, err)
	}
	// New (binary) writes supersede old (JSON) versions.
	if _, err := e.Assert(ctx, "u", FactInput{Subject: "user", Predicate: "lives_in", Object: "Denver",
		ValidFrom: d0.AddDate(0, 5, 0)}); err != nil {
		t.Fatal(err)
	}
	st, err := e.State(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range st {
		if f.Predicate == "lives_in" {
			found = true
			if f.Object != "Denver" {
				t.Fatalf("lives_in after upgrade: %s", f.Object)
			}
		}
	}
	if !found {
		t.Fatal("no lives_in after upgrade")
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestForgetOldRegistry: a store of format 2 or older also names each user
// in the registry; Forget deletes that key (and its bytes) too, and the
// user is not listed afterwards.
func TestForgetOldRegistry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "db")
	e, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, u := range []string{"old", "other"} {
		if _, err := e.Assert(ctx, u, FactInput{Subject: "user", Predicate: "likes", Object: "tea"}); err != nil {
			t.Fatal(err)
		}
		// What a format-2 build wrote beside the user's first episode.
		b := e.db.NewBatch()
		if err := b.Set(registryKey(u), nil); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
		b.Close()
	}
	if err := e.Forget(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Get(registryKey("old")); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("registry key of a forgotten user: %v", err)
	}
	if _, err := e.db.Get(registryKey("other")); err != nil {
		t.Errorf("another user's registry key: %v", err)
	}
	if us, err := e.Users(ctx); err != nil || len(us) != 1 || us[0] != "other" {
		t.Errorf("Users after Forget: %q, %v", us, err)
	}
}

// TestRecordReadsOldBinary: a fact version and a decision as the binary
// format wrote them before Fact.Episodes and the typed decision fields
// decode, with the episode of the claim as the only support and no typed
// reason; and a record that needs neither is still written byte for byte
// as then.
func TestRecordReadsOldBinary(t *testing.T) {
	t.Parallel()
	// Written by appendFact and appendDecision before the extension.
	const oldFact = "0201c6acf8f784bcc0d12335feb9f7adb7b40475736572086c697665735f696e0753656174746c65008280c5e6c1a898c131008280c5e6c1a898c1310001000000000000f03f028280bdfbd3cdbfc131031749206a757374206d6f76656420746f2053656174746c650973757065727365646509"
	const oldDecision = "02070364757001885a34c86e8047cf8ce5013963eda34d0475736572086c697665735f696e0753656174746c6500048280bdfbd3cdbfc1312b7265696e666f72636573206336616366386637383462636330643132333335666562396637616462376234"
	fb, _ := hex.DecodeString(oldFact)
	f, err := decodeFact("u", fb)
	if err != nil {
		t.Fatal(err)
	}
	if f.Object != "Seattle" || f.Episode != 3 || !slices.Equal(f.Episodes, []uint64{3}) || f.Reinforced != 2 || f.Doc != 9 {
		t.Fatalf("old fact decoded as %+v", f)
	}
	if got := appendFact(nil, &f); !bytes.Equal(got, fb) {
		t.Fatalf("a fact said in one episode is written\n %x\nnot as before\n %x", got, fb)
	}
	db, _ := hex.DecodeString(oldDecision)
	d, err := decodeDecision(db)
	if err != nil {
		t.Fatal(err)
	}
	if d.Rule != RuleDup || d.Detail != "reinforces c6acf8f784bcc0d12335feb9f7adb7b4" || d.Reason != ReasonNone || d.Reinforces != "" || d.Closed != nil {
		t.Fatalf("old decision decoded as %+v", d)
	}
	if got := appendDecision(nil, &d); !bytes.Equal(got, db) {
		t.Fatalf("an untyped decision is written\n %x\nnot as before\n %x", got, db)
	}
	// With support and typed fields the record is extended.
	f.Episodes = []uint64{3, 4}
	d.Reason, d.Reinforces = ReasonReinforces, "c6acf8f784bcc0d12335feb9f7adb7b4"
	if b := appendFact(nil, &f); b[0] != recExtended {
		t.Fatalf("fact with two episodes starts %#x", b[0])
	}
	if b := appendDecision(nil, &d); b[0] != recExtended {
		t.Fatalf("typed decision starts %#x", b[0])
	}
}
