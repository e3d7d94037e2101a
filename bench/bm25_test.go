package bench

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	_ "modernc.org/sqlite"

	"github.com/memor-db/memor/index/bm25"
	"github.com/memor-db/memor/kv"
)

// The full-text benchmarks compare memor's index/bm25 with bleve v2 (BM25
// scoring model, in-memory scorch index, English analyzer: the same
// stop-word + stemming pipeline as ours) and with SQLite FTS5 (pure-Go
// modernc.org/sqlite, porter tokenizer, bm25() ranking), on one seeded
// synthetic corpus of short fact-like sentences over a Zipfian vocabulary.
//
//	cd bench && go test -run '^$' -bench 'BM25|FTS' -benchtime 2s -count 1
//
// Size: 100k documents, 5k under -short. Queries are 2–4 content words
// drawn from the corpus distribution (plus stop words, which every engine
// drops or, for FTS5, never sees), top 10, cycled over 256 queries.

const (
	bm25Seed    = 42
	bm25Queries = 256
	bm25K       = 10
	bm25Batch   = 1000 // documents per committed batch when indexing
)

func bm25N() int {
	if testing.Short() {
		return 5000
	}
	return 100_000
}

// bm25Corpus is the benchmark data: documents (doc i has ID i) and queries,
// each query also as its bare content words for FTS5's MATCH syntax.
type bm25Corpus struct {
	docs    []string
	queries []string
	words   [][]string
}

// bm25Corpora caches corpora by size: n → *bm25Corpus.
var bm25Corpora sync.Map

// bm25Word returns the i-th vocabulary word: a pronounceable, unique,
// deterministic string (rank 0 is the most frequent).
func bm25Word(i int) string {
	const cons, vows = "bcdfghklmnprstvz", "aeiou"
	var b strings.Builder
	for n := i + 16; n > 0; n /= 80 {
		b.WriteByte(cons[n%16])
		b.WriteByte(vows[(n/16)%5])
	}
	return b.String()
}

var (
	bm25Verbs = []string{"lives in", "moved to", "works at", "relocated to", "plays", "likes", "visited",
		"adopted", "studies", "teaches", "bought", "sold", "started", "quit", "joined", "founded",
		"prefers", "is allergic to", "speaks", "manages", "owns", "met", "married", "left"}
	bm25Months = []string{"January", "February", "March", "April", "May", "June", "July",
		"August", "September", "October", "November", "December"}
)

func bm25MakeCorpus(n int) *bm25Corpus {
	if c, ok := bm25Corpora.Load(n); ok {
		return c.(*bm25Corpus)
	}
	r := rand.New(rand.NewPCG(bm25Seed, 0))
	zipf := rand.NewZipf(r, 1.07, 2, 50_000-1) // vocabulary of 50k words
	word := func() string { return bm25Word(int(zipf.Uint64())) }
	name := func() string { // 2k people, capitalised
		w := bm25Word(50_000 + r.IntN(2000))
		return strings.ToUpper(w[:1]) + w[1:]
	}
	c := &bm25Corpus{}
	for i := 0; i < n; i++ {
		var s string
		switch r.IntN(4) {
		case 0:
			s = fmt.Sprintf("%s %s %s %s in %s %d.", name(), bm25Verbs[r.IntN(len(bm25Verbs))], word(), word(),
				bm25Months[r.IntN(12)], 1990+r.IntN(36))
		case 1:
			s = fmt.Sprintf("%s's %s is a %s %s.", name(), word(), word(), word())
		case 2:
			s = fmt.Sprintf("%s %s the %s with %s last %s.", name(), bm25Verbs[r.IntN(len(bm25Verbs))], word(),
				name(), bm25Months[r.IntN(12)])
		default:
			s = fmt.Sprintf("The %s of %s has %d %s and a %s near the %s.", word(), name(), 1+r.IntN(12),
				word(), word(), word())
		}
		c.docs = append(c.docs, s)
	}
	for i := 0; i < bm25Queries; i++ {
		ws := []string{word(), word()}
		for j := r.IntN(3); j > 0; j-- {
			ws = append(ws, word())
		}
		if r.IntN(2) == 0 {
			ws[0] = strings.ToLower(name())
		}
		c.words = append(c.words, ws)
		c.queries = append(c.queries, "what about the "+strings.Join(ws, " ")+"?")
	}
	bm25Corpora.Store(n, c)
	return c
}

