package memor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/memor-db/memor/embed"
	"github.com/memor-db/memor/index/hnsw"
	"github.com/memor-db/memor/index/temporal"
	"github.com/memor-db/memor/internal/corpus"
	"github.com/memor-db/memor/internal/syncbuf"
	"github.com/memor-db/memor/kv"
)

// openImaging opens dir with index images on or off, from imageMinDocs
// documents (whatever their size), every query loading its user (a
// one-byte cache), one worker and a constant clock: two stores given the
// same operations then hold the same bytes and answer the same.
func openImaging(t *testing.T, dir string, images bool, minDocs int, lg *slog.Logger) *Engine {
	t.Helper()
	return openImagingWith(t, dir, images, minDocs, lg, hnsw.Options{}, nil)
}

// openImagingWith is openImaging with the vector indexes' options.
func openImagingWith(t *testing.T, dir string, images bool, minDocs int, lg *slog.Logger, vectors hnsw.Options, emb embed.Embedder) *Engine {
	t.Helper()
	tune := defaultTuning()
	tune.images, tune.imageMinDocs, tune.imageMinBytes = images, minDocs, 1
	tune.vectors = vectors
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	e, err := openTuned(dir, Options{NoSync: true, Workers: 1, IndexCacheBytes: 1, Logger: lg, Embedder: emb,
		Clock: func() time.Time { return at }}, tune)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// answers is what a reader sees of user: a query's results and the state,
// as JSON.
func answers(t *testing.T, e *Engine, user, q string) string {
	t.Helper()
	ctx := context.Background()
	rs, err := e.Query(ctx, user, q, QueryOptions{K: 20})
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.State(ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(struct {
		R []Result
		S []Fact
	}{rs, st})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestIndexImageMatchesRecords runs one random sequence of writes (facts,
// texts of the realistic corpus, ends, corrections, rebuilds, prunes,
// forgets, reopens) against two stores, one whose loads read index images
// (written after random steps) and one that reads the records, every
// query loading its user. The two must answer every query alike: an
// image serves what the records hold, and no write leaves one stale.
// With vectors=graph the users' vector indexes build their graph at 24
// vectors and every vector search walks it, so a graph of the default
// embedder's sparse vectors (and the dense ones of long texts) is imaged;
// with vectors=graph-dense every vector is dense (an embedding model's
// are), so the image's vectors, codes and lists are used where they lie
// until a write copies them out.
func TestIndexImageMatchesRecords(t *testing.T) {
	t.Parallel()
	graph := hnsw.Options{GraphAt: 24, ExactBelow: -1}
	for _, c := range []struct {
		name    string
		vectors hnsw.Options
		emb     embed.Embedder
	}{{"list", hnsw.Options{}, nil}, {"graph", graph, nil}, {"graph-dense", graph, denseEmbedder{embed.NewHash(0)}}} {
		t.Run("vectors="+c.name, func(t *testing.T) {
			t.Parallel()
			imageMatchesRecords(t, c.vectors, c.emb)
		})
	}
}

// denseEmbedder is the default embedder with every component moved off
// zero: vectors held dense, as an embedding model's are.
type denseEmbedder struct{ embed.Embedder }

func (d denseEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	vs, err := d.Embedder.Embed(ctx, texts)
	for _, v := range vs {
		for i := range v {
			v[i] += 0.01 * float32(1+i%7)
		}
	}
	return vs, err
}

func imageMatchesRecords(t *testing.T, vectors hnsw.Options, emb embed.Embedder) {
	texts := corpus.MustTexts()
	ctx := context.Background()
	dirA, dirB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	open := func() (*Engine, *Engine) {
		return openImagingWith(t, dirA, true, 8, nil, vectors, emb), openImagingWith(t, dirB, false, 8, nil, vectors, emb)
	}
	a, b := open()
	defer func() { a.Close(); b.Close() }()
	r := rand.New(rand.NewPCG(7, 19))
	users := []string{"alice", "bob", "東京 user"}
	places := []string{"Seattle", "Denver", "San Francisco", "東京", "Tel Aviv"}
	steps := 160
	if testing.Short() {
		steps = 60
	}
	both := func(name string, f func(e *Engine) error) {
		t.Helper()
		ea, eb := f(a), f(b)
		if (ea == nil) != (eb == nil) || ea != nil && ea.Error() != eb.Error() {
			t.Fatalf("%s: images %v, records %v", name, ea, eb)
		}
	}
	wrote := 0
	for step := range steps {
		u := users[r.IntN(len(users))]
		switch op := r.IntN(20); {
		case op < 7:
			var fs []FactInput
			for i := range 1 + r.IntN(8) {
				f := FactInput{Subject: "user", Predicate: "lives_in", Object: places[r.IntN(len(places))],
					ValidFrom: time.Date(2024, 1, 1+step, i, 0, 0, 0, time.UTC)}
				switch r.IntN(3) {
				case 1:
					f.Predicate, f.Object = "works_at", fmt.Sprintf("Company %d", r.IntN(6))
				case 2:
					f.Subject, f.Predicate, f.Object = fmt.Sprintf("friend %d", r.IntN(4)), "likes", fmt.Sprintf("%s %d", texts[r.IntN(len(texts))].Name, r.IntN(9))
				}
				fs = append(fs, f)
			}
			both("AssertBatch", func(e *Engine) error { _, err := e.AssertBatch(ctx, u, fs); return err })
		case op < 13:
			text := texts[r.IntN(len(texts))].Body
			if len(text) > 3000 {
				text = cutText(text, 3000)
			}
			both("Add", func(e *Engine) error {
				if _, err := e.Add(ctx, u, text); err != nil {
					return err
				}
				return e.Flush(ctx, u)
			})
		case op < 15:
			both("End", func(e *Engine) error {
				_, err := e.End(ctx, u, EndInput{Subject: "user", Predicate: "lives_in", At: time.Date(2024, 6, 1+step, 0, 0, 0, 0, time.UTC)})
				return err
			})
		case op < 16:
			st, err := a.State(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			if len(st) > 0 {
				id := st[r.IntN(len(st))].ID
				both("Correct", func(e *Engine) error { return e.Correct(ctx, u, id) })
			}
		case op < 17:
			both("Rebuild", func(e *Engine) error { return e.Rebuild(ctx, u) })
		case op < 18:
			both("Prune", func(e *Engine) error {
				_, err := e.Prune(ctx, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
				return err
			})
		case op < 19 && r.IntN(3) == 0:
			both("Forget", func(e *Engine) error { return e.Forget(ctx, u) })
		default:
			both("reopen", func(e *Engine) error { return nil })
			a.Close()
			b.Close()
			a, b = open()
		}
		if r.IntN(3) == 0 {
			w := users[r.IntN(len(users))]
			if err := a.writeImage(ctx, w, false); err != nil {
				t.Fatal(err)
			}
			if _, err := a.db.Get(kv.ImageHead(w)); err == nil {
				wrote++
			}
		}
		for _, w := range users {
			q := "where do I live and work?"
			if r.IntN(2) == 0 {
				q = cutText(texts[r.IntN(len(texts))].Body, 80)
			}
			if ga, gb := answers(t, a, w, q), answers(t, b, w, q); ga != gb {
				t.Fatalf("step %d: %s answers %q differently with images:\n%s\nfrom the records:\n%s", step, w, q, ga, gb)
			}
		}
	}
	// The background writer's images add to the loads from images as
	// timing allows (24 alone, 19 beside the package's other tests).
	if loads := a.idx.imageLoads.Load(); wrote < 10 || loads < 12 {
		t.Fatalf("%d images written and %d loads read one: the sequence did not exercise them", wrote, loads)
	}
	if vectors.GraphAt > 0 {
		// An image of a vector index with its graph (flag 1 after the
		// version, index/hnsw/image.go) was written and read.
		graphs := 0
		for _, u := range users {
			if err := a.writeImage(ctx, u, false); err != nil {
				t.Fatal(err)
			}
			img, err := openImage(a.db, u)
			if err != nil || img == nil {
				continue
			}
			if v, err := img.blob(ctx, kv.SubVector); err == nil && len(v) > 1 && v[1]&1 != 0 {
				graphs++
			}
		}
		if graphs == 0 {
			t.Fatal("no user's image holds a vector graph")
		}
	}
	if err := a.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestIndexImageLifecycle: a user's first load after a reopen reads its
// records and has its image written in the background (by Close at the
// latest); the next reads it, whose parts are whole and whose document
// map holds every record the store holds; a write deletes the image in
// its own commit.
func TestIndexImageLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "db")
	e := openImaging(t, dir, true, 32, nil)
	fs := entityFacts(300)
	if _, err := e.AssertBatch(ctx, "u", fs); err != nil {
		t.Fatal(err)
	}
	for _, text := range corpus.MustTexts()[:6] {
		if _, err := e.Add(ctx, "u", cutText(text.Body, 4000)); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Flush(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	hasImage := func(e *Engine) bool {
		_, err := e.db.Get(kv.ImageHead("u"))
		if err != nil && !errors.Is(err, kv.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	want := answers(t, e, "u", "thing 7")
	e.Close()

	e = openImaging(t, dir, true, 32, nil)
	if got := answers(t, e, "u", "thing 7"); got != want {
		t.Fatalf("after a reopen:\n%s\nwant\n%s", got, want)
	}
	e.Close() // writes the image the load asked for
	e = openImaging(t, dir, true, 32, nil)
	defer func() { e.Close() }()
	if !hasImage(e) {
		t.Fatal("no image after a load and a Close")
	}
	img, err := openImage(e.db, "u")
	if err != nil || img == nil {
		t.Fatalf("openImage: %v %v", img, err)
	}
	// A projection (a cluster's snapshot) leaves the image out.
	if _, err := e.DumpUser(ctx, "u", func(k, _ []byte) error {
		if bytes.HasPrefix(k, kv.UserKey("u", kv.SubImage)) {
			return fmt.Errorf("DumpUser gave image key %q", k)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Every part is whole, and the document map's holds every record of
	// the store's, as a load from the records holds it.
	for _, sub := range kv.ImagedSubs() {
		if _, err := img.blob(ctx, sub); err != nil {
			t.Fatalf("%c: %v", byte(sub), err)
		}
	}
	tb, err := img.blob(ctx, kv.SubTemporal)
	if err != nil {
		t.Fatal(err)
	}
	tmp, err := temporal.LoadImage(tb, kv.UserKey("u", kv.SubTemporal))
	if err != nil {
		t.Fatal(err)
	}
	db, err := img.blob(ctx, kv.SubDoc)
	if err != nil {
		t.Fatal(err)
	}
	fromImage := e.idx.newUserIndex(nil, nil, nil, nil)
	if err := loadDocImage(db, e.db, "u", fromImage, tmp); err != nil {
		t.Fatal(err)
	}
	records := 0
	docs := kv.UserKey("u", kv.SubDoc)
	if err := e.db.Scan(ctx, docs, func(k, v []byte) error {
		doc := kv.NewDecoder(k[len(docs):]).Uint32()
		if got, ok := fromImage.docValue(doc); !ok || !bytes.Equal(got, v) {
			return fmt.Errorf("document %d: the image holds %x (%v), the store %x", doc, got, ok, v)
		}
		records++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, at := range fromImage.docAt {
		if at != 0 {
			held++
		}
	}
	if records < 300 || held != records {
		t.Fatalf("the image holds %d documents, the store %d", held, records)
	}
	if got := answers(t, e, "u", "thing 7"); got != want {
		t.Fatalf("from the image:\n%s\nwant\n%s", got, want)
	}
	if n := e.idx.imageLoads.Load(); n == 0 {
		t.Fatal("the load after the image was written did not read it")
	}
	if _, err := e.Assert(ctx, "u", FactInput{Subject: "user", Predicate: "lives_in", Object: "Lisbon"}); err != nil {
		t.Fatal(err)
	}
	if hasImage(e) {
		t.Fatal("a write kept the image")
	}
	if got := answers(t, e, "u", "Lisbon"); !strings.Contains(got, "Lisbon") {
		t.Fatalf("the write is not served: %s", got)
	}
}

// TestIndexImageDamaged: an image whose chunks disagree with its head (a
// chunk cut short or missing), whose index image its LoadImage refuses,
// or whose document map record the loader refuses, of every imaged
// keyspace, fails no load: the load reads the records, says so in the
// log, and the image is written anew.
func TestIndexImageDamaged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		sub    kv.Sub
		damage string
	}{{kv.SubBM25, "truncated"}, {kv.SubBM25, "missing"}, {kv.SubBM25, "garbled"},
		{kv.SubVector, "truncated"}, {kv.SubVector, "missing"}, {kv.SubVector, "garbled"},
		{kv.SubTemporal, "truncated"}, {kv.SubTemporal, "missing"}, {kv.SubTemporal, "garbled"},
		{kv.SubGraph, "truncated"}, {kv.SubGraph, "missing"}, {kv.SubGraph, "garbled"},
		{kv.SubDoc, "truncated"}, {kv.SubDoc, "missing"}, {kv.SubDoc, "garbled"}} {
		damage := c.damage
		t.Run(fmt.Sprintf("%c/%s", byte(c.sub), damage), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "db")
			e := openImaging(t, dir, true, 32, nil)
			var fs []FactInput
			for i := range 100 {
				fs = append(fs, FactInput{Subject: "user", Predicate: "likes", Object: fmt.Sprintf("thing %d", i)})
			}
			if _, err := e.AssertBatch(ctx, "u", fs); err != nil {
				t.Fatal(err)
			}
			want := answers(t, e, "u", "thing 7")
			if err := e.writeImage(ctx, "u", false); err != nil {
				t.Fatal(err)
			}
			chunk := imageChunkKey(kv.ImageChunks("u"), c.sub, 0)
			v, err := e.db.Get(chunk)
			if err != nil {
				t.Fatal(err)
			}
			b := e.db.NewBatch()
			switch {
			case damage == "truncated":
				err = b.Set(chunk, v[:len(v)-3])
			case damage == "missing":
				err = b.Delete(chunk)
			case c.sub == kv.SubBM25:
				// The index's image, its length right, broken in the
				// middle: bm25.LoadImage refuses it.
				g := bytes.Clone(v)
				for i := len(g) / 2; i < len(g)/2+8; i++ {
					g[i] = 0xff
				}
				err = b.Set(chunk, g)
			default:
				// The index's image, its length right, of a version its
				// LoadImage does not know.
				g := bytes.Clone(v)
				g[0] ^= 0xff
				err = b.Set(chunk, g)
			}
			if err != nil || b.Commit() != nil {
				t.Fatal(err)
			}
			b.Close()
			e.Close()

			var logged syncbuf.Buffer
			e = openImaging(t, dir, true, 32, slog.New(slog.NewTextHandler(&logged, nil)))
			if got := answers(t, e, "u", "thing 7"); got != want {
				t.Fatalf("with a damaged image:\n%s\nwant\n%s", got, want)
			}
			if !strings.Contains(logged.String(), "index image is damaged") {
				t.Errorf("nothing logged: %q", logged.String())
			}
			e.Close()
			e = openImaging(t, dir, true, 32, nil)
			defer e.Close()
			img, err := openImage(e.db, "u")
			if err != nil || img == nil {
				t.Fatalf("no image written anew: %v", err)
			}
			for _, sub := range kv.ImagedSubs() {
				if _, err = img.blob(ctx, sub); err != nil {
					t.Fatalf("the image written anew, %c: %v", byte(sub), err)
				}
			}
			if got := answers(t, e, "u", "thing 7"); got != want || e.idx.imageLoads.Load() == 0 {
				t.Fatalf("from the image written anew (%d image loads):\n%s\nwant\n%s", e.idx.imageLoads.Load(), got, want)
			}
		})
	}
}

// entityFacts is n facts about entities of 30 facts each, a minute apart.
func entityFacts(n int) []FactInput {
	var fs []FactInput
	for i := range n {
		fs = append(fs, FactInput{Subject: fmt.Sprintf("entity %d", i/30), Predicate: "likes",
			Object: fmt.Sprintf("thing %d", i), ValidFrom: time.Date(2024, 1, 1, 0, i, 0, 0, time.UTC)})
	}
	return fs
}

// cutText returns at most n bytes of s, cut at a rune boundary.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// TestIndexImageByBytes: whether a user's image is written depends on
// what a load from its records reads, not on its documents: a
// conversation of 80 long messages gets one (it reads more than
// hundreds of short facts), a user of 150 short facts does not; and past
// imageMaxBytes none is asked for, or written.
func TestIndexImageByBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "db")
	tune := defaultTuning()
	open := func() *Engine {
		e, err := openTuned(dir, Options{NoSync: true, IndexCacheBytes: 1, NoIndexWarmup: true}, tune)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	e := open()
	texts := corpus.MustTexts()
	talk := 0
	for i := 0; talk < 80; i++ {
		text := texts[i%len(texts)].Body
		if len(text) < 2000 {
			continue
		}
		if _, err := e.Add(ctx, "talk", fmt.Sprintf("%d. %s", i, cutText(text, 6000))); err != nil {
			t.Fatal(err)
		}
		talk++
	}
	var fs []FactInput
	for i := range 150 {
		fs = append(fs, FactInput{Subject: "user", Predicate: "likes", Object: fmt.Sprintf("thing %d", i),
			ValidFrom: time.Date(2024, 1, 1, 0, i, 0, 0, time.UTC)})
	}
	if _, err := e.AssertBatch(ctx, "facts", fs); err != nil {
		t.Fatal(err)
	}
	if err := e.Flush(ctx, "talk"); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e = open()
	weights := map[string]int64{}
	for _, user := range []string{"talk", "facts"} {
		m, err := loadMeta(e.db, user)
		if err != nil {
			t.Fatal(err)
		}
		cr := &countingReader{Reader: e.db}
		if _, err := e.idx.loadFrom(ctx, e.db, cr, nil, user, m); err != nil {
			t.Fatal(err)
		}
		weights[user] = cr.n.Load()
		if _, err := e.Query(ctx, user, "thing 7", QueryOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d documents, a load reads %d bytes", user, m.Doc, weights[user])
	}
	if weights["talk"] < defaultImageMinBytes || weights["facts"] >= defaultImageMinBytes {
		t.Fatalf("loads read %v bytes: the scenario does not straddle %d", weights, defaultImageMinBytes)
	}
	e.Close() // writes the images the loads asked for
	e = open()
	hasImage := func(want map[string]bool) {
		t.Helper()
		for user, want := range want {
			_, err := e.db.Get(kv.ImageHead(user))
			if got := err == nil; got != want {
				t.Errorf("%s: image %v (%v), want %v", user, got, err, want)
			}
		}
	}
	hasImage(map[string]bool{"talk": true, "facts": false})
	// Past imageMaxBytes no image is asked for (the heavier user here),
	// and the writer refuses an image over three times it.
	b := e.db.NewBatch()
	if err := b.Delete(kv.ImageHead("talk")); err != nil || b.Commit() != nil {
		t.Fatal(err)
	}
	b.Close()
	e.Close()
	tune.imageMinBytes, tune.imageMaxBytes = 1, int(weights["talk"]-1)
	e = open()
	for _, user := range []string{"talk", "facts"} {
		if _, err := e.Query(ctx, user, "thing 7", QueryOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.Close()
	e = open()
	hasImage(map[string]bool{"talk": false, "facts": true})
	e.Close()
	tune.imageMaxBytes = 1000
	e = open()
	defer e.Close()
	if err := e.writeImage(ctx, "talk", true); err != nil {
		t.Fatal(err)
	}
	hasImage(map[string]bool{"talk": false})
}

// TestIndexImageBuiltOutsideLock: an image is built without holding its
// user's lock, so a write of the user made while it is built does not
// wait for it; the image it was building is then dropped (it copies the
// records before the write), as it is after a Forget, which must leave
// nothing of the user. With no write between, the image is committed and
// a load reads it.
func TestIndexImageBuiltOutsideLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "db")
	// Images off: no load asks for one, so only this test's calls write
	// them.
	e := openImaging(t, dir, false, 32, nil)
	fs := entityFacts(300)
	for _, u := range []string{"u", "gone"} {
		if _, err := e.AssertBatch(ctx, u, fs); err != nil {
			t.Fatal(err)
		}
	}
	head := func(user string) []byte {
		v, err := e.db.Get(kv.ImageHead(user))
		if err != nil && !errors.Is(err, kv.ErrNotFound) {
			t.Fatal(err)
		}
		return v
	}
	// during runs fn while user's image is being built, and fails if fn
	// waits for the build.
	during := func(fn func() error) {
		e.hookImageBuilt = func(user string) {
			if v := head(user); len(v) == 0 || v[0] != imageClaimVersion {
				t.Errorf("while built, the head is %x, not a claim", v)
			}
			done := make(chan error, 1)
			go func() { done <- fn() }()
			select {
			case err := <-done:
				if err != nil {
					t.Error(err)
				}
			case <-time.After(5 * time.Second):
				t.Error("a write of the user waited for its image to be built")
				go func() { <-done }() // it goes on once the build lets go
			}
		}
		t.Cleanup(func() { e.hookImageBuilt = nil })
	}

	during(func() error {
		_, err := e.Assert(ctx, "u", FactInput{Subject: "user", Predicate: "lives_in", Object: "Lisbon"})
		return err
	})
	if err := e.writeImage(ctx, "u", false); err != nil {
		t.Fatal(err)
	}
	if v := head("u"); v != nil {
		t.Fatalf("an image built before a write was committed after it: head %x", v)
	}

	during(func() error { return e.Forget(ctx, "gone") })
	if err := e.writeImage(ctx, "gone", false); err != nil {
		t.Fatal(err)
	}
	if err := e.db.Scan(ctx, kv.UserKey("gone", 0)[:len(kv.UserKey("gone", 0))-1], func(k, _ []byte) error {
		return fmt.Errorf("a forgotten user's key %q is left", k)
	}); err != nil {
		t.Fatal(err)
	}

	e.hookImageBuilt = nil
	want := answers(t, e, "u", "Lisbon thing 7")
	if err := e.writeImage(ctx, "u", false); err != nil {
		t.Fatal(err)
	}
	if v := head("u"); len(v) == 0 || v[0] != imageVersion {
		t.Fatalf("no image written with no write between: head %x", v)
	}
	e.Close()
	e = openImaging(t, dir, true, 32, nil)
	defer func() { e.Close() }()
	if got := answers(t, e, "u", "Lisbon thing 7"); got != want {
		t.Fatalf("from the image:\n%s\nwant\n%s", got, want)
	}
	if n := e.idx.imageLoads.Load(); n == 0 {
		t.Fatal("the load did not read the image")
	}
}

// openClosing opens dir without the warm-up, Close spending at most
// budget on images.
func openClosing(t *testing.T, dir string, budget time.Duration) *Engine {
	t.Helper()
	tune := defaultTuning()
	tune.closeImages = budget
	e, err := openTuned(dir, Options{NoSync: true, NoIndexWarmup: true}, tune)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// userHasImage reports whether user has an index image in e's store.
func userHasImage(t *testing.T, e *Engine, user string) bool {
	t.Helper()
	img, err := openImage(e.db, user)
	if err != nil {
		t.Fatal(err)
	}
	return img != nil
}

// TestCloseRewritesWrittenImages: a user written after a load that found
// (or asked for) an image gets a new image at Close, so the next
// session's first query reads it, not the records; a user too light for
// one gets none; a forgotten user none; Close's budget bounds the work.
func TestCloseRewritesWrittenImages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		budget time.Duration
	}{{"budget", defaultCloseImages}, {"none", 0}} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "db")
			open := func() *Engine { return openClosing(t, dir, c.budget) }
			e := open()
			for _, user := range []string{"heavy", "forgotten"} {
				if _, err := e.AssertBatch(ctx, user, entityFacts(400)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := e.AssertBatch(ctx, "light", entityFacts(40)); err != nil {
				t.Fatal(err)
			}
			e.Close()
			// A session that loads every user from its records (images
			// asked for the heavy ones) and then writes each.
			e = open()
			for _, user := range []string{"heavy", "forgotten", "light"} {
				if _, err := e.Query(ctx, user, "thing 7", QueryOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if loads := e.idx.imageLoads.Load(); loads != 0 {
				t.Fatalf("%d loads from an image in the first session", loads)
			}
			// The images those loads asked for are written in the
			// background: the writes come after them.
			for deadline := time.Now().Add(10 * time.Second); !userHasImage(t, e, "heavy"); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the image the heavy user's load asked for was not written")
				}
			}
			for _, user := range []string{"heavy", "forgotten", "light"} {
				if _, err := e.Assert(ctx, user, FactInput{Subject: "entity 2", Predicate: "likes", Object: "thing new",
					ValidFrom: time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)}); err != nil {
					t.Fatal(err)
				}
			}
			if userHasImage(t, e, "heavy") {
				t.Fatal("the heavy user's image outlived a write")
			}
			if err := e.Forget(ctx, "forgotten"); err != nil {
				t.Fatal(err)
			}
			e.Close()
			e = open()
			defer e.Close()
			if got, want := userHasImage(t, e, "heavy"), c.budget > 0; got != want {
				t.Fatalf("the heavy user has an image: %v, want %v", got, want)
			}
			if userHasImage(t, e, "light") || userHasImage(t, e, "forgotten") {
				t.Fatal("an image for a user too light for one, or forgotten")
			}
			rs, err := e.Query(ctx, "heavy", "thing new", QueryOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) == 0 || rs[0].Fact == nil || rs[0].Fact.Object != "thing new" {
				t.Fatalf("the write before Close is not served: %v", resultLines(rs))
			}
			if got, want := e.idx.imageLoads.Load(), map[bool]uint64{true: 1, false: 0}[c.budget > 0]; got != want {
				t.Fatalf("%d loads from an image, want %d", got, want)
			}
			left := 0
			if err := e.db.Scan(ctx, kv.UserRoot("forgotten"), func(_, _ []byte) error { left++; return nil }); err != nil || left != 0 {
				t.Fatalf("%d keys of the forgotten user (%v)", left, err)
			}
		})
	}
}

// TestCloseImagesUsersGrownInSession: a user a session created and made
// heavy with its writes (realistic chat turns, each an Add applied by the
// ingester) has an image after Close, as one loaded heavy and written
// does, so that the next session's first query loads it from the image
// and serves what the session wrote; a user its writes left light has
// none. With Close's budget for images at 0, neither has one.
func TestCloseImagesUsersGrownInSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	texts := corpus.MustTexts()
	for _, c := range []struct {
		name   string
		budget time.Duration
	}{{"budget", defaultCloseImages}, {"none", 0}} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "db")
			open := func() *Engine { return openClosing(t, dir, c.budget) }
			e := open()
			r := rand.New(rand.NewPCG(5, 6))
			for i := 0; i < 120; i++ {
				text := texts[i%len(texts)].Body
				if len(text) > 2000 {
					text = text[:2000]
				}
				if !utf8.ValidString(text) {
					text = strings.ToValidUTF8(text, "?")
				}
				opts := []AddOption{At(time.Date(2025, 1, 1, 0, i, 0, 0, time.UTC))}
				if i%2 == 1 {
					opts = append(opts, Speaker("assistant"))
				}
				if _, err := e.Add(ctx, "grown", text, opts...); err != nil && !errors.Is(err, ErrInvalidText) {
					t.Fatal(err)
				}
				if i < 3 {
					if _, err := e.Add(ctx, "light", corpus.Words(r, 12)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := e.Add(ctx, "grown", "I moved to Lisbon last week."); err != nil {
				t.Fatal(err)
			}
			for _, user := range []string{"grown", "light"} {
				if err := e.Flush(ctx, user); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			e = open()
			defer e.Close()
			if got, want := userHasImage(t, e, "grown"), c.budget > 0; got != want {
				t.Fatalf("the grown user has an image: %v, want %v", got, want)
			}
			if userHasImage(t, e, "light") {
				t.Fatal("an image for a user too light for one")
			}
			rs, err := e.Query(ctx, "grown", "where do I live?", QueryOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(rs, func(r Result) bool { return r.Fact != nil && r.Fact.Object == "Lisbon" }) {
				t.Fatalf("the session's last write is not served: %v", resultLines(rs))
			}
			if got, want := e.idx.imageLoads.Load(), map[bool]uint64{true: 1, false: 0}[c.budget > 0]; got != want {
				t.Fatalf("%d loads from an image, want %d", got, want)
			}
		})
	}
}

// TestImageBlobRanges: a part of many chunks, read in ranges at once from
// the store (imageReader.blob), is the part as written, and read so
// through a snapshot (one scan); a chunk missing, short, long or beyond
// the head's in any range is damage, whichever range meets it.
func TestImageBlobRanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := kv.Open(filepath.Join(t.TempDir(), "db"), kv.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const user = "u"
	subs := kv.ImagedSubs()
	cp := kv.ImageChunks(user)
	r := rand.New(rand.NewPCG(3, 4))
	// write sets the user's image to parts of the given sizes, random
	// bytes cut into chunks as writeImage cuts them, and returns them.
	write := func(sizes []int) [][]byte {
		b := db.NewBatch()
		defer b.Close()
		if err := b.DeleteRange(cp, kv.PrefixEnd(cp)); err != nil {
			t.Fatal(err)
		}
		h := imageHead{chunks: make([]uint64, len(subs)), bytes: make([]uint64, len(subs))}
		parts := make([][]byte, len(subs))
		for i, sub := range subs {
			p := make([]byte, sizes[i])
			for j := range p {
				p[j] = byte(r.Uint32())
			}
			parts[i] = p
			h.bytes[i] = uint64(len(p))
			for len(p) > 0 {
				n := min(len(p), imageChunkBytes)
				if err := b.Set(imageChunkKey(cp, sub, h.chunks[i]), p[:n]); err != nil {
					t.Fatal(err)
				}
				h.chunks[i]++
				p = p[n:]
			}
		}
		if err := b.Set(kv.ImageHead(user), appendImageHead(nil, &h)); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
		return parts
	}
	read := func(r kv.Reader, sub kv.Sub) ([]byte, error) {
		img, err := openImage(r, user)
		if err != nil || img == nil {
			t.Fatalf("no image: %v", err)
		}
		return img.blob(ctx, sub)
	}
	big := 5*blobRangeChunks*imageChunkBytes + 12345 // six ranges, the last short
	sizes := []int{big, 3 * imageChunkBytes, 2*blobRangeChunks*imageChunkBytes - 1, 0, imageChunkBytes}
	parts := write(sizes)
	snap := db.Snapshot()
	for i, sub := range subs {
		for _, via := range []kv.Reader{db, snap} {
			got, err := read(via, sub)
			if err != nil || !bytes.Equal(got, parts[i]) {
				t.Fatalf("%c (%d bytes) via %T: %d bytes read, equal %v, %v", byte(sub), sizes[i], via, len(got), bytes.Equal(got, parts[i]), err)
			}
		}
	}
	snap.Close()
	sub := subs[0]
	last := uint64(big / imageChunkBytes)
	for _, c := range []struct {
		name  string
		chunk uint64
		value func(v []byte) []byte // nil: deleted
	}{
		{"first missing", 0, nil},
		{"middle missing", 2*blobRangeChunks + 3, nil},
		{"range end missing", 3*blobRangeChunks - 1, nil},
		{"last missing", last, nil},
		{"middle short", blobRangeChunks + 1, func(v []byte) []byte { return v[:len(v)-1] }},
		{"middle long", 4 * blobRangeChunks, func(v []byte) []byte { return append(bytes.Clone(v), 0) }},
		{"last long", last, func(v []byte) []byte { return append(bytes.Clone(v), 0) }},
		{"one beyond", last + 1, func([]byte) []byte { return []byte{1} }},
	} {
		write(sizes)
		key := imageChunkKey(cp, sub, c.chunk)
		v, err := db.Get(key)
		if err != nil && !errors.Is(err, kv.ErrNotFound) {
			t.Fatal(err)
		}
		b := db.NewBatch()
		if c.value == nil {
			err = b.Delete(key)
		} else {
			err = b.Set(key, c.value(v))
		}
		if err != nil || b.Commit() != nil {
			t.Fatal(err)
		}
		b.Close()
		if got, err := read(db, sub); !errors.Is(err, errImageDamaged) {
			t.Errorf("%s: %d bytes read, %v; want errImageDamaged", c.name, len(got), err)
		}
	}
}
