package memor

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/memor-db/memor/extract"
	"github.com/memor-db/memor/kv"
)

// goldenRecord is one fixed value of a record or key kind that layout.go
// documents: its encoding is pinned by testdata/format/v<FormatVersion>.
type goldenRecord struct {
	name   string
	encode func() []byte
	// decode checks that the bytes of the same kind written by an older
	// format still read (nil for keys and for values only written).
	decode func([]byte) error
}

func goldenTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

// goldenRecords returns one value of every kind, with non-ASCII text
// (CJK, emoji, RTL) where the kind holds text, an instant before the
// epoch, the epoch itself and open intervals.
func goldenRecords() []goldenRecord {
	const (
		idA = "0123456789abcdef0123456789abcdef"
		idB = "fedcba9876543210fedcba9876543210"
	)
	at := goldenTime("2026-03-01T09:30:00.000000001Z")
	rec := goldenTime("2026-03-01T09:30:05Z")
	textEp := Episode{Seq: 7, Kind: EpisodeText, At: at, RecordedAt: rec,
		Text: "I moved to 東京 last week 🎉 — שלום", Speaker: "Maya"}
	keyedEp := Episode{Seq: 11, Kind: EpisodeText, At: at, RecordedAt: rec.Add(4 * time.Second),
		Text: "I work at 東京 Labs.", Speaker: "Maya", Key: "req-7f3a 東京"}
	factsEp := Episode{Seq: 8, Kind: EpisodeFacts, At: at, RecordedAt: rec.Add(time.Second),
		Text: "user lives_in Tokyo", Ops: []extract.Op{
			{Kind: extract.Assert, Subject: "user", Predicate: "lives_in", Object: "Tokyo", ValidFrom: goldenTime("1969-12-31T23:59:59Z"), Confidence: 0.9, Quote: "moved to 東京"},
			{Kind: extract.End, Additive: true, Subject: "user", Predicate: "plays_instrument", Object: "violin", ValidFrom: time.Unix(0, 0).UTC(), Confidence: 1},
		}}
	correctEp := Episode{Seq: 9, Kind: EpisodeCorrect, At: at, RecordedAt: rec.Add(2 * time.Second),
		Correct: &Correction{FactID: idA, Claims: []string{idA, idB}}}
	acceptEp := Episode{Seq: 10, Kind: EpisodeAccept, At: at, RecordedAt: rec.Add(3 * time.Second),
		Text: "accept " + idB, Accept: &Acceptance{FactID: idB}, Speaker: "Maya"}
	accepted := claimRec{ID: idB, Kind: uint8(extract.Assert), Subject: "user", Predicate: "lives_in", Object: "Seattle",
		ValidFrom: nanos(at), Confidence: 0.6, Quote: "Seattle, I think", Episode: 8, Recorded: nanos(rec) + 2, Accepted: 10}
	claim := claimRec{ID: idA, Kind: uint8(extract.Assert), Subject: "user", Predicate: "lives_in", Object: "東京",
		Context: "work", ValidFrom: -1, Confidence: 1, Quote: "I moved to 東京", Episode: 7, Recorded: nanos(rec), Rule: RuleLate}
	end := claimRec{ID: idB, Kind: uint8(extract.End), Subject: "user", Predicate: "plays_instrument",
		ValidFrom: 0, Confidence: 0.75, Episode: 8, Recorded: nanos(rec) + 1, Retracted: true}
	fact := Fact{ID: idA, Subject: "user", Predicate: "lives_in", Object: "東京", Context: "work",
		ValidFrom: at, RecordedAt: rec, Status: Active, Confidence: 0.9, Reinforced: 2,
		LastSeen: rec, Episode: 7, Episodes: []uint64{7}, Quote: "I moved to 東京", Rule: RuleSupersede, Doc: 12}
	expired := fact
	expired.ValidTo, expired.ExpiredAt, expired.Status = goldenTime("2026-04-01T00:00:00Z"), rec.Add(time.Hour), Contested
	expired.Episodes = []uint64{7, 9, 300}
	dec := Decision{Seq: 3, Rule: RuleAdd, FactID: idA, Subject: "user", Predicate: "lives_in", Object: "東京",
		Context: "work", Episode: 7, RecordedAt: rec, Detail: "first value"}
	decExt := Decision{Seq: 4, Rule: RuleEnd, FactID: idB, Subject: "user", Predicate: "plays_instrument",
		Episode: 8, RecordedAt: rec, Reason: ReasonClosedAll, Reinforces: idA, Closed: []string{idA, idB}}
	slot := slotKey("user", "lives_in", "work", true, "")
	manySlot := slotKey("user", "plays_instrument", "", false, "violin")
	id := mustID(idA)
	suf := claimSuffix(slot, nanos(at), id)

	return []goldenRecord{
		{"episode-text", func() []byte { return appendEpisode(nil, &textEp) }, func(b []byte) error { _, err := decodeEpisode("u", b); return err }},
		{"episode-facts", func() []byte { return appendEpisode(nil, &factsEp) }, func(b []byte) error { _, err := decodeEpisode("u", b); return err }},
		{"episode-correction", func() []byte { return appendEpisode(nil, &correctEp) }, func(b []byte) error { _, err := decodeEpisode("u", b); return err }},
		{"claim-assert", func() []byte { return appendClaim(nil, &claim) }, func(b []byte) error { _, err := decodeClaim(b); return err }},
		{"claim-end", func() []byte { return appendClaim(nil, &end) }, func(b []byte) error { _, err := decodeClaim(b); return err }},
		{"episode-accept", func() []byte { return appendEpisode(nil, &acceptEp) }, func(b []byte) error { _, err := decodeEpisode("u", b); return err }},
		{"episode-keyed", func() []byte { return appendEpisode(nil, &keyedEp) }, func(b []byte) error { _, err := decodeEpisode("u", b); return err }},
		{"key-idempotency", func() []byte { return idemKey("alice", "req-7f3a\x00東京") }, nil},
		{"claim-accepted", func() []byte { return appendClaim(nil, &accepted) }, func(b []byte) error { _, err := decodeClaim(b); return err }},
		{"fact-live", func() []byte { return appendFact(nil, &fact) }, func(b []byte) error { _, err := decodeFact("u", b); return err }},
		{"fact-expired", func() []byte { return appendFact(nil, &expired) }, func(b []byte) error { _, err := decodeFact("u", b); return err }},
		{"decision", func() []byte { return appendDecision(nil, &dec) }, func(b []byte) error { _, err := decodeDecision(b); return err }},
		{"decision-extended", func() []byte { return appendDecision(nil, &decExt) }, func(b []byte) error { _, err := decodeDecision(b); return err }},
		{"doc-version", func() []byte { return versionDoc(nil, 7, suf, nanos(rec)) }, nil},
		{"doc-episode", func() []byte {
			return appendEpisodeDoc(nil, &episodeDoc{seq: 7, at: nanos(rec), rec: nanos(rec) + 5, hasClaims: true, more: true, standsKnown: true, stands: []string{idA, idB}, speaker: "Maya 東京", voiced: true})
		}, func(b []byte) error { d := episodeDoc{seq: 7}; _, err := decodeEpisodeFlags(&d, b); return err }},
		{"user-meta", func() []byte { return mustJSON(userMeta{Seq: 9, Applied: 8, Doc: 12, Log: 4, Txn: nanos(rec)}) }, nil},
		{"episode-state", func() []byte { return mustJSON(epState{Error: "extract: model down", Failed: nanos(rec)}) }, nil},
		{"key-meta", func() []byte { return kv.UserKey("a\x00b", kv.SubMeta) }, nil},
		{"key-episode", func() []byte { return seqKey("alice", kv.SubEpisode, 7) }, nil},
		{"key-episode-state", func() []byte { return seqKey("alice", kv.SubEpState, 7) }, nil},
		{"key-claim", func() []byte { return userKey("alice", kv.SubClaim, suf) }, nil},
		{"key-claim-many", func() []byte { return userKey("alice", kv.SubClaim, claimSuffix(manySlot, -1, id)) }, nil},
		{"key-fact-index", func() []byte { return userKey("alice", kv.SubFactIndex, id[:]) }, nil},
		{"key-live", func() []byte { return userKey("alice", kv.SubLive, suf) }, nil},
		{"key-history", func() []byte { return userKey("alice", kv.SubHistory, versionSuffix(suf, nanos(rec))) }, nil},
		{"key-archive", func() []byte { return userKey("alice", kv.SubArchive, versionSuffix(suf, nanos(rec))) }, nil},
		{"key-doc", func() []byte { return kv.AppendUint32(kv.UserKey("alice", kv.SubDoc), 12) }, nil},
		{"key-log", func() []byte { return seqKey("alice", kv.SubLog, 4) }, nil},
		{"key-judge", func() []byte { return judgeKey("alice", "owns_boat") }, nil},
		{"key-txn-floor", func() []byte { return txnFloorKey }, nil},
		{"key-forget", func() []byte { return forgetPrefix }, nil},
		{"key-embedder", func() []byte { return embedderKey }, nil},
		{"key-registry", func() []byte { return registryKey("alice") }, nil},
		{"key-image-head", func() []byte { return kv.ImageHead("alice") }, nil},
		{"key-image-chunk", func() []byte { return imageChunkKey(kv.ImageChunks("alice"), kv.SubBM25, 3) }, nil},
		{"image-claim", func() []byte { return kv.AppendUint64([]byte{imageClaimVersion}, 7) }, nil},
		{"image-head", func() []byte {
			return appendImageHead(nil, &imageHead{chunks: []uint64{1, 1, 2, 1, 0}, bytes: []uint64{12, 12, 13, 10, 0}})
		}, func(b []byte) error {
			// A head of an older image version (format 10's) is known as
			// outdated: refused, and the image replaced.
			if _, err := decodeImageHead(b); err != nil && !errors.Is(err, errImageOutdated) {
				return err
			}
			return nil
		}},
	}
}

