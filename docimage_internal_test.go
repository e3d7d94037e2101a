package memor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/memor-db/memor/index/temporal"
	"github.com/memor-db/memor/internal/corpus"
	"github.com/memor-db/memor/internal/imagetest"
	"github.com/memor-db/memor/kv"
)

// docImageUser writes a user whose document map holds every kind of
// document: realistic texts (episodes, with facts extracted), a batch of
// facts, superseded and ended values and a correction (versions no longer
// active), and returns the open engine and the user's image of it.
func docImageUser(t testing.TB) (*Engine, []byte, *temporal.Index) {
	t.Helper()
	ctx := context.Background()
	e, err := Open(filepath.Join(t.TempDir(), "db"), Options{NoSync: true, NoIndexImages: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	day := func(d int) time.Time { return time.Date(2024, 3, 1, 9, 0, 0, 0, time.UTC).AddDate(0, 0, d) }
	for i, text := range corpus.MustTexts() {
		opts := []AddOption{At(day(i))}
		if i%3 == 1 { // (a speaker in the document map's values: format 15)
			opts = append(opts, Speaker([]string{"assistant", "Maya 東京"}[i%2]))
		}
		if _, err := e.Add(ctx, "u", cutText(text.Body, 2000), opts...); err != nil {
			t.Fatal(err)
		}
	}
	for i, turn := range []string{"I live in Boston with my brother Alex.", "I moved to Lisbon.", "My sister Maya works at Door Dash.",
		"Actually Maya works at Stripe now.", "I no longer play the violin."} {
		if _, err := e.Add(ctx, "u", turn, At(day(40+i)), Sync()); err != nil {
			t.Fatal(err)
		}
	}
	var fs []FactInput
	for i := range 120 {
		fs = append(fs, FactInput{Subject: fmt.Sprintf("entity %d", i%7), Predicate: "likes", Object: fmt.Sprintf("dish %d", i),
			Context: []string{"", "work"}[i%2], ValidFrom: day(50)})
	}
	ds, err := e.AssertBatch(ctx, "u", fs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.End(ctx, "u", EndInput{Subject: "entity 3", Predicate: "likes", Object: "dish 3", Context: "work", At: day(60)}); err != nil {
		t.Fatal(err)
	}
	if err := e.Correct(ctx, "u", ds[5].FactID); err != nil {
		t.Fatal(err)
	}
	if err := e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	m, err := loadMeta(e.db, "u")
	if err != nil {
		t.Fatal(err)
	}
	b, err := appendDocImage(ctx, nil, e.db, "u", m)
	if err != nil {
		t.Fatal(err)
	}
	tmp, err := temporal.Load(ctx, e.db, kv.UserKey("u", kv.SubTemporal))
	if err != nil {
		t.Fatal(err)
	}
	return e, b, tmp
}

// TestDocImageMatchesRecords: a load of the document map from its image
// holds what a load from the records holds, field by field (the arena,
// the episodes, what each produced, the fact versions, the bytes
// counted), and a write after it appends to its own copy of the arena,
// never to the image.
func TestDocImageMatchesRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, b, tmp := docImageUser(t)
	m, err := loadMeta(e.db, "u")
	if err != nil {
		t.Fatal(err)
	}
	fromRecords := e.idx.newUserIndex(nil, nil, nil, nil)
	fromRecords.docAt = make([]uint32, 0, int(m.Doc)+1)
	if err := loadDocs(ctx, e.db, "u", fromRecords, tmp); err != nil {
		t.Fatal(err)
	}
	kept := bytes.Clone(b)
	fromImage := e.idx.newUserIndex(nil, nil, nil, nil)
	if err := loadDocImage(b, e.db, "u", fromImage, tmp); err != nil {
		t.Fatal(err)
	}
	if len(fromRecords.episodes) < 10 || len(fromRecords.versionsOf) < 100 || len(fromRecords.factsOf) < 5 {
		t.Fatalf("%d episodes, %d facts, %d episodes with facts: the scenario wrote too little",
			len(fromRecords.episodes), len(fromRecords.versionsOf), len(fromRecords.factsOf))
	}
	speakers := map[string]bool{}
	for _, d := range fromRecords.episodes {
		if !d.voiced {
			t.Fatalf("episode %d: no speaker recorded in its document", d.seq)
		}
		speakers[d.speaker] = true
	}
	if !speakers[""] || !speakers["Maya 東京"] {
		t.Fatalf("speakers %v: the scenario has none but the user", speakers)
	}
	for _, f := range []struct {
		name           string
		records, image any
	}{
		{"docAt", fromRecords.docAt, fromImage.docAt},
		{"docArena", fromRecords.docArena, fromImage.docArena},
		{"episodes", fromRecords.episodes, fromImage.episodes},
		{"factsOf", episodeFactsText(fromRecords), episodeFactsText(fromImage)},
		{"versionsOf", fromRecords.versionsOf, fromImage.versionsOf},
		{"entries", fromRecords.entries, fromImage.entries},
	} {
		if !reflect.DeepEqual(f.records, f.image) {
			t.Errorf("%s: from the image %v, from the records %v", f.name, f.image, f.records)
		}
	}
	// A write's document after the load.
	next := uint32(len(fromImage.docAt))
	v := appendEpisodeDoc(nil, &episodeDoc{seq: 999, at: 1, rec: 2, standsKnown: true})
	for _, ui := range []*userIndex{fromRecords, fromImage} {
		ui.setDoc(next, v)
		if got, ok := ui.docValue(next); !ok || !bytes.Equal(got, v) {
			t.Fatalf("the written document reads %x %v", got, ok)
		}
	}
	if !slices.Equal(fromRecords.docArena, fromImage.docArena) || !bytes.Equal(b, kept) {
		t.Fatal("a write after the load changed the image, or the two arenas differ")
	}
}

// TestLoadDocImageDamaged: an image cut anywhere is refused with
// ErrCorrupt; one with random bytes changed is refused or loaded, and
// what it loaded is read without a panic.
func TestLoadDocImageDamaged(t *testing.T) {
	t.Parallel()
	e, b, tmp := docImageUser(t)
	load := func(b []byte) (*userIndex, error) {
		ui := e.idx.newUserIndex(nil, nil, nil, nil)
		return ui, loadDocImage(b, e.db, "u", ui, tmp)
	}
	imagetest.Cuts(t, b, ErrCorrupt, load)
	refused := imagetest.Damage(t, rand.New(rand.NewPCG(3, 4)), b, 3000, ErrCorrupt, load, func(ui *userIndex) { readDocs(ui, tmp) })
	t.Logf("%d of 3000 damaged images refused (a changed byte of a value's text is a valid image)", refused)
	if refused < 300 {
		t.Fatalf("only %d of 3000 damaged images refused", refused)
	}
}

// readDocs reads every document ui holds, and which episodes are visible.
func readDocs(ui *userIndex, tmp *temporal.Index) {
	for doc := range ui.docAt {
		ui.docValue(uint32(doc))
	}
	ui.visibleEpisodes(1<<62, 1<<62, tmp.Current(time.Now()))
}

// FuzzLoadDocImage: whatever the bytes, loadDocImage refuses them with
// ErrCorrupt or loads what is then read without a panic.
func FuzzLoadDocImage(f *testing.F) {
	e, b, tmp := docImageUser(f)
	f.Add(b)
	f.Add(b[:docImageHead])
	f.Fuzz(func(t *testing.T, b []byte) {
		ui := e.idx.newUserIndex(nil, nil, nil, nil)
		if err := loadDocImage(b, e.db, "u", ui, tmp); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatal(err)
			}
			return
		}
		readDocs(ui, tmp)
	})
}
