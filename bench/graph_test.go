package bench

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memor-db/memor/graph"
	"github.com/memor-db/memor/kv/kvtest"
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
// entities, except that the first hubs entities are each an endpoint of
// hubEdges edges; a tenth of the edges are superseded (not visible to a
// current query).
func traverseData(edges, entities, hubs, hubEdges int) []traverseEdge {
	r := rand.New(rand.NewPCG(2026, uint64(edges)))
	out := make([]traverseEdge, edges)
	for i := range out {
		src, dst := r.IntN(entities), r.IntN(entities)
		if i < hubs*hubEdges {
			src = i % hubs
		}
		if r.IntN(2) == 0 {
			src, dst = dst, src
		}
		out[i] = traverseEdge{
			doc:        uint32(i + 1),
			src:        src,
			dst:        dst,
			label:      fmt.Sprintf("rel%d", r.IntN(8)),
			superseded: r.IntN(10) == 0,
		}
	}
	return out
}

func entityName(i int) string { return fmt.Sprintf("entity %d", i) }

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

// traverseCase is one graph and walk depth of BenchmarkTraverse.
type traverseCase struct {
	name                            string
	edges, entities, hubs, hubEdges int
	depth                           int
	// seeds is the number of seed entities an op walks from, one walk
	// each: fewer for the deep walks, whose CTE takes tens of ms a seed.
	seeds int
}

// servedPaths is how many paths the memor engine builds per walk: the
// paths of the results a query serves (Query asks for a few times
// candidatesPerSignal = 50); the rest of the walk yields docs only.
const servedPaths = 50

// BenchmarkTraverse compares a walk from one entity over the current
// edges (a tenth are superseded) to depth 2, 3 and 4 on a uniform graph
// (100k edges, 20k entities) and to depth 2 on a graph with hubs (5
// entities with 10k edges each, 100k edges): memor's graph, loaded from a
// store as the engine loads it (the CSR adjacency built once), against a
// recursive CTE in SQLite over an edges table indexed on both ends. Both
// return the same edges (the benchmark fails if their counts differ for
// any seed).
//
// An op is one walk from each of the case's seeds, the same seeds in the
// same order for every engine, so that ns/op compares the same work: how
// far a walk reaches varies several-fold between seeds, and an op of one
// seed would weigh the seeds by how many ops each engine happened to run.
//
//   - engine=memor: graph.Reach, every reached edge's doc, and the paths
//     of the first servedPaths edges (the results served).
//   - engine=memor-all-paths: graph.BFSLimit with no limit, a path built
//     for every reached edge.
//   - engine=paired: an op of engine=memor, then the CTE's count of the
//     edges reached from each seed, timed apart, alternating op by op:
//     both engines meet the same machine load, where engines run one
//     after the other met whatever load each second brought (on this
//     shared machine the walking thread's wall time swung 1–7× its CPU
//     time between runs).
//
// engine=memor and memor-all-paths report edges/op, edges/s (reached
// edges per second of wall time; the walk is single-threaded, so per
// core) and cpu-edges/s (per second of the walking thread's CPU time,
// which a loaded machine disturbs less). engine=paired reports the same
// for each engine (memor-…, cte-…) and x-memor and x-memor-cpu, the CTE's
// time over memor's, by wall and by CPU time. The spread across -count
// runs: scripts/bench-spread.sh.
func BenchmarkTraverse(b *testing.B) {
	cases := []traverseCase{
		{name: "uniform", edges: 100_000, entities: 20_000, depth: 2, seeds: 64},
		{name: "uniform", edges: 100_000, entities: 20_000, depth: 3, seeds: 32},
		{name: "uniform", edges: 100_000, entities: 20_000, depth: 4, seeds: 16},
		{name: "hubs", edges: 100_000, entities: 20_000, hubs: 5, hubEdges: 10_000, depth: 2, seeds: 16},
	}
	if testing.Short() {
		for i := range cases {
			cases[i].edges, cases[i].entities, cases[i].hubEdges = 5_000, 1_000, cases[i].hubEdges/20
		}
	}
	for _, tc := range cases {
		benchTraverse(b, tc)
	}
}

