package memor

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memor-db/memor/internal/corpus"
	"github.com/memor-db/memor/kv"
)

// TestLoadRebuildsEpisodeMaps: the maps Query decides an episode's
// visibility by (which facts each episode produced, the documents of each
// fact's versions, their subjects and contexts) come out of a load from
// the store exactly as the writes built them in memory, for episodes whose
// facts changed since (a move supersedes a home, a correction).
func TestLoadRebuildsEpisodeMaps(t *testing.T) {
	ctx := context.Background()
	e, err := Open(filepath.Join(t.TempDir(), "db"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	day := func(d int) time.Time { return time.Date(2024, 3, d, 9, 0, 0, 0, time.UTC) }
	turns := []string{
		"I live in Boston with my brother Alex.",
		"My sister Maya works at Door Dash — she loves it 🎉.",
		"I moved to Lisbon last week.",
		"Alex moved to Austin.",
		"I play the cello and I like sushi.",
		"Actually Maya works at Stripe now.",
	}
	for i, text := range turns {
		if _, err := e.Add(ctx, "u", text, At(day(i+1)), Sync()); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 40 {
		if _, err := e.Assert(ctx, "u", FactInput{Subject: "user", Predicate: "likes",
			Object: fmt.Sprintf("dish %d", i), ValidFrom: day(10)}); err != nil {
			t.Fatal(err)
		}
	}
	written, err := e.idx.view(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	if len(written.episodes) != len(turns) || len(written.versionsOf) < 40 {
		t.Fatalf("%d episodes, %d facts in memory: the scenario wrote too little", len(written.episodes), len(written.versionsOf))
	}
	e.idx.dropUser("u")
	loaded, err := e.idx.view(ctx, "u")
	if err != nil {
		t.Fatal(err)
	}
	if loaded == written {
		t.Fatal("the indexes were not reloaded")
	}
	for _, m := range []struct {
		name            string
		written, loaded any
	}{
		{"factsOf", episodeFactsText(written), episodeFactsText(loaded)},
		{"versionsOf", written.versionsOf, loaded.versionsOf},
		{"episodes", written.episodes, loaded.episodes},
	} {
		if !reflect.DeepEqual(m.written, m.loaded) {
			t.Errorf("%s: loaded %v, written %v", m.name, m.loaded, m.written)
		}
	}
	all := roaring.New()
	all.AddRange(0, 1<<20)
	for _, at := range []int64{day(2).UnixNano(), day(5).UnixNano(), day(30).UnixNano()} {
		facts := loaded.tmp.Visible(time.Unix(0, at), time.Unix(0, at))
		if w, l := written.visibleEpisodes(at, at, facts), loaded.visibleEpisodes(at, at, facts); !w.Equals(l) {
			t.Errorf("visible episodes at %v: loaded %v, written %v", time.Unix(0, at).UTC(), l.ToArray(), w.ToArray())
		}
	}
}

// episodeFactsText is what ui holds of each episode's facts, as sets: the
// documents of each fact (a fact listed twice counts once), the subjects
// and the contexts.
func episodeFactsText(ui *userIndex) map[uint64]string {
	out := map[uint64]string{}
	for seq, ef := range ui.factsOf {
		var facts []string
		for _, d := range ef.facts {
			docs := append([]uint32{d.first}, d.rest...)[:d.n]
			slices.Sort(docs)
			facts = append(facts, fmt.Sprint(docs))
		}
		slices.Sort(facts)
		out[seq] = fmt.Sprintf("facts %v subjects %v contexts %v", slices.Compact(facts),
			slices.Sorted(maps.Keys(ef.subjects)), slices.Sorted(maps.Keys(ef.contexts)))
	}
	return out
}

// TestFactDocs: a fact's documents are a set, and intersects asks whether
// any of them is in the bitmap.
func TestFactDocs(t *testing.T) {
	var d factDocs
	if d.intersects(roaring.BitmapOf(0)) {
		t.Fatal("an empty set intersects")
	}
	for _, doc := range []uint32{7, 3, 7, 9, 3} {
		d.add(doc)
	}
	if d.n != 3 || !d.has(3) || !d.has(7) || !d.has(9) || d.has(0) {
		t.Fatalf("set %+v, want {7, 3, 9}", d)
	}
	for _, c := range []struct {
		b    *roaring.Bitmap
		want bool
	}{{roaring.BitmapOf(7), true}, {roaring.BitmapOf(9, 100), true}, {roaring.BitmapOf(1, 2, 8), false}, {roaring.New(), false}} {
		if got := d.intersects(c.b); got != c.want {
			t.Errorf("intersects %v = %v, want %v", c.b.ToArray(), got, c.want)
		}
	}
}

// TestLoadParts: a load's parts run at once (a large user through the
// store) or one after the other; either way the load fails with the
// first failing part's error in their order (not whichever finished
// first), and a part that panics fails it with ErrInternal instead of
// taking the process down from a goroutine no caller can recover in.
func TestLoadParts(t *testing.T) {
	e, err := Open(filepath.Join(t.TempDir(), "db"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	first, second := errors.New("first"), errors.New("second")
	for _, r := range []struct {
		name string
		r    bool
	}{{"at once", true}, {"in turn", false}} {
		ran := make([]bool, 3)
		err := e.idx.loadParts(r.r, "u",
			func() error { ran[0] = true; return nil },
			func() error { time.Sleep(10 * time.Millisecond); ran[1] = true; return first },
			func() error { ran[2] = true; return second })
		if !errors.Is(err, first) {
			t.Errorf("%s: error %v, want the second part's", r.name, err)
		}
		if !ran[0] || !ran[1] {
			t.Errorf("%s: parts run %v", r.name, ran)
		}
		err = e.idx.loadParts(r.r, "u", func() error { return nil }, func() error { panic("boom") })
		if !errors.Is(err, ErrInternal) {
			t.Errorf("%s: a panicking part: error %v, want ErrInternal", r.name, err)
		}
	}
	if err := e.idx.loadParts(true, "u", func() error { return nil }, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
}

// getCounter is a kv.Reader that counts the Gets under one keyspace.
type getCounter struct {
	kv.Reader
	prefix []byte
	gets   int
}

func (g *getCounter) Get(key []byte) ([]byte, error) {
	if bytes.HasPrefix(key, g.prefix) {
		g.gets++
	}
	return g.Reader.Get(key)
}

// TestLoadReadsNoEpisodes: an episode's document map value holds its At
// and RecordedAt (format 12), so a load of a conversation reads no
// episode (it read each, a Get of a long message, most of the load); a
// value written before holds no times, and the load reads its episode
// for them, to the same result.
func TestLoadReadsNoEpisodes(t *testing.T) {
	ctx := context.Background()
	e, err := Open(filepath.Join(t.TempDir(), "db"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	texts := corpus.MustTexts()
	for i, text := range texts {
		if _, err := e.Add(ctx, "u", cutText(text.Body, 3000), At(time.Date(2024, 3, 1+i, 9, 0, 0, 0, time.UTC))); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	m, err := loadMeta(e.db, "u")
	if err != nil {
		t.Fatal(err)
	}
	load := func() (*userIndex, int) {
		t.Helper()
		r := &getCounter{Reader: e.db, prefix: kv.UserKey("u", kv.SubEpisode)}
		ui, err := e.idx.loadFrom(ctx, e.db, r, nil, "u", m)
		if err != nil {
			t.Fatal(err)
		}
		return ui, r.gets
	}
	timed, gets := load()
	if len(timed.episodes) < len(texts)/2 || gets != 0 {
		t.Fatalf("%d episode documents loaded with %d episode reads, want many and none", len(timed.episodes), gets)
	}
	for _, d := range timed.episodes {
		ep, err := getEpisode(e.db, "u", d.seq)
		if err != nil {
			t.Fatal(err)
		}
		if d.at != nanos(ep.At) || d.rec != nanos(ep.RecordedAt) || d.rec == 0 {
			t.Fatalf("episode %d: times %d %d from its document, the episode's %d %d", d.seq, d.at, d.rec, nanos(ep.At), nanos(ep.RecordedAt))
		}
	}
	// The values as format 11 wrote them: no times, no speaker, neither
	// flag.
	b := e.db.NewBatch()
	docs := kv.UserKey("u", kv.SubDoc)
	if err := e.db.Scan(ctx, docs, func(k, v []byte) error {
		if v[0] != docEpisode || v[9]&episodeTimed == 0 || v[9]&episodeVoiced == 0 {
			return nil
		}
		n, w := binary.Uvarint(v[26:])
		old := append(append(bytes.Clone(v[:9]), v[9]&^(episodeTimed|episodeVoiced)), v[26+w+int(n):]...)
		return b.Set(k, old)
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	untimed, gets := load()
	if gets != len(timed.episodes) {
		t.Fatalf("%d episode reads for %d untimed documents", gets, len(timed.episodes))
	}
	for _, d := range timed.episodes {
		d.speaker, d.voiced = "", false // (a query reads such an episode for its speaker)
	}
	if !reflect.DeepEqual(untimed.episodes, timed.episodes) {
		t.Fatal("the episodes loaded from untimed documents differ from the timed ones'")
	}
}