// TestRecordFormat pins the bytes of every record and key kind to the
// golden file of the current format, testdata/format/v<kv.FormatVersion>,
// so that an encoding cannot change without a format version bump. When
// an encoding changes on purpose: bump kv.FormatVersion (and say what
// changed in its history in kv/db.go and in layout.go), copy the previous
// golden file to the new version's name, and rewrite it with
//
//	go test -run TestRecordFormat -rewrite .
//
// The older golden files stay: their records must still decode.
func TestRecordFormat(t *testing.T) {
	t.Parallel()
	records := goldenRecords()
	byName := map[string]goldenRecord{}
	for _, r := range records {
		byName[r.name] = r
	}
	path := filepath.Join("testdata", "format", fmt.Sprintf("v%d", kv.FormatVersion))
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("format %d has no golden file (%v): copy the previous version's to %s and run with -rewrite", kv.FormatVersion, err, path)
	}
	seen := map[string]bool{}
	datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
		r, ok := byName[d.Cmd]
		if !ok {
			d.Fatalf(t, "unknown kind %q", d.Cmd)
		}
		seen[d.Cmd] = true
		return hex.Dump(r.encode())
	})
	for _, r := range records {
		if !seen[r.name] {
			t.Errorf("%s: no case for %q: add \"%s\\n----\" to it and run with -rewrite", path, r.name, r.name)
		}
	}
}