var bm25Prefix = kv.UserKey("bench", kv.SubBM25)

// bm25BuildMemor indexes the corpus into a fresh NoSync Pebble store,
// committing every bm25Batch documents. Persisted: one record per document
// (its terms and frequencies) in the Pebble WAL and memtable; the postings
// are in memory.
func bm25BuildMemor(tb testing.TB, dir string, docs []string) (*bm25.Index, *kv.DB) {
	db, err := kv.Open(dir, kv.Options{NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	ix := bm25.New(bm25Prefix, bm25.Options{})
	b := db.NewBatch()
	for i, d := range docs {
		if err := ix.Add(b, uint32(i), d); err != nil {
			tb.Fatal(err)
		}
		if (i+1)%bm25Batch == 0 || i == len(docs)-1 {
			if err := b.Commit(); err != nil {
				tb.Fatal(err)
			}
			_ = b.Close()
			b = db.NewBatch()
		}
	}
	_ = b.Close()
	return ix, db
}

type bm25BleveDoc struct {
	Text string `json:"text"`
}

func bm25BleveMapping() mapping.IndexMapping {
	m := bleve.NewIndexMapping()
	m.ScoringModel = "bm25"
	m.DefaultAnalyzer = en.AnalyzerName
	dm := bleve.NewDocumentMapping()
	f := bleve.NewTextFieldMapping()
	f.Analyzer = en.AnalyzerName
	f.Store = false
	f.IncludeTermVectors = false
	f.IncludeInAll = false
	dm.AddFieldMappingsAt("text", f)
	m.DefaultMapping = dm
	return m
}

// bm25BuildBleve indexes the corpus into an in-memory scorch index (empty
// path: segments stay in memory, nothing is written to disk), in batches of
// bm25Batch.
func bm25BuildBleve(tb testing.TB, docs []string) bleve.Index {
	idx, err := bleve.NewUsing("", bm25BleveMapping(), scorch.Name, scorch.Name, nil)
	if err != nil {
		tb.Fatal(err)
	}
	batch := idx.NewBatch()
	for i, d := range docs {
		if err := batch.Index(fmt.Sprint(i), bm25BleveDoc{d}); err != nil {
			tb.Fatal(err)
		}
		if batch.Size() == bm25Batch || i == len(docs)-1 {
			if err := idx.Batch(batch); err != nil {
				tb.Fatal(err)
			}
			batch.Reset()
		}
	}
	return idx
}

func bm25BleveSearch(tb testing.TB, idx bleve.Index, q string) *bleve.SearchResult {
	mq := bleve.NewMatchQuery(q)
	mq.SetField("text")
	req := bleve.NewSearchRequestOptions(mq, bm25K, 0, false)
	res, err := idx.Search(req)
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// bm25BuildSQLite loads the corpus into an in-memory FTS5 table.
func bm25BuildSQLite(tb testing.TB, docs []string) *sql.DB {
	db, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		tb.Fatal(err)
	}
	db.SetMaxOpenConns(1) // one connection: :memory: is per connection
	if _, err := db.Exec(`CREATE VIRTUAL TABLE facts USING fts5(text, tokenize = 'porter unicode61')`); err != nil {
		tb.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	st, err := tx.Prepare(`INSERT INTO facts(rowid, text) VALUES (?, ?)`)
	if err != nil {
		tb.Fatal(err)
	}
	for i, d := range docs {
		if _, err := st.Exec(i, d); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
	return db
}

// bm25FTSQuery is the FTS5 MATCH expression for a query: its content words,
// quoted, OR-ed (BM25 is a disjunctive ranking, as in the other engines).
func bm25FTSQuery(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = `"` + w + `"`
	}
	return strings.Join(q, " OR ")
}

// bm25Built caches the indexes the query benchmarks share.
var bm25Built struct {
	sync.Mutex
	memor map[int]*bm25.Index
	bleve map[int]bleve.Index
	sql   map[int]*sql.DB
}

func bm25Memor(b *testing.B, c *bm25Corpus) *bm25.Index {
	bm25Built.Lock()
	defer bm25Built.Unlock()
	n := len(c.docs)
	if ix := bm25Built.memor[n]; ix != nil {
		return ix
	}
	ix, db := bm25BuildMemor(b, b.TempDir(), c.docs)
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	if bm25Built.memor == nil {
		bm25Built.memor = map[int]*bm25.Index{}
	}
	bm25Built.memor[n] = ix
	return ix
}

func bm25Bleve(b *testing.B, c *bm25Corpus) bleve.Index {
	bm25Built.Lock()
	defer bm25Built.Unlock()
	n := len(c.docs)
	if idx := bm25Built.bleve[n]; idx != nil {
		return idx
	}
	idx := bm25BuildBleve(b, c.docs)
	if bm25Built.bleve == nil {
		bm25Built.bleve = map[int]bleve.Index{}
	}
	bm25Built.bleve[n] = idx
	return idx
}

func bm25SQLite(b *testing.B, c *bm25Corpus) *sql.DB {
	bm25Built.Lock()
	defer bm25Built.Unlock()
	n := len(c.docs)
	if db := bm25Built.sql[n]; db != nil {
		return db
	}
	db := bm25BuildSQLite(b, c.docs)
	if bm25Built.sql == nil {
		bm25Built.sql = map[int]*sql.DB{}
	}
	bm25Built.sql[n] = db
	return db
}

// bm25Overlap is the mean fraction of memor's top-10 that the other engine
// also returns: a sanity check that the engines answer the same question
// (they differ in tokenizer and stemmer, so it is not 1).
func bm25Overlap(memor [][]uint32, other [][]uint32) float64 {
	var sum float64
	for i := range memor {
		in := map[uint32]bool{}
		for _, d := range other[i] {
			in[d] = true
		}
		hit := 0
		for _, d := range memor[i] {
			if in[d] {
				hit++
			}
		}
		if len(memor[i]) > 0 {
			sum += float64(hit) / float64(len(memor[i]))
		}
	}
	return sum / float64(len(memor))
}

func bm25MemorTop(b *testing.B, ix *bm25.Index, q string) []uint32 {
	hits, err := ix.Search(context.Background(), q, bm25K, nil)
	if err != nil {
		b.Fatal(err)
	}
	out := make([]uint32, len(hits))
	for i, h := range hits {
		out[i] = h.Doc
	}
	return out
}

func BenchmarkBM25Query(b *testing.B) {
	c := bm25MakeCorpus(bm25N())
	b.Run("engine=memor", func(b *testing.B) {
		ix := bm25Memor(b, c)
		ctx := context.Background()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := ix.Search(ctx, c.queries[i%len(c.queries)], bm25K, nil); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("engine=bleve", func(b *testing.B) {
		idx := bm25Bleve(b, c)
		ix := bm25Memor(b, c)
		var mine, theirs [][]uint32
		for _, q := range c.queries {
			mine = append(mine, bm25MemorTop(b, ix, q))
			theirs = append(theirs, bm25BleveIDs(b, bm25BleveSearch(b, idx, q)))
		}
		b.ReportAllocs()
		b.ResetTimer()
		i := 0
		for b.Loop() {
			bm25BleveSearch(b, idx, c.queries[i%len(c.queries)])
			i++
		}
		b.ReportMetric(bm25Overlap(mine, theirs), "overlap@10")
	})
}

func BenchmarkBM25Index(b *testing.B) {
	c := bm25MakeCorpus(bm25N())
	n := len(c.docs)
	// memor persists every document's record to Pebble (WAL + memtable,
	// NoSync, one batch commit per 1000 documents) and keeps the postings
	// in memory.
	b.Run("engine=memor", func(b *testing.B) {
		b.ReportAllocs()
		docs := 0
		for b.Loop() {
			b.StopTimer()
			dir := b.TempDir()
			b.StartTimer()
			_, db := bm25BuildMemor(b, dir, c.docs)
			b.StopTimer()
			_ = db.Close()
			b.StartTimer()
			docs += n
		}
		b.ReportMetric(float64(docs)/b.Elapsed().Seconds(), "docs/s")
	})
	// bleve builds in-memory scorch segments (empty path): nothing reaches
	// disk, so this side does strictly less work than memor's.
	b.Run("engine=bleve", func(b *testing.B) {
		b.ReportAllocs()
		docs := 0
		for b.Loop() {
			idx := bm25BuildBleve(b, c.docs)
			b.StopTimer()
			_ = idx.Close()
			b.StartTimer()
			docs += n
		}
		b.ReportMetric(float64(docs)/b.Elapsed().Seconds(), "docs/s")
	})
}

func BenchmarkFTS(b *testing.B) {
	c := bm25MakeCorpus(bm25N())
	b.Run("engine=memor", func(b *testing.B) {
		ix := bm25Memor(b, c)
		ctx := context.Background()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := ix.Search(ctx, c.queries[i%len(c.queries)], bm25K, nil); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("engine=sqlite-fts5", func(b *testing.B) {
		db := bm25SQLite(b, c)
		st, err := db.Prepare(`SELECT rowid, bm25(facts) FROM facts WHERE facts MATCH ? ORDER BY bm25(facts) LIMIT 10`)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			rows, err := st.Query(bm25FTSQuery(c.words[i%len(c.words)]))
			if err != nil {
				b.Fatal(err)
			}
			for rows.Next() {
				var id int64
				var score float64
				if err := rows.Scan(&id, &score); err != nil {
					b.Fatal(err)
				}
			}
			if err := rows.Err(); err != nil {
				b.Fatal(err)
			}
			_ = rows.Close()
			i++
		}
	})
}

// TestBM25BenchSanity keeps the benchmark honest: on a small corpus memor
// and bleve, both BM25 with stemming and stop words, largely agree on the
// top 10, so a fast number is not the result of answering another question.
func TestBM25BenchSanity(t *testing.T) {
	c := bm25MakeCorpus(3000)
	ix, db := bm25BuildMemor(t, t.TempDir(), c.docs)
	defer db.Close()
	if err := ix.Check(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	idx := bm25BuildBleve(t, c.docs)
	defer idx.Close()
	var mine, theirs [][]uint32
	for _, q := range c.queries {
		hits, err := ix.Search(context.Background(), q, bm25K, nil)
		if err != nil {
			t.Fatal(err)
		}
		var ds []uint32
		for _, h := range hits {
			ds = append(ds, h.Doc)
		}
		mine = append(mine, ds)
		theirs = append(theirs, bm25BleveIDs(t, bm25BleveSearch(t, idx, q)))
	}
	if o := bm25Overlap(mine, theirs); o < 0.6 {
		t.Fatalf("memor and bleve top-10 overlap %.2f, want ≥ 0.6", o)
	}
}

func bm25BleveIDs(tb testing.TB, res *bleve.SearchResult) []uint32 {
	var ds []uint32
	for _, h := range res.Hits {
		d, err := strconv.ParseUint(h.ID, 10, 32)
		if err != nil {
			tb.Fatal(err)
		}
		ds = append(ds, uint32(d))
	}
	return ds
}
