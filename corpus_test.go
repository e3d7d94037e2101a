package memor_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/index/bm25"
	"github.com/memor-db/memor/internal/corpus"
)

// cut returns at most n bytes of s, cut at a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// corpusFacts makes n facts whose objects, contexts and quotes are pieces of
// text: realistic strings in every field a caller fills.
func corpusFacts(text string, n int) []memor.FactInput {
	words := strings.Fields(text)
	if len(words) == 0 {
		words = []string{text}
	}
	preds := []string{"likes", "lives_in", "works_at", "note", "mentioned"}
	fs := make([]memor.FactInput, n)
	for i := range fs {
		w := words[i%len(words)]
		obj := strings.Join(words[i%len(words):min(len(words), i%len(words)+1+i%7)], " ")
		if strings.TrimSpace(obj) == "" {
			obj = "x"
		}
		fs[i] = memor.FactInput{Subject: "user", Predicate: preds[i%len(preds)], Object: cut(obj, 300) + fmt.Sprint(" ", i),
			Context: cut(w, 40), Quote: cut(text, 1000), ValidFrom: day(i % 90)}
	}
	return fs
}

// searchable reports whether Query can find text by its words: some word
// survives BM25's tokenizer.
func searchable(text string) bool { return len(bm25.Tokenize(text)) > 0 }

// TestCorpusEveryWritePath runs every text of testdata/texts through every
// write path — Add (queued and Sync), Assert, AssertBatch below and above
// the import threshold — on a fresh store and on one already loaded with
// other users, then Query, Check, Rebuild, reopen, Query and Check again.
// Nothing may panic, fail or be lost: every text episode is applied, found
// by Query from its own words, and kept byte for byte.
func TestCorpusEveryWritePath(t *testing.T) {
	t.Parallel()
	texts := corpus.MustTexts()
	if len(texts) < 20 {
		t.Fatalf("corpus holds %d texts", len(texts))
	}
	for _, loaded := range []bool{false, true} {
		name := "fresh"
		if loaded {
			name = "loaded"
			if testing.Short() {
				continue // -short (the race run): the fresh store only
			}
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join(t.TempDir(), "db")
			e, err := memor.Open(dir, memor.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { e.Close() }()
			r := rand.New(rand.NewPCG(7, 7))
			if loaded {
				// Other users first: a bulk import, episodes of random words
				// and corpus texts, so the texts below land among loaded
				// indexes and non-empty keyspaces.
				for u := range 3 {
					user := fmt.Sprintf("other-%d", u)
					if _, err := e.AssertBatch(ctx, user, corpusFacts(corpus.Words(r, 400), 300)); err != nil {
						t.Fatal(err)
					}
					for range 20 {
						_, text := corpus.Pick(r)
						if _, err := e.Add(ctx, user, text); err != nil {
							t.Fatal(err)
						}
					}
				}
				if _, err := e.Add(ctx, "shared", texts[0].Body, memor.Sync()); err != nil {
					t.Fatal(err)
				}
			}
			var users []string
			for i, tx := range texts {
				user := "t-" + tx.Name
				imp := "imp-" + tx.Name
				users = append(users, user, imp)
				if _, err := e.Add(ctx, user, tx.Body, memor.At(day(i))); err != nil {
					t.Fatalf("%s: Add: %v", tx.Name, err)
				}
				if _, err := e.Add(ctx, user, tx.Body, memor.At(day(i+1)), memor.Sync()); err != nil {
					t.Fatalf("%s: Add Sync: %v", tx.Name, err)
				}
				if _, err := e.Add(ctx, "shared", tx.Body); err != nil {
					t.Fatalf("%s: Add to shared: %v", tx.Name, err)
				}
				fs := corpusFacts(tx.Body, 300)
				if _, err := e.Assert(ctx, user, fs[0]); err != nil {
					t.Fatalf("%s: Assert: %v", tx.Name, err)
				}
				if _, err := e.AssertBatch(ctx, user, fs[1:12]); err != nil {
					t.Fatalf("%s: AssertBatch (small): %v", tx.Name, err)
				}
				// A new user's batch of 300: the import path.
				if _, err := e.AssertBatch(ctx, imp, fs); err != nil {
					t.Fatalf("%s: AssertBatch (import): %v", tx.Name, err)
				}
				if _, err := e.Add(ctx, imp, tx.Body, memor.Sync()); err != nil {
					t.Fatalf("%s: Add after import: %v", tx.Name, err)
				}
			}
			users = append(users, "shared")
			for _, u := range users {
				if err := e.Flush(ctx, u); err != nil {
					t.Fatal(err)
				}
				f, err := e.Freshness(ctx, u)
				if err != nil {
					t.Fatal(err)
				}
				if f.Failed != 0 || f.Pending != 0 || f.Applied != f.Latest {
					t.Fatalf("%s: freshness %+v", u, f)
				}
			}
			check := func(stage string) {
				t.Helper()
				if err := e.Check(ctx); err != nil {
					t.Fatalf("%s: Check: %v", stage, err)
				}
				for _, tx := range texts {
					u := "t-" + tx.Name
					eps, err := e.Episodes(ctx, u)
					if err != nil {
						t.Fatal(err)
					}
					if len(eps) != 4 || eps[0].Text != tx.Body || eps[1].Text != tx.Body {
						t.Fatalf("%s: %s: episodes not kept byte for byte (%d)", stage, tx.Name, len(eps))
					}
					// The whole text as the question, and a piece of it.
					for _, q := range []string{tx.Body, cut(tx.Body, 200)} {
						res, err := e.Query(ctx, u, q, memor.QueryOptions{K: 20})
						if err != nil {
							t.Fatalf("%s: %s: Query: %v", stage, tx.Name, err)
						}
						if !searchable(q) {
							continue
						}
						// The episode, or a fact learned from it (the first two
						// episodes are the text's).
						found := slices.ContainsFunc(res, func(r memor.Result) bool {
							return r.Episode != nil && r.Episode.Text == tx.Body || r.Fact != nil && r.Fact.Episode <= 2
						})
						if !found {
							t.Fatalf("%s: %s: Query by its own words (%q) does not find the episode among %d results", stage, tx.Name, cut(q, 60), len(res))
						}
					}
				}
			}
			check("written")
			before := map[string][]memor.Fact{}
			for _, u := range users {
				st, err := e.State(ctx, u)
				if err != nil {
					t.Fatal(err)
				}
				before[u] = st
			}
			for _, u := range users {
				if err := e.Rebuild(ctx, u); err != nil {
					t.Fatalf("%s: Rebuild: %v", u, err)
				}
			}
			check("rebuilt")
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			if e, err = memor.Open(dir, memor.Options{NoSync: true}); err != nil {
				t.Fatal(err)
			}
			check("reopened")
			for _, u := range users {
				st, err := e.State(ctx, u)
				if err != nil {
					t.Fatal(err)
				}
				if !sameFacts(before[u], st) {
					t.Fatalf("%s: state changed by Rebuild and reopen: %d facts, then %d", u, len(before[u]), len(st))
				}
			}
		})
	}
}

// sameFacts compares two states by what each fact says and when.
func sameFacts(a, b []memor.Fact) bool {
	key := func(fs []memor.Fact) []string {
		var out []string
		for _, f := range fs {
			out = append(out, fmt.Sprintf("%s|%s|%s|%s|%s", f.ID, f.Subject, f.Predicate, f.Object, f.ValidFrom.Format(time.RFC3339Nano)))
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(key(a), key(b))
}
