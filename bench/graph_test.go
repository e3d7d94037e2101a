package bench

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memor-db/memor/graph"
	_ "modernc.org/sqlite"
)

// traverseEdge is one fact edge of the traversal benchmark.
type traverseEdge struct {
	doc        uint32
	src, dst   int
	label      string
	superseded bool
}

// traverseData is a random fact graph: edges between uniformly drawn
// entities, a tenth of them superseded (not visible to a current query).
func traverseData(edges, entities int) []traverseEdge {
	r := rand.New(rand.NewPCG(2026, uint64(edges)))
	out := make([]traverseEdge, edges)
	for i := range out {
		out[i] = traverseEdge{
			doc:        uint32(i + 1),
			src:        r.IntN(entities),
			dst:        r.IntN(entities),
			label:      fmt.Sprintf("rel%d", r.IntN(8)),
			superseded: r.IntN(10) == 0,
		}
	}
	return out
}

func entityName(i int) string { return fmt.Sprintf("entity %d", i) }

// discard is a kv.Writer that drops writes: the walk under test is in
// memory, so persisting the graph would only slow the setup.
type discard struct{}

func (discard) Set(k, v []byte) error { return nil }
func (discard) Delete(k []byte) error { return nil }

// traverseSQL is the peer: a recursive CTE over an edges table indexed on
// src and dst, walking both directions, skipping superseded edges, and
// returning the edges within reach, as memor's BFS does.
const traverseSQL = `
WITH RECURSIVE reach(node, depth) AS (
	SELECT ?1, 0
	UNION
	SELECT e.dst, r.depth + 1 FROM reach r JOIN edges e ON e.src = r.node
	WHERE r.depth < ?2 - 1 AND e.superseded = 0
	UNION
	SELECT e.src, r.depth + 1 FROM reach r JOIN edges e ON e.dst = r.node
	WHERE r.depth < ?2 - 1 AND e.superseded = 0
),
nodes AS (SELECT DISTINCT node FROM reach)
SELECT count(*) FROM (
	SELECT e.doc FROM nodes n JOIN edges e ON e.src = n.node WHERE e.superseded = 0
	UNION
	SELECT e.doc FROM nodes n JOIN edges e ON e.dst = n.node WHERE e.superseded = 0
)`

// BenchmarkTraverse compares a 3-hop walk from one entity over the current
// edges: memor's graph.BFS (paths included) against a recursive CTE in
// SQLite. Both visit the same edges; the benchmark fails if their counts
// differ.
func BenchmarkTraverse(b *testing.B) {
	nEdges, nEnts := 100_000, 20_000
	if testing.Short() {
		nEdges, nEnts = 5_000, 1_000
	}
	const depth = 3
	data := traverseData(nEdges, nEnts)
	r := rand.New(rand.NewPCG(7, 7))
	seeds := make([]int, 64)
	for i := range seeds {
		seeds[i] = r.IntN(nEnts)
	}
	name := fmt.Sprintf("edges=%d/entities=%d/depth=%d", nEdges, nEnts, depth)

	// Reference counts from memor, checked against SQLite below.
	want := make([]int, len(seeds))

	b.Run(name+"/engine=memor", func(b *testing.B) {
		g := graph.New(nil)
		allow := roaring.New()
		for _, e := range data {
			if err := g.AddEdge(discard{}, e.doc, entityName(e.src), e.label, entityName(e.dst)); err != nil {
				b.Fatal(err)
			}
			if !e.superseded {
				allow.Add(e.doc)
			}
		}
		ctx := context.Background()
		for i, s := range seeds {
			ps, err := g.BFSLimit(ctx, []string{entityName(s)}, depth, 1<<30, allow)
			if err != nil {
				b.Fatal(err)
			}
			want[i] = len(ps)
		}
		b.ReportAllocs()
		i, found := 0, 0
		for b.Loop() {
			ps, err := g.BFSLimit(ctx, []string{entityName(seeds[i%len(seeds)])}, depth, 1<<30, allow)
			if err != nil {
				b.Fatal(err)
			}
			found += len(ps)
			i++
		}
		b.ReportMetric(float64(found)/float64(i), "edges/op")
	})

	b.Run(name+"/engine=sqlite-cte", func(b *testing.B) {
		db, err := sql.Open("sqlite", "file::memory:")
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		db.SetMaxOpenConns(1) // one connection: one in-memory database
		for _, q := range []string{
			`CREATE TABLE edges (doc INTEGER PRIMARY KEY, src INTEGER NOT NULL, dst INTEGER NOT NULL, label TEXT NOT NULL, superseded INTEGER NOT NULL)`,
			`CREATE INDEX edges_src ON edges(src)`,
			`CREATE INDEX edges_dst ON edges(dst)`,
		} {
			if _, err := db.Exec(q); err != nil {
				b.Fatal(err)
			}
		}
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		ins, err := tx.Prepare(`INSERT INTO edges VALUES (?, ?, ?, ?, ?)`)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range data {
			if _, err := ins.Exec(e.doc, e.src, e.dst, e.label, e.superseded); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		if _, err := db.Exec(`ANALYZE`); err != nil {
			b.Fatal(err)
		}
		stmt, err := db.Prepare(traverseSQL)
		if err != nil {
			b.Fatal(err)
		}
		defer stmt.Close()
		count := func(seed int) int {
			var n int
			if err := stmt.QueryRow(seed, depth).Scan(&n); err != nil {
				b.Fatal(err)
			}
			return n
		}
		for i, s := range seeds {
			if got := count(s); want[i] != 0 && got != want[i] {
				b.Fatalf("seed %d: sqlite reaches %d edges, memor %d", s, got, want[i])
			}
		}
		b.ReportAllocs()
		i, found := 0, 0
		for b.Loop() {
			found += count(seeds[i%len(seeds)])
			i++
		}
		b.ReportMetric(float64(found)/float64(i), "edges/op")
	})
}
