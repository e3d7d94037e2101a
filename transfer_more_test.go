package memor_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/memor-db/memor"
)

// TestImportWithFailingExtractor: an episode whose extraction fails on
// import is imported and recorded as failed, like a queued one (nothing
// of it applied, Retry runs it later), and the import says so; the rest
// of the file applies.
func TestImportWithFailingExtractor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, _ := transferSource(t)
	var file bytes.Buffer
	if _, err := src.Export(ctx, &file, "bob"); err != nil {
		t.Fatal(err)
	}
	x := &flakyExtractor{}
	dst, _ := openTest(t, memor.Options{Extractor: x})
	sum, err := dst.Import(ctx, bytes.NewReader(file.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Episodes != 1 || sum.Failed != 1 || len(sum.Warnings) == 0 {
		t.Errorf("summary %+v, want 1 episode imported, 1 failed, a warning about the other extractor", sum)
	}
	failed, err := dst.Failed(ctx, "bob")
	if err != nil || len(failed) != 1 || !strings.Contains(failed[0].Error, "model down") {
		t.Fatalf("Failed: %+v, %v", failed, err)
	}
	x.healed.Store(true)
	if n, err := dst.Retry(ctx, "bob"); err != nil || n != 0 {
		t.Fatalf("Retry: %d, %v", n, err)
	}
	if st, _ := dst.State(ctx, "bob"); len(st) != 1 || st[0].Object != "Lisbon" {
		t.Errorf("state after Retry: %v", st)
	}
	if err := dst.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// FuzzImport: whatever the input, Import returns an error or imports,
// never panics, and an input it refuses writes nothing.
func FuzzImport(f *testing.F) {
	f.Add(`{"memor_export":1,"extractor":"x","embedder":{"name":"y","dim":1}}
{"user":"u","seq":1,"kind":"text","at":"2026-01-01T00:00:00Z","recorded_at":"2026-01-02T00:00:00Z","text":"I live in Oslo."}
`)
	f.Add(`{"user":"u","seq":1,"kind":"facts","at":"2026-01-01T00:00:00Z","recorded_at":"2026-01-02T00:00:00Z","text":"x","ops":[{"kind":"assert","subject":"user","predicate":"lives_in","object":"Oslo","quote":""}]}`)
	f.Add(`{"user":"u","seq":1,"kind":"correct","at":"2026-01-01T00:00:00Z","recorded_at":"2026-01-02T00:00:00Z","text":"x","correct":{"fact_id":"zz","claims":["00"]}}`)
	f.Add(`{"memor_export":1}` + "\n" + `[1,2]`)
	f.Add(`{"memor_export":2,"extractor":"x","embedder":{"name":"y","dim":1}}
{"user":"u","seq":1,"kind":"text","at":"2026-01-01T00:00:00Z","recorded_at":"2026-01-02T00:00:00Z","text":"I live in Oslo."}
{"memor_export_end":{"users":1,"episodes":1}}
`)
	f.Add("\n\n{\"seq\":-1}")
	f.Fuzz(func(t *testing.T, in string) {
		ctx := context.Background()
		e, _ := openTest(t, memor.Options{})
		_, err := e.Import(ctx, strings.NewReader(in))
		var ie *memor.ImportError
		if errors.As(err, &ie) {
			if users, _ := e.Users(ctx); len(users) != 0 {
				t.Fatalf("refused input (%v) wrote users %v", err, users)
			}
		}
		if err := e.Check(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// TestImportAheadOfTheClock: a file recorded after the engine's clock (a
// backup from a machine whose clock ran ahead) is served by current reads
// at once, and later writes are recorded after it.
func TestImportAheadOfTheClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := newClock() // 2026-01-01
	e, _ := openTest(t, memor.Options{Clock: clock.Now})
	in := `{"memor_export":1,"extractor":"x","embedder":{"name":"y","dim":1}}
{"user":"u","seq":1,"kind":"text","at":"2030-01-01T00:00:00Z","recorded_at":"2030-01-02T00:00:00Z","text":"I live in Oslo."}
`
	if _, err := e.Import(ctx, strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	if st, _ := e.State(ctx, "u"); len(st) != 1 || st[0].Object != "Oslo" {
		t.Errorf("state right after the import: %v, want Oslo", st)
	}
	ep, err := e.Add(ctx, "u", "I live in Bergen.", memor.Sync())
	if err != nil {
		t.Fatal(err)
	}
	if !ep.RecordedAt.After(day(365 * 4)) {
		t.Errorf("a write after the import recorded at %s, before the imported history", ep.RecordedAt)
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
}
