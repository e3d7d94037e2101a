package memor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor"
)

// transferSource builds a store whose two clocks differ on purpose: each
// write is recorded a month after the last, and says things about other
// times (a move "last week", a job from a given date, an end, a correction).
func transferSource(t *testing.T) (*memor.Engine, *fakeClock) {
	t.Helper()
	ctx := context.Background()
	clock := newClock()
	e, _ := openTest(t, memor.Options{Clock: clock.Now})
	month := func() { clock.Set(clock.Now().AddDate(0, 1, 0)) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := e.Add(ctx, "alice", "I live in Oslo.", memor.Sync(), memor.At(day(0)))
	must(err)
	month()
	_, err = e.Add(ctx, "alice", "I moved to Bergen last week.", memor.Sync(), memor.At(day(40)))
	must(err)
	month()
	_, err = e.AssertBatch(ctx, "alice", []memor.FactInput{
		{Subject: "user", Predicate: "works_at", Object: "Acme", ValidFrom: day(10)},
		{Subject: "user", Predicate: "plays_instrument", Object: "violin", ValidFrom: day(20)},
	})
	must(err)
	month()
	_, err = e.Assert(ctx, "alice", memor.FactInput{Subject: "user", Predicate: "works_at", Object: "Globex", ValidFrom: day(80)})
	must(err)
	month()
	hist, err := e.History(ctx, "alice", "user", "works_at")
	must(err)
	var globex string
	for _, f := range hist {
		if f.Object == "Globex" {
			globex = f.ID
		}
	}
	if globex == "" {
		t.Fatalf("no Globex in %v", hist)
	}
	must(e.Correct(ctx, "alice", globex))
	month()
	_, err = e.Add(ctx, "alice", "I live in Paris.", memor.Sync(), memor.At(day(150)), memor.Speaker("Maya"))
	must(err)
	month()
	_, err = e.End(ctx, "alice", memor.EndInput{Subject: "user", Predicate: "plays_instrument", Object: "violin", At: day(170)})
	must(err)
	month()
	_, err = e.Add(ctx, "bob", "I live in Lisbon.", memor.Sync(), memor.At(day(5)))
	must(err)
	_, err = e.Add(ctx, "alice", "I moved to Tromsø in March.", memor.Sync(), memor.At(day(200)))
	must(err)
	return e, clock
}

// transferState is everything a restored store must answer as the
// original did: the logs, every version of every fact, and AsOf at many
// (valid, known) pairs.
func transferState(t *testing.T, e *memor.Engine) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	users, err := e.Users(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dump := func(label string, v any) {
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s\n", label, j)
	}
	for _, u := range users {
		eps, err := e.Episodes(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		dump(u+" episodes", eps)
		log, err := e.Log(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		dump(u+" log", log)
		slots := map[[2]string]bool{}
		var known []time.Time
		for _, d := range log {
			slots[[2]string{d.Subject, d.Predicate}] = true
		}
		var keys [][2]string
		for k := range slots {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) })
		for _, k := range keys {
			h, err := e.History(ctx, u, k[0], k[1])
			if err != nil {
				t.Fatal(err)
			}
			dump(u+" history "+k[0]+" "+k[1], h)
			for _, f := range h {
				known = append(known, f.RecordedAt, f.ExpiredAt)
			}
		}
		for _, ep := range eps {
			known = append(known, ep.RecordedAt)
		}
		var grid []time.Time
		for _, k := range known {
			if !k.IsZero() {
				grid = append(grid, k.Add(-time.Nanosecond), k, k.Add(time.Nanosecond))
			}
		}
		grid = append(grid, day(-400), day(1000))
		for _, known := range grid {
			for v := -30; v <= 400; v += 9 {
				facts, err := e.AsOf(ctx, u, day(v), known)
				if err != nil {
					t.Fatal(err)
				}
				var s []string
				for _, f := range facts {
					s = append(s, f.ID+" "+f.String())
				}
				fmt.Fprintf(&b, "%s asof %s %s: %s\n", u, day(v).Format("2006-01-02"), known.Format(time.RFC3339Nano), strings.Join(s, "; "))
			}
		}
	}
	return b.String()
}

func TestExportImportKeepsBothClocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, _ := transferSource(t)
	want := transferState(t, src)
	var file bytes.Buffer
	sum, err := src.Export(ctx, &file)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Users != 2 || sum.Episodes != 9 {
		t.Fatalf("export summary %+v, want 2 users and 9 episodes", sum)
	}
	header, _, _ := strings.Cut(file.String(), "\n")
	if !strings.Contains(header, `"memor_export":2`) || !strings.Contains(header, `"extractor":`) ||
		!strings.Contains(header, `"embedder":`) {
		t.Errorf("header %s: want format version, extractor and embedder", header)
	}

	// The restored store's clock is long past the original's: an import
	// that stamped its own transaction time would answer nothing at the
	// original's instants.
	clock := newClock()
	clock.Set(day(2000))
	dst, _ := openTest(t, memor.Options{Clock: clock.Now})
	isum, err := dst.Import(ctx, bytes.NewReader(file.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if isum.Format != 2 || isum.Users != 2 || isum.Episodes != 9 || isum.Skipped != 0 || len(isum.Warnings) != 0 {
		t.Errorf("import summary %+v, want format 2, 2 users, 9 episodes, nothing skipped, no warning", isum)
	}
	if got := transferState(t, dst); got != want {
		t.Errorf("restored store differs from the original:\n%s", firstDiff(want, got))
	}
	if err := dst.Check(ctx); err != nil {
		t.Fatal(err)
	}

	// Importing the same file again is a no-op, reported as skipped.
	again, err := dst.Import(ctx, bytes.NewReader(file.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if again.Episodes != 0 || again.Skipped != 9 || again.Users != 0 {
		t.Errorf("second import %+v, want 0 imported and 9 skipped", again)
	}
	if got := transferState(t, dst); got != want {
		t.Errorf("a second import changed the store:\n%s", firstDiff(want, got))
	}

	// The restored store goes on from the file's transaction times.
	ep, err := dst.Add(ctx, "alice", "I live in Reykjavik.", memor.Sync())
	if err != nil {
		t.Fatal(err)
	}
	eps, _ := dst.Episodes(ctx, "alice")
	if ep.Seq != 9 || !ep.RecordedAt.After(eps[len(eps)-2].RecordedAt) {
		t.Errorf("new episode %d recorded %s after an import ending at %s", ep.Seq, ep.RecordedAt, eps[len(eps)-2].RecordedAt)
	}
	if err := dst.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestImportResumesAPartialCopy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, _ := transferSource(t)
	want := transferState(t, src)
	file := exportOf(t, src)
	lines := strings.SplitAfter(file.String(), "\n")
	dst, _ := openTest(t, memor.Options{})
	// The header and alice's first three episodes: an earlier backup.
	earlier := strings.Join(lines[:4], "") + `{"memor_export_end":{"users":1,"episodes":3}}` + "\n"
	if _, err := dst.Import(ctx, strings.NewReader(earlier)); err != nil {
		t.Fatal(err)
	}
	sum, err := dst.Import(ctx, bytes.NewReader(file.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Skipped != 3 || sum.Episodes != 6 {
		t.Errorf("summary %+v, want 3 skipped and 6 imported", sum)
	}
	if got := transferState(t, dst); got != want {
		t.Errorf("store completed from a later export differs:\n%s", firstDiff(want, got))
	}
}

func TestImportIsAtomic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, _ := transferSource(t)
	file := exportOf(t, src)
	lines := strings.SplitAfter(file.String(), "\n")
	for _, c := range []struct {
		name, line, field string
		is                error
	}{
		{"recorded_at not a time", `"recorded_at":"yesterday"`, "recorded_at", memor.ErrInvalidImport},
		{"seq a string", `"seq":"two"`, "seq", memor.ErrInvalidImport},
		{"unknown field", `"colour":"red"`, "colour", memor.ErrInvalidImport},
		{"unknown kind", `"kind":"dream"`, "kind", memor.ErrInvalidImport},
		{"invalid user", `"user":"a\u0000b"`, "user", memor.ErrInvalidUser},
		{"recorded_at missing", `"recorded_at":null`, "recorded_at", memor.ErrInvalidImport},
		{"correction without a fact ID", `"kind":"correct","correct":{"fact_id":"zz","claims":[]}`, "correct.fact_id", memor.ErrInvalidImport},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Line 5 is alice's fourth episode: lines before it are good.
			var ep map[string]json.RawMessage
			if err := json.Unmarshal([]byte(lines[4]), &ep); err != nil {
				t.Fatal(err)
			}
			var patch map[string]json.RawMessage
			if err := json.Unmarshal([]byte("{"+c.line+"}"), &patch); err != nil {
				t.Fatal(err)
			}
			for k, v := range patch {
				ep[k] = v
			}
			bad, _ := json.Marshal(ep)
			in := strings.Join(lines[:4], "") + string(bad) + "\n" + strings.Join(lines[5:], "")
			dst, _ := openTest(t, memor.Options{})
			_, err := dst.Import(ctx, strings.NewReader(in))
			var ie *memor.ImportError
			if !errors.As(err, &ie) || ie.Line != 5 || ie.Field != c.field || !errors.Is(err, c.is) {
				t.Fatalf("import: %v (%#v), want line 5, field %s, %v", err, ie, c.field, c.is)
			}
			if users, _ := dst.Users(ctx); len(users) != 0 {
				t.Errorf("a bad line imported users %v", users)
			}
		})
	}
	t.Run("newer format", func(t *testing.T) {
		dst, _ := openTest(t, memor.Options{})
		in := strings.Replace(file.String(), `"memor_export":2`, `"memor_export":3`, 1)
		_, err := dst.Import(ctx, strings.NewReader(in))
		var ie *memor.ImportError
		if !errors.As(err, &ie) || ie.Line != 1 || ie.Field != "memor_export" || !errors.Is(err, memor.ErrInvalidImport) {
			t.Fatalf("import: %v, want line 1, field memor_export", err)
		}
	})
}

func TestImportRefusesEarlierHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, _ := transferSource(t)
	file := exportOf(t, src)
	// bob already has something recorded after the file's episodes of him.
	clock := newClock()
	clock.Set(day(2000))
	dst, _ := openTest(t, memor.Options{Clock: clock.Now})
	if _, err := dst.Add(ctx, "bob", "I live in Porto.", memor.Sync()); err != nil {
		t.Fatal(err)
	}
	_, err := dst.Import(ctx, bytes.NewReader(file.Bytes()))
	var ie *memor.ImportError
	if !errors.Is(err, memor.ErrHistoryConflict) || !errors.As(err, &ie) || ie.Field != "recorded_at" {
		t.Fatalf("import over later history: %v, want ErrHistoryConflict naming recorded_at", err)
	}
	if users, _ := dst.Users(ctx); !reflect.DeepEqual(users, []string{"bob"}) {
		t.Errorf("users after a refused import: %v, want only bob (nothing imported)", users)
	}
	// Into another user it goes.
	sum, err := dst.Import(ctx, bytes.NewReader(file.Bytes()), memor.ImportAs("restored"))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Episodes != 9 || sum.Users != 1 {
		t.Errorf("import as one user: %+v", sum)
	}
}

func TestImportReadsHeaderlessExports(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, _ := transferSource(t)
	want := transferState(t, src)
	file := exportOf(t, src)
	// What memor wrote before the header: the episode lines alone.
	_, rest, _ := strings.Cut(file.String(), "\n")
	rest = rest[:strings.LastIndex(strings.TrimSuffix(rest, "\n"), "\n")+1]
	dst, _ := openTest(t, memor.Options{})
	sum, err := dst.Import(ctx, strings.NewReader(rest))
	if err != nil || sum.Format != 0 || sum.Episodes != 9 {
		t.Fatalf("headerless import: %+v, %v", sum, err)
	}
	if got := transferState(t, dst); got != want {
		t.Errorf("restored from a headerless export:\n%s", firstDiff(want, got))
	}
}

// firstDiff shows the first line where got departs from want.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d\nwant %s\n got %s", i+1, a, b)
		}
	}
	return "(equal)"
}