// TestOldFormatsDecode: the records of every older golden file still read.
func TestOldFormatsDecode(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "format", "v*"))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]goldenRecord{}
	for _, r := range goldenRecords() {
		byName[r.name] = r
	}
	for _, path := range files {
		v, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(path), "v"))
		if err != nil || v > int(kv.FormatVersion) {
			t.Errorf("%s: not a golden file of a format up to %d", path, kv.FormatVersion)
			continue
		}
		if uint32(v) == kv.FormatVersion {
			continue
		}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			r, ok := byName[d.Cmd]
			if ok && r.decode != nil {
				b, err := parseDump(d.Expected)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				if err := r.decode(b); err != nil {
					d.Fatalf(t, "format %d %s no longer decodes: %v", v, d.Cmd, err)
				}
			}
			return d.Expected
		})
	}
}

// dumpLine is one line of hex.Dump: offset, up to 16 bytes, the text.
var dumpLine = regexp.MustCompile(`^[0-9a-f]{8}  ((?:[0-9a-f]{2} {1,2})+) *\|.*\|$`)

// parseDump reads back the bytes hex.Dump wrote.
func parseDump(s string) ([]byte, error) {
	var out []byte
	for line := range strings.SplitSeq(strings.TrimRight(s, "\n"), "\n") {
		m := dumpLine.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("not a hex dump line: %q", line)
		}
		b, err := hex.DecodeString(strings.Join(strings.Fields(m[1]), ""))
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}

// TestParseDump: parseDump inverts hex.Dump, so that TestOldFormatsDecode
// decodes the bytes the golden files hold.
func TestParseDump(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 7, 8, 15, 16, 17, 40} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*37 + n)
		}
		got, err := parseDump(hex.Dump(b))
		if err != nil || !slices.Equal(got, b) {
			t.Fatalf("%d bytes: got %x, %v; want %x", n, got, err, b)
		}
	}
	if _, err := parseDump("garbage"); err == nil {
		t.Fatal("garbage parsed")
	}
}

// TestEpisodeRecordInvariant: under invariants (every test binary) an
// episode record that would not read back as written panics when it is
// encoded, not when a Rebuild replays it.
func TestEpisodeRecordInvariant(t *testing.T) {
	t.Parallel()
	ep := Episode{Seq: 1, Kind: EpisodeFacts, Ops: []extract.Op{{Kind: extract.Assert, Subject: "user",
		Predicate: "likes", Object: "tea", Confidence: 1.5}}}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "invariant") {
			t.Fatalf("recovered %v, want the invariant's panic", r)
		}
	}()
	appendEpisode(nil, &ep)
}
