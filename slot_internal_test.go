package memor

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor/extract"
)

// TestAppendPathEqualsFullFold: resolving new values from the fact in
// force (appended + FoldFrom) writes exactly the bytes the full fold of
// the slot writes, over random histories of a One slot and of a Many
// predicate's values with supersessions, restated values, low confidence,
// same-instant disagreement, late values, ends (with and without object)
// and corrections.
func TestAppendPathEqualsFullFold(t *testing.T) {
	t.Parallel()
	for seed := range uint64(6) {
		var dumps [2][]byte
		for i, fast := range []bool{true, false} {
			tune := defaultTuning()
			tune.appendPath = fast
			dumps[i] = runAppendWorkload(t, seed, tune)
		}
		if !bytes.Equal(dumps[0], dumps[1]) {
			t.Fatalf("seed %d: the append path and the full fold stored different bytes (%d vs %d)", seed, len(dumps[0]), len(dumps[1]))
		}
	}
}

func runAppendWorkload(t *testing.T, seed uint64, tune tuning) []byte {
	t.Helper()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e, err := openTuned(filepath.Join(t.TempDir(), "db"), Options{NoSync: true, Clock: func() time.Time {
		now = now.Add(time.Second)
		return now
	}}, tune)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, 9))
	t0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	step := 0
	for range 160 {
		step += r.IntN(3) // sometimes the same instant as the last value
		at := t0.Add(time.Duration(step) * time.Hour)
		if r.IntN(8) == 0 {
			at = t0.Add(time.Duration(r.IntN(step+1)) * time.Hour) // late
		}
		in := FactInput{Subject: "user", Predicate: "lives_in", Object: fmt.Sprint("city ", r.IntN(5)),
			ValidFrom: at, Confidence: []float64{1, 1, 0.95, 0.8, 0.4}[r.IntN(5)]}
		if r.IntN(2) == 0 { // a Many slot: likes restated, added and ended
			in.Predicate, in.Object = "likes", fmt.Sprint("tea ", r.IntN(2))
		}
		var err error
		switch k := r.IntN(12); {
		case k == 0:
			end := EndInput{Subject: "user", Predicate: in.Predicate, At: at}
			if in.Predicate == "likes" && r.IntN(2) == 0 {
				end.Object = in.Object
			}
			_, err = e.End(ctx, "u", end)
		case k == 1:
			var fs []Fact
			if fs, err = e.History(ctx, "u", "user", in.Predicate); err == nil && len(fs) > 0 {
				err = e.Correct(ctx, "u", fs[r.IntN(len(fs))].ID)
			}
		case k == 3 && in.Predicate == "likes":
			// One episode restating a like and ending every like, before
			// or after it (an extractor may propose both).
			endAt := at.Add(time.Duration(r.IntN(3)-1) * time.Hour)
			ops := []extract.Op{
				{Kind: extract.Assert, Subject: "user", Predicate: "likes", Object: in.Object, ValidFrom: at, Confidence: 1},
				{Kind: extract.End, Subject: "user", Predicate: "likes", ValidFrom: endAt},
			}
			if r.IntN(2) == 0 {
				ops[0], ops[1] = ops[1], ops[0]
			}
			ep := Episode{Kind: EpisodeFacts, At: at, Ops: ops, Text: renderOp(ops[0]) + "\n" + renderOp(ops[1])}
			_, err = e.write(ctx, "u", &ep, nil, false)
		case k == 2:
			in2 := in
			in2.Object = "city 9"
			_, err = e.AssertBatch(ctx, "u", []FactInput{in, in2})
		default:
			_, err = e.Assert(ctx, "u", in)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return checkedDump(t, e)
}

// TestBulkEqualsOnline: a new user's first write built by the bulk loader
// (bulk.go) stores exactly the bytes that the online transaction stores:
// random first batches mixing One and Many
// predicates, contexts, additive values, duplicates, restatements,
// same-instant disagreement, low confidence, late values and ends with and
// without object (before and after the values they close), then later
// writes on top.
func TestBulkEqualsOnline(t *testing.T) {
	// Each first batch also commits both ways: through the log and
	// memtable, and as an ingested table (ingestMinBytes 1). The bulk
	// loader takes every first batch it can (bulkMinOps 1); the others
	// (an end without object of a Many predicate) go online.
	paths := []struct {
		name   string
		bulk   bool
		ingest int
	}{{"bulk, ingested", true, 1}, {"bulk, logged", true, -1}, {"online, logged", false, -1}, {"online, ingested", false, 1}}
	t.Parallel()
	for seed := range uint64(8) {
		var dumps [][]byte
		for _, p := range paths {
			tune := defaultTuning()
			tune.bulk = p.bulk
			tune.bulkMinOps = 1
			dump, ingested, bulk := runFirstBatchWorkload(t, seed, p.ingest, 0, tune)
			want := uint64(0)
			if p.ingest > 0 {
				want = 12 // one per user: the first batch
			}
			if ingested != want {
				t.Fatalf("%s: %d tables ingested, want %d", p.name, ingested, want)
			}
			if p.bulk != (bulk > 0) {
				t.Fatalf("%s: %d first batches bulk loaded", p.name, bulk)
			}
			dumps = append(dumps, dump)
		}
		for i := 1; i < len(dumps); i++ {
			if bytes.Equal(dumps[0], dumps[i]) {
				continue
			}
			a, b := bytes.Split(dumps[0], []byte("\n")), bytes.Split(dumps[i], []byte("\n"))
			for j := range min(len(a), len(b)) {
				if !bytes.Equal(a[j], b[j]) {
					t.Fatalf("seed %d: %s and %s differ at line %d:\n%s\n%s", seed, paths[0].name, paths[i].name, j, a[j], b[j])
				}
			}
			t.Fatalf("seed %d: %s and %s stored %d vs %d lines", seed, paths[0].name, paths[i].name, len(a), len(b))
		}
	}
}

// TestRefusedBulkEqualsOnline: with a vector index that builds its graph
// from 20 vectors, the bulk loader (which writes vector records without
// the graph) takes only the first batches of fewer than 19 ops, and the
// store is byte for byte the online path's.
func TestRefusedBulkEqualsOnline(t *testing.T) {
	t.Parallel()
	for seed := range uint64(4) {
		tune := defaultTuning()
		tune.bulk = false
		want, _, _ := runFirstBatchWorkload(t, seed, 1, 20, tune)
		tune.bulk, tune.bulkMinOps = true, 1
		got, _, bulk := runFirstBatchWorkload(t, seed, 1, 20, tune)
		if !bytes.Equal(got, want) {
			t.Fatalf("seed %d: the bulk loader with a small vector index stored other bytes than the online path", seed)
		}
		if bulk == 0 || bulk == 12 {
			t.Fatalf("seed %d: %d of 12 first batches bulk loaded, want some but not all", seed, bulk)
		}
	}
}

// runFirstBatchWorkload returns the store's dump, how many writes
// committed as ingested tables, and how many the bulk loader took. A
// graphAt above 0 sets the vector index's GraphAt.
func runFirstBatchWorkload(t *testing.T, seed uint64, ingestMin, graphAt int, tune tuning) ([]byte, uint64, uint64) {
	t.Helper()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e, err := openTuned(filepath.Join(t.TempDir(), "db"), Options{NoSync: true, IngestMinBytes: ingestMin, Clock: func() time.Time {
		now = now.Add(time.Second)
		return now
	}}, tune)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if graphAt > 0 {
		e.idx.hnswO.GraphAt = graphAt
	}
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, 11))
	t0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	randOp := func() extract.Op {
		at := t0.Add(time.Duration(r.IntN(12)) * time.Hour)
		op := extract.Op{Kind: extract.Assert, Subject: []string{"user", "Alex"}[r.IntN(2)], ValidFrom: at,
			Confidence: []float64{1, 1, 0.95, 0.8, 0.4}[r.IntN(5)]}
		switch r.IntN(3) {
		case 0:
			op.Predicate, op.Object = "lives_in", fmt.Sprint("city ", r.IntN(4))
			if r.IntN(4) == 0 {
				op.Context = []string{"work", "home"}[r.IntN(2)]
			}
			op.Additive = r.IntN(8) == 0
		case 1:
			op.Predicate, op.Object = "likes", fmt.Sprint("tea ", r.IntN(4))
			if r.IntN(4) == 0 {
				op.Context = "work"
			}
		default:
			op.Predicate, op.Object = "plays_instrument", fmt.Sprint("instrument ", r.IntN(3))
		}
		if r.IntN(7) == 0 {
			op.Kind = extract.End
			if op.Predicate != "lives_in" && r.IntN(2) == 0 {
				op.Object = ""
			}
		}
		return op
	}
	for u := range 12 {
		user := fmt.Sprint("user-", u)
		for w := range 3 {
			n := 1 + r.IntN(40)
			if w > 0 {
				n = 1 + r.IntN(4)
			}
			ops := make([]extract.Op, n)
			lines := make([]string, n)
			for i := range ops {
				ops[i] = randOp()
				if i > 0 && r.IntN(6) == 0 {
					ops[i] = ops[r.IntN(i)] // restated in the same batch
				}
				lines[i] = renderOp(ops[i])
			}
			ep := Episode{Kind: EpisodeFacts, At: t0, Ops: ops, Text: strings.Join(lines, "\n")}
			if _, err := e.write(ctx, user, &ep, nil, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	return checkedDump(t, e), e.db.IngestedTables(), e.bulkLoads.Load()
}

// checkedDump checks e and returns every key and value it stores, one per
// line, for comparing two runs byte for byte.
func checkedDump(t *testing.T, e *Engine) []byte {
	t.Helper()
	ctx := context.Background()
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
	var dump bytes.Buffer
	if err := e.db.Scan(ctx, nil, func(k, v []byte) error {
		fmt.Fprintf(&dump, "%q=%q\n", k, v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return dump.Bytes()
}

// TestIndexCacheDefault: the zero Options bound the loaded indexes (a
// server meeting new users must not grow without limit); a negative
// budget means no bound, a positive one is taken as given.
func TestIndexCacheDefault(t *testing.T) {
	for _, tc := range []struct {
		opt, want int64
	}{{0, DefaultIndexCacheBytes}, {-1, 0}, {12345, 12345}} {
		e, err := Open(t.TempDir(), Options{NoSync: true, IndexCacheBytes: tc.opt})
		if err != nil {
			t.Fatal(err)
		}
		if e.idx.budget != tc.want {
			t.Errorf("IndexCacheBytes %d: budget %d, want %d", tc.opt, e.idx.budget, tc.want)
		}
		e.Close()
	}
}

// TestIndexCacheTotal: the cache's running total (kept so that a load
// does not sum every user) equals the fresh sum once each entry has been
// used since its last write, also after evictions and drops.
func TestIndexCacheTotal(t *testing.T) {
	e, err := Open(t.TempDir(), Options{NoSync: true, IndexCacheBytes: 100 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	for i := range 60 {
		user := fmt.Sprintf("u%d", i%9)
		if _, err := e.Assert(ctx, user, FactInput{Subject: "user", Predicate: "likes", Object: fmt.Sprintf("thing %d", i)}); err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 {
			e.idx.dropUser(fmt.Sprintf("u%d", (i+3)%9))
		}
	}
	e.idx.mu.Lock()
	var users []string
	for u := range e.idx.users {
		users = append(users, u)
	}
	e.idx.mu.Unlock()
	if len(users) == 0 || len(users) == 9 {
		t.Fatalf("%d users cached: the budget should hold some but not all", len(users))
	}
	for _, u := range users {
		e.idx.cached(u)
	}
	_, fresh := e.idx.size()
	e.idx.mu.Lock()
	total := e.idx.total
	e.idx.mu.Unlock()
	if total != fresh {
		t.Errorf("running total %d, fresh sum %d", total, fresh)
	}
	if total > 100<<10 {
		t.Errorf("cached %d bytes over the 100 KiB budget", total)
	}
}

// TestImportDropsCachedIndexes: a new user's import writes index records
// without building the indexes, so it must not leave behind indexes a
// reader cached before it (empty ones): the next query loads what the
// import wrote and finds its facts, and the import itself caches nothing.
func TestImportDropsCachedIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, err := Open(filepath.Join(t.TempDir(), "db"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if rs, err := e.Query(ctx, "ann", "where does ann's colleague live", QueryOptions{}); err != nil || len(rs) != 0 {
		t.Fatalf("query before anything: %v, %v", rs, err)
	}
	if e.idx.cached("ann") == nil {
		t.Fatal("the query did not cache the empty indexes (the test needs them)")
	}
	batch := make([]FactInput, e.tune.bulkMinOps+10)
	for i := range batch {
		batch[i] = FactInput{Subject: fmt.Sprint("colleague ", i), Predicate: "lives_in", Object: fmt.Sprint("town ", i)}
	}
	batch[7].Object = "Zanzibar"
	if _, err := e.AssertBatch(ctx, "ann", batch); err != nil {
		t.Fatal(err)
	}
	if e.idx.cached("ann") != nil {
		t.Fatal("the import left indexes in the cache")
	}
	rs, err := e.Query(ctx, "ann", "who lives in Zanzibar", QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 || rs[0].Fact == nil || rs[0].Fact.Object != "Zanzibar" {
		t.Fatalf("query after the import: %+v", rs)
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestIndexCacheBoundAfterWrites: users each written once and never read
// (an import of many users, each one AssertBatch) are counted at the size
// their writes grew them to, so the cache stays within its budget; it
// used to count each at the empty size it was made with and held every
// user.
func TestIndexCacheBoundAfterWrites(t *testing.T) {
	const budget = 200 << 10
	e, err := Open(t.TempDir(), Options{NoSync: true, IndexCacheBytes: budget})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	const users = 40
	for u := range users {
		var batch []FactInput
		for i := range 30 {
			batch = append(batch, FactInput{Subject: "user", Predicate: "likes", Object: fmt.Sprintf("thing %d of %d", i, u)})
		}
		if _, err := e.AssertBatch(ctx, fmt.Sprintf("u%d", u), batch); err != nil {
			t.Fatal(err)
		}
	}
	st, err := e.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.IndexBytes > budget || st.IndexedUsers == users || st.IndexEvictions == 0 {
		t.Fatalf("%d users cached, %d bytes, %d evictions: the %d-byte budget was not kept", st.IndexedUsers, st.IndexBytes, st.IndexEvictions, budget)
	}
	// Every user still answers, loaded again when evicted.
	for u := range users {
		rs, err := e.Query(ctx, fmt.Sprintf("u%d", u), fmt.Sprintf("thing 7 of %d", u), QueryOptions{})
		if err != nil || len(rs) == 0 {
			t.Fatalf("user u%d: %d results, %v", u, len(rs), err)
		}
	}
}