// TestImportRefusesTruncated: an export ends with a line counting what it
// holds, so a file cut short at any line (a copy interrupted, an export
// that failed midway) imports nothing instead of part of a history, and so
// does an end line that miscounts or is followed by more.
func TestImportRefusesTruncated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, _ := transferSource(t)
	file := exportOf(t, src)
	lines := strings.SplitAfter(strings.TrimSuffix(file.String(), "\n"), "\n")
	if last := lines[len(lines)-1]; last != `{"memor_export_end":{"users":2,"episodes":9}}` {
		t.Fatalf("last line %s, want the end line counting 2 users and 9 episodes", last)
	}
	refused := func(t *testing.T, in string, line int, is error) {
		t.Helper()
		dst, _ := openTest(t, memor.Options{})
		_, err := dst.Import(ctx, strings.NewReader(in))
		var ie *memor.ImportError
		if !errors.As(err, &ie) || ie.Line != line || !errors.Is(err, is) || !errors.Is(err, memor.ErrInvalidImport) {
			t.Fatalf("import: %v, want an *ImportError at line %d matching %v and ErrInvalidImport", err, line, is)
		}
		if users, _ := dst.Users(ctx); len(users) != 0 {
			t.Fatalf("a refused import wrote users %v", users)
		}
	}
	for cut := 1; cut < len(lines); cut++ {
		refused(t, strings.Join(lines[:cut], ""), cut+1, memor.ErrTruncatedImport)
	}
	body := strings.Join(lines[:len(lines)-1], "")
	refused(t, body+`{"memor_export_end":{"users":2,"episodes":8}}`+"\n", len(lines), memor.ErrTruncatedImport)
	refused(t, body+`{"memor_export_end":{"users":1,"episodes":9}}`+"\n", len(lines), memor.ErrTruncatedImport)
	refused(t, file.String()+lines[1], len(lines)+1, memor.ErrInvalidImport)
	refused(t, body+`{"memor_export_end":{"users":2,"episodes":9},"x":1}`+"\n", len(lines), memor.ErrInvalidImport)

	// A line cut inside is no episode either.
	dst, _ := openTest(t, memor.Options{})
	if _, err := dst.Import(ctx, strings.NewReader(body[:len(body)-10])); !errors.Is(err, memor.ErrInvalidImport) {
		t.Fatalf("a file cut inside a line: %v, want ErrInvalidImport", err)
	}

	// A whole file imports; a format 1 file (before the end line) imports
	// as it was written, with a warning that it could not be checked.
	if sum, err := dst.Import(ctx, strings.NewReader(file.String())); err != nil || sum.Episodes != 9 {
		t.Fatalf("whole file: %+v, %v", sum, err)
	}
	old := strings.Replace(body, `"memor_export":2`, `"memor_export":1`, 1)
	dst1, _ := openTest(t, memor.Options{})
	sum, err := dst1.Import(ctx, strings.NewReader(old))
	if err != nil || sum.Episodes != 9 || !slices.ContainsFunc(sum.Warnings, func(w string) bool { return strings.Contains(w, "no end line") }) {
		t.Fatalf("format 1 file: %+v, %v; want 9 episodes and a warning", sum, err)
	}
}