func benchTraverse(b *testing.B, tc traverseCase) {
	data := traverseData(tc.edges, tc.entities, tc.hubs, tc.hubEdges)
	r := rand.New(rand.NewPCG(7, 7))
	seeds := make([]int, tc.seeds)
	for i := range seeds {
		seeds[i] = r.IntN(tc.entities)
	}
	name := fmt.Sprintf("graph=%s/edges=%d/entities=%d/depth=%d", tc.name, tc.edges, tc.entities, tc.depth)
	depth := tc.depth
	ctx := context.Background()

	// Reference counts from memor, checked against SQLite below.
	want := make([]int, len(seeds))
	wantTotal := 0

	var g *graph.Graph
	allow := roaring.New()
	setup := func(b *testing.B) {
		if g != nil {
			return
		}
		store := kvtest.Map{}
		w := graph.New([]byte("g/"))
		for _, e := range data {
			if err := w.AddEdge(store, e.doc, entityName(e.src), e.label, entityName(e.dst)); err != nil {
				b.Fatal(err)
			}
			if !e.superseded {
				allow.Add(e.doc)
			}
		}
		var err error
		if g, err = graph.Load(ctx, store, []byte("g/")); err != nil {
			b.Fatal(err)
		}
		for i, s := range seeds {
			ps, err := g.BFSLimit(ctx, []string{entityName(s)}, depth, 1<<30, allow)
			if err != nil {
				b.Fatal(err)
			}
			want[i] = len(ps)
			wantTotal += len(ps)
		}
	}
	names := make([]string, len(seeds))
	for i, s := range seeds {
		names[i] = entityName(s)
	}
	// measure runs op, the walks from every seed (returning the edges they
	// reach), and checks each op reaches the reference's edges.
	measure := func(b *testing.B, op func() int) {
		b.ReportAllocs()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cpu0 := threadCPU()
		ops := 0
		for b.Loop() {
			if n := op(); n != wantTotal {
				b.Fatalf("an op reached %d edges, want %d", n, wantTotal)
			}
			ops++
		}
		cpu := threadCPU() - cpu0
		found := float64(wantTotal) * float64(ops)
		b.ReportMetric(float64(wantTotal), "edges/op")
		b.ReportMetric(found/b.Elapsed().Seconds(), "edges/s")
		if cpu > 0 {
			b.ReportMetric(found/cpu.Seconds(), "cpu-edges/s")
		}
	}

	hops := 0 // hops of the served paths, kept so the paths are built
	// memorOp is an op of engine=memor: Reach from each seed.
	memorOp := func(b *testing.B) int {
		n := 0
		for i := range names {
			k := 0
			err := g.Reach(ctx, names[i:i+1], depth, allow, func(x graph.Reached) bool {
				if k < servedPaths {
					hops += len(x.Path().Hops)
				} else {
					_ = x.Doc()
				}
				k++
				return true
			})
			if err != nil {
				b.Fatal(err)
			}
			n += k
		}
		return n
	}
	b.Run(name+"/engine=memor", func(b *testing.B) {
		setup(b)
		measure(b, func() int { return memorOp(b) })
	})
	b.Run(name+"/engine=memor-all-paths", func(b *testing.B) {
		setup(b)
		measure(b, func() int {
			n := 0
			for i := range names {
				ps, err := g.BFSLimit(ctx, names[i:i+1], depth, 1<<30, allow)
				if err != nil {
					b.Fatal(err)
				}
				n += len(ps)
			}
			return n
		})
	})
	// openCTE loads the edges into an in-memory SQLite database and
	// returns the CTE's count of the edges reached from a seed.
	openCTE := func(b *testing.B) func(seed int) int {
		db, err := sql.Open("sqlite", "file::memory:")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
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
		b.Cleanup(func() { stmt.Close() })
		count := func(seed int) int {
			var n int
			if err := stmt.QueryRow(seed, depth).Scan(&n); err != nil {
				b.Fatal(err)
			}
			return n
		}
		for i, s := range seeds {
			if got := count(s); got != want[i] {
				b.Fatalf("seed %d: sqlite reaches %d edges, memor %d", s, got, want[i])
			}
		}
		return count
	}
	b.Run(name+"/engine=paired", func(b *testing.B) {
		setup(b)
		count := openCTE(b)
		b.ReportAllocs()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var memorWall, memorCPU, cteWall, cteCPU time.Duration
		ops := 0
		for b.Loop() {
			t0, c0 := time.Now(), threadCPU()
			if n := memorOp(b); n != wantTotal {
				b.Fatalf("memor reached %d edges, want %d", n, wantTotal)
			}
			t1, c1 := time.Now(), threadCPU()
			n := 0
			for _, s := range seeds {
				n += count(s)
			}
			if n != wantTotal {
				b.Fatalf("the CTE reached %d edges, want %d", n, wantTotal)
			}
			t2, c2 := time.Now(), threadCPU()
			memorWall, memorCPU = memorWall+t1.Sub(t0), memorCPU+(c1-c0)
			cteWall, cteCPU = cteWall+t2.Sub(t1), cteCPU+(c2-c1)
			ops++
		}
		found := float64(wantTotal) * float64(ops)
		b.ReportMetric(float64(wantTotal), "edges/op")
		b.ReportMetric(found/memorWall.Seconds(), "memor-edges/s")
		b.ReportMetric(found/cteWall.Seconds(), "cte-edges/s")
		b.ReportMetric(float64(cteWall)/float64(memorWall), "x-memor")
		if memorCPU > 0 && cteCPU > 0 {
			b.ReportMetric(found/memorCPU.Seconds(), "memor-cpu-edges/s")
			b.ReportMetric(found/cteCPU.Seconds(), "cte-cpu-edges/s")
			b.ReportMetric(float64(cteCPU)/float64(memorCPU), "x-memor-cpu")
		}
	})
}
