package memor_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/embed"
)

// failingHash is Hash of dimension dim that counts the texts it was
// asked to embed and can fail after a budget of calls.
type failingHash struct {
	*embed.Hash
	texts int
	calls int
	fail  int // fail the call after this many (0: never)
}

func (c *failingHash) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.calls++
	if c.fail > 0 && c.calls > c.fail {
		return nil, errors.New("embedder down")
	}
	c.texts += len(texts)
	return c.Hash.Embed(ctx, texts)
}

func seedUsers(t *testing.T, dir string, o memor.Options, users ...string) {
	t.Helper()
	e, err := memor.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, u := range users {
		for _, s := range []string{"I live in Lisbon.", "I work at Acme.", "We talked about sailing boats all evening."} {
			if _, err := e.Add(ctx, u, s, memor.Sync()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestEmbedderFingerprintRefusesMix(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "db")
	seedUsers(t, dir, memor.Options{}, "ana")
	e, err := memor.Open(dir, memor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := e.StoreEmbedder(context.Background())
	e.Close()
	if err != nil || f != (embed.Fingerprint{Name: "hash", Dim: embed.DefaultHashDim}) {
		t.Fatalf("StoreEmbedder = %+v, %v", f, err)
	}
	_, err = memor.Open(dir, memor.Options{Embedder: embed.NewHash(128)})
	var me *memor.EmbedderMismatchError
	if !errors.Is(err, memor.ErrEmbedderMismatch) || !errors.As(err, &me) {
		t.Fatalf("open with another embedder: %v, want ErrEmbedderMismatch", err)
	}
	if me.Stored.Dim != embed.DefaultHashDim || me.Current.Dim != 128 ||
		!strings.Contains(err.Error(), "384") || !strings.Contains(err.Error(), "128") {
		t.Fatalf("error does not name both embedders: %v", err)
	}
}

func TestReembedResumes(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "db")
	users := []string{"ana", "bo", "cy"}
	seedUsers(t, dir, memor.Options{}, users...)
	ctx := context.Background()

	// The new embedder fails after its first call: the first user moves,
	// the second fails, like a kill part way.
	next := &failingHash{Hash: embed.NewHash(128), fail: 1}
	var moved []string
	err := memor.Reembed(ctx, dir, memor.Options{Embedder: next}, func(u string, done, total int) { moved = append(moved, u) })
	if err == nil || len(moved) != 1 {
		t.Fatalf("interrupted reembed: err %v, moved %v", err, moved)
	}
	for _, o := range []memor.Options{{}, {Embedder: embed.NewHash(128)}} {
		if _, err := memor.Open(dir, o); !errors.Is(err, memor.ErrReembedUnfinished) {
			t.Fatalf("open during reembed: %v, want ErrReembedUnfinished", err)
		}
	}
	// Resumed: the user already moved is not embedded again.
	next = &failingHash{Hash: embed.NewHash(128)}
	moved = nil
	if err := memor.Reembed(ctx, dir, memor.Options{Embedder: next}, func(u string, done, total int) { moved = append(moved, u) }); err != nil {
		t.Fatal(err)
	}
	if len(moved) != 3 || next.calls != 2 {
		t.Fatalf("resumed reembed: progress %v, %d embed calls (want 2: the two users left)", moved, next.calls)
	}
	// Each user has 2 versions and 3 episodes with vectors (the text ones).
	if next.texts == 0 {
		t.Fatal("nothing embedded")
	}
	if _, err := memor.Open(dir, memor.Options{}); !errors.Is(err, memor.ErrEmbedderMismatch) {
		t.Fatalf("open with the old embedder after reembed: %v", err)
	}
	e, err := memor.Open(dir, memor.Options{Embedder: embed.NewHash(128)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.Check(ctx); err != nil {
		t.Fatalf("check after reembed: %v", err)
	}
	f, _ := e.StoreEmbedder(ctx)
	if f.Dim != 128 {
		t.Fatalf("store embedder after reembed: %+v", f)
	}
	for _, u := range users {
		rs, err := e.Query(ctx, u, "sailing boats", memor.QueryOptions{})
		if err != nil || len(rs) == 0 {
			t.Fatalf("query %s after reembed: %v, %v", u, rs, err)
		}
	}
	if _, err := e.Add(ctx, "ana", "I live in Porto now.", memor.Sync()); err != nil {
		t.Fatal(err)
	}
	if err := e.Check(ctx); err != nil {
		t.Fatalf("check after a write: %v", err)
	}
}