// failAfter is a writer that fails once n bytes are written.
type failAfter struct {
	w bytes.Buffer
	n int
}

func (f *failAfter) Write(p []byte) (int, error) {
	if f.w.Len()+len(p) > f.n {
		k := f.n - f.w.Len()
		f.w.Write(p[:k])
		return k, errors.New("disk full")
	}
	return f.w.Write(p)
}

// TestExportFailingMidwayIsRefused: an export whose writer fails midway
// returns the error, and what it wrote has no end line, so Import refuses
// it rather than restoring the users it reached.
func TestExportFailingMidwayIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, _ := transferSource(t)
	whole := exportOf(t, src)
	// Export buffers 64 KiB: a file larger than that fails in Export's
	// loop, a smaller one in its final flush; both must leave no end line.
	for _, n := range []int{whole.Len() / 2, whole.Len() - 3} {
		w := &failAfter{n: n}
		if _, err := src.Export(ctx, w); err == nil {
			t.Fatalf("export into a writer failing after %d bytes: no error", n)
		}
		dst, _ := openTest(t, memor.Options{})
		if _, err := dst.Import(ctx, bytes.NewReader(w.w.Bytes())); !errors.Is(err, memor.ErrInvalidImport) {
			t.Fatalf("import of a failed export (%d bytes): %v, want refused", n, err)
		}
		if users, _ := dst.Users(ctx); len(users) != 0 {
			t.Fatalf("a failed export imported users %v", users)
		}
	}
}

// exportOf is e's whole export.
func exportOf(t *testing.T, e *memor.Engine) *bytes.Buffer {
	t.Helper()
	var file bytes.Buffer
	if _, err := e.Export(context.Background(), &file); err != nil {
		t.Fatal(err)
	}
	return &file
}
