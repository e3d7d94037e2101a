package memor

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/memor-db/memor/internal/corpus"
	"github.com/memor-db/memor/kv"
)

// graveFS keeps a copy of every file's bytes before they are deleted or
// overwritten: the blocks a file system frees and does not clear, which
// whoever holds the disk can read.
type graveFS struct {
	vfs.FS
	dir string
	n   *atomic.Int64
}

func (g graveFS) bury(name string) {
	b, err := os.ReadFile(name)
	if err != nil || len(b) == 0 {
		return
	}
	path := filepath.Join(g.dir, fmt.Sprintf("%06d-%s", g.n.Add(1), filepath.Base(name)))
	_ = os.WriteFile(path, b, 0o644)
}

func (g graveFS) Remove(name string) error {
	g.bury(name)
	return g.FS.Remove(name)
}

func (g graveFS) Rename(oldname, newname string) error {
	g.bury(newname)
	return g.FS.Rename(oldname, newname)
}

func (g graveFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	g.bury(name)
	return g.FS.Create(name, c)
}

func (g graveFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	g.bury(name)
	return g.FS.OpenReadWrite(name, c, opts...)
}

func (g graveFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	g.bury(oldname)
	return g.FS.ReuseForWrite(oldname, newname, c)
}

// disk is every file an attacker holding the disk reads: the store's
// folder and the freed blocks (the grave).
func disk(t *testing.T, dirs ...string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(path string, de os.DirEntry, err error) error {
			if err != nil || de.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			out[path] = b
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// recoverable is what the holder of files and of the KEKs in keks reads:
// each file decrypted under one of them if it can be, else its bytes.
func recoverable(files map[string][]byte, keks ...[]byte) map[string][]byte {
	out := map[string][]byte{}
	for name, b := range files {
		out[name] = b
		for _, k := range keks {
			if p, err := kv.DecryptFile(b, k); err == nil {
				out[name] = p
				break
			}
		}
	}
	return out
}

// holding lists the files whose bytes contain any needle.
func holding(files map[string][]byte, needles [][]byte) []string {
	var hits []string
	for name, b := range files {
		for _, n := range needles {
			if bytes.Contains(b, n) {
				hits = append(hits, filepath.Base(name)+" ("+strings.ToValidUTF8(fmt.Sprintf("%q", n), "?")+")")
				break
			}
		}
	}
	return hits
}

type userMark struct {
	id    string
	words []string // invented words the user alone wrote
	facts []FactInput
}

func (u userMark) needles(t *testing.T, e *Engine) [][]byte {
	t.Helper()
	out := [][]byte{[]byte(u.id)}
	for _, w := range u.words {
		// A 7-byte prefix survives stemming and case folding.
		out = append(out, []byte(w[:7]), []byte(strings.ToLower(w[:7])))
	}
	if e != nil {
		facts, err := e.State(context.Background(), u.id)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range facts {
			id, err := hex.DecodeString(f.ID)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, []byte(f.ID), id)
		}
	}
	return out
}

// readsOf is everything the engine answers about u, as JSON.
func readsOf(t *testing.T, e *Engine, u userMark, at time.Time) string {
	t.Helper()
	ctx := context.Background()
	var parts []any
	st, err := e.State(ctx, u.id)
	if err != nil {
		t.Fatal(err)
	}
	parts = append(parts, st)
	as, err := e.AsOf(ctx, u.id, at, at)
	if err != nil {
		t.Fatal(err)
	}
	parts = append(parts, as)
	for _, f := range u.facts {
		h, err := e.History(ctx, u.id, f.Subject, f.Predicate)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, h)
	}
	q, err := e.Query(ctx, u.id, "where does the user live and what is "+u.words[0], QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	parts = append(parts, q)
	b, err := json.Marshal(parts)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// forgetScenario fills a store with users writing realistic text, forgets
// the victim and returns the store's folder, the grave and the users.
func forgetScenario(t *testing.T, enc func(phase int) *Encryption) (dir, grave string, victim userMark, others []userMark, before map[string]string, at time.Time) {
	t.Helper()
	ctx := context.Background()
	dir = filepath.Join(t.TempDir(), "db")
	grave = t.TempDir()
	fs := graveFS{FS: vfs.Default, dir: grave, n: new(atomic.Int64)}
	e, err := Open(dir, Options{Encryption: enc(0), fs: fs})
	if err != nil {
		t.Fatal(err)
	}
	invent := []string{"Quillimarsh", "Brekkevikka", "Torvikstrand", "Yrsavellion", "Zandoquirel", "Pelmorandix",
		"Vostrenhaug", "Kelmiranthe", "Ostravelund", "Drumnacalli", "Fjellnoravik", "Harrowvinter"}
	victim = userMark{id: "victim-Halvorsen-7731", words: invent[:3]}
	for i := range 3 {
		others = append(others, userMark{id: fmt.Sprintf("neighbour-%d", i), words: invent[3+3*i : 6+3*i]})
	}
	users := append([]userMark{victim}, others...)
	rng := rand.New(rand.NewPCG(7, 21))
	texts := corpus.MustTexts()
	for round := range 2 {
		for i := range users {
			u := &users[i]
			for range 2 {
				text := texts[rng.IntN(len(texts))].Body
				if _, err := e.Add(ctx, u.id, text, Sync()); err != nil && !errors.Is(err, ErrTooLarge) {
					t.Fatal(err)
				}
			}
			w := u.words[round]
			if _, err := e.Add(ctx, u.id, fmt.Sprintf("I live in %s now, and my sister Ingrid works at %s.", w, u.words[2]), Sync()); err != nil {
				t.Fatal(err)
			}
			f := FactInput{Subject: "user", Predicate: "owns_boat", Object: w + " the sloop", Quote: "my boat " + w}
			if _, err := e.Assert(ctx, u.id, f); err != nil {
				t.Fatal(err)
			}
			u.facts = append(u.facts, f)
		}
		if err := e.db.Flush(); err != nil { // tables as well as logs
			t.Fatal(err)
		}
	}
	victim, others = users[0], users[1:]
	at = time.Now()
	before = map[string]string{}
	for _, u := range others {
		before[u.id] = readsOf(t, e, u, at)
	}
	victimNeedles := victim.needles(t, e)
	if err := e.Forget(ctx, victim.id); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// The rotation: Open with the new KEK and the old one as previous.
	if k := enc(1); k != nil {
		e, err = Open(dir, Options{Encryption: k, fs: fs})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	victim.words = nil
	for _, n := range victimNeedles {
		victim.words = append(victim.words, string(n)) // kept as needles
	}
	return dir, grave, victim, others, before, at
}

func rawNeedles(u userMark) [][]byte {
	var out [][]byte
	for _, w := range u.words {
		out = append(out, []byte(w))
	}
	return out
}

// TestForgetEncryptedLeavesNothing is the erasure of an encrypted store:
// after Forget and a KEK rotation, nothing of the forgotten user is in
// any byte an attacker can read with the new KEK, whether in the store's
// files or in the blocks the file system freed (the grave: every deleted
// or overwritten file's old bytes); the old KEK, were it kept, would read
// the user back from the grave, which is why it must be destroyed. The
// other users read as before, Check passes, and the old KEK opens
// nothing.
func TestForgetEncryptedLeavesNothing(t *testing.T) {
	old, next := bytes.Repeat([]byte{0xA1}, 32), bytes.Repeat([]byte{0xB2}, 32)
	dir, grave, victim, others, before, at := forgetScenario(t, func(phase int) *Encryption {
		if phase == 0 {
			return &Encryption{KEK: old}
		}
		return &Encryption{KEK: next, PreviousKEK: old}
	})
	files := disk(t, dir, grave)
	vic := rawNeedles(victim)
	if hits := holding(recoverable(files, next), vic); len(hits) > 0 {
		t.Errorf("with every disk and the new KEK, the forgotten user is readable in %d files: %v", len(hits), hits)
	}
	// The controls: the scan finds what is there.
	if hits := holding(recoverable(files, old, next), vic); len(hits) == 0 {
		t.Error("the old KEK reads nothing of the forgotten user in the grave: the scan proves nothing")
	}
	for _, u := range others {
		if hits := holding(recoverable(disk(t, dir), next), u.needles(t, nil)); len(hits) == 0 {
			t.Errorf("%s: not found in the live store under the new KEK: the scan proves nothing", u.id)
		}
		if hits := holding(disk(t, dir), u.needles(t, nil)); len(hits) > 0 {
			t.Errorf("%s: readable without a KEK in %v", u.id, hits)
		}
	}

	if _, err := Open(dir, Options{Encryption: &Encryption{KEK: old}}); !errors.Is(err, ErrWrongKEK) {
		t.Errorf("Open with the old KEK: %v, want ErrWrongKEK", err)
	}
	if _, err := Open(dir, Options{}); !encryptAllBuild && !errors.Is(err, ErrEncrypted) {
		t.Errorf("Open without a KEK: %v, want ErrEncrypted", err)
	}
	e, err := Open(dir, Options{Encryption: &Encryption{KEK: next}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	if err := e.Check(ctx); err != nil {
		t.Error(err)
	}
	for _, u := range others {
		if got := readsOf(t, e, u, at); got != before[u.id] {
			t.Errorf("%s reads differently after the Forget and the rotation", u.id)
		}
	}
	if st, err := e.State(ctx, victim.id); err != nil || len(st) != 0 {
		t.Errorf("forgotten user: %d facts, %v", len(st), err)
	}
}

// TestForgetPlainLeavesFreedBlocks states what the option is for: without
// it, the store's files hold nothing of a forgotten user after Forget,
// but the blocks freed by the files Pebble deleted still do.
func TestForgetPlainLeavesFreedBlocks(t *testing.T) {
	if encryptAllBuild {
		t.Skip("a memor_encrypt_all build encrypts every store")
	}
	dir, grave, victim, _, _, _ := forgetScenario(t, func(int) *Encryption { return nil })
	vic := rawNeedles(victim)
	if hits := holding(disk(t, dir), vic); len(hits) > 0 {
		t.Errorf("the plain store's files hold the forgotten user: %v", hits)
	}
	if hits := holding(disk(t, grave), vic); len(hits) == 0 {
		t.Error("the freed blocks hold nothing of the forgotten user: then the option protects nothing the test can see")
	}
}
