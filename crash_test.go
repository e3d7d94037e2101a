package memor_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memor-db/memor"
)

// crashChildEnv makes the test binary act as the crash-test child.
const crashChildEnv = "MEMOR_CRASH_CHILD_DIR"

// TestMain lets the test binary double as the child process that
// TestCrashRecovery kills.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	os.Exit(m.Run())
}

// crashChild writes forever with default (durable) options and prints an
// acknowledgement after each write returns.
func crashChild(dir string) {
	e, err := memor.Open(dir, memor.Options{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	ctx := context.Background()
	start, _ := strconv.Atoi(os.Getenv("MEMOR_CRASH_START"))
	w := bufio.NewWriter(os.Stdout)
	for i := start; ; i++ {
		user := fmt.Sprintf("u%d", i%3)
		if isBulk(i) {
			// A new user's bulk import: committed as an ingested table.
			_, err = e.AssertBatch(ctx, fmt.Sprintf("bulk-%d", i), bulkFacts(i))
		} else if i%2 == 0 {
			// Two facts in one write: both or neither after a crash.
			_, err = e.AssertBatch(ctx, user, []memor.FactInput{
				{Subject: "user", Predicate: "likes", Object: fmt.Sprintf("thing-%d", i)},
				{Subject: "user", Predicate: "likes", Object: fmt.Sprintf("thing-%d-b", i)}})
		} else {
			_, err = e.Add(ctx, user, fmt.Sprintf("I like said-%d.", i))
		}
		if err != nil {
			fmt.Fprintln(w, "error", err)
			w.Flush()
			os.Exit(1)
		}
		fmt.Fprintln(w, "ack", i)
		w.Flush()
	}
}

// isBulk reports whether the child's write i is a bulk import.
func isBulk(i int) bool { return i%7 == 3 }

// bulkFacts is the bulk import of write i: enough facts to commit as an
// ingested table.
func bulkFacts(i int) []memor.FactInput {
	fs := make([]memor.FactInput, 400)
	for j := range fs {
		fs[j] = memor.FactInput{Subject: "user", Predicate: "visited", Object: fmt.Sprintf("place %d-%d", i, j),
			ValidFrom: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(j) * time.Hour)}
	}
	return fs
}

// TestCrashRecovery SIGKILLs a writing child at random moments. After
// reopening, every acknowledged write is present (structured facts at once,
// episodes applied by recovery), nothing half-applied is visible and Check
// is clean. MEMOR_CRASH_TRIALS raises the trial count (default 3).
func TestCrashRecovery(t *testing.T) {
	trials := 3
	if n, err := strconv.Atoi(os.Getenv("MEMOR_CRASH_TRIALS")); err == nil {
		trials = n
	}
	// The child's bulk imports take the ingestion path.
	probe, err := memor.Open(filepath.Join(t.TempDir(), "probe"), memor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := probe.AssertBatch(context.Background(), "bulk-0", bulkFacts(0)); err != nil {
		t.Fatal(err)
	}
	if st, _ := probe.Stats(context.Background()); st.IngestedTables != 1 {
		t.Fatalf("a bulk import of %d facts was not ingested", len(bulkFacts(0)))
	}
	probe.Close()
	dir := filepath.Join(t.TempDir(), "db")
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	acked := map[int]bool{}
	next := 0
	productive := 0 // trials in which the child acknowledged a write
	defer func() {
		if !t.Failed() && trials >= 3 && productive == 0 {
			t.Errorf("no trial acknowledged a write: the kills tested nothing")
		}
		t.Logf("%d trials, %d with new acknowledged writes, %d writes acknowledged in all", trials, productive, len(acked))
	}()
	for trial := range trials {
		ackedBefore := len(acked)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, fmt.Sprintf("MEMOR_CRASH_START=%d", next))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// Let it write for a while, then kill it mid-flight: a random
		// moment after its first acknowledgement, or (one trial in eight)
		// a random moment after start, which may fall in Open's recovery
		// of the previous trial's pending episodes.
		var deadline <-chan time.Time
		if r.IntN(8) == 0 {
			deadline = time.After(time.Duration(r.IntN(80)) * time.Millisecond)
		}
		killed, first := false, true
		for !killed {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("trial %d: child exited early", trial)
				}
				if i, found := strings.CutPrefix(l, "ack "); found {
					n, _ := strconv.Atoi(i)
					acked[n] = true
					next = max(next, n+1)
				} else {
					t.Fatalf("trial %d: child said %q", trial, l)
				}
				if first && deadline == nil {
					deadline = time.After(time.Duration(r.IntN(300)) * time.Millisecond)
				}
				first = false
			case <-deadline:
				_ = cmd.Process.Signal(syscall.SIGKILL)
				killed = true
			}
		}
		for l := range lines { // acknowledgements already printed count too
			if i, found := strings.CutPrefix(l, "ack "); found {
				n, _ := strconv.Atoi(i)
				acked[n] = true
				next = max(next, n+1)
			}
		}
		_ = cmd.Wait()
		next += 10 // skip any write the child did without acknowledging

		e, err := memor.Open(dir, memor.Options{})
		if err != nil {
			t.Fatalf("trial %d: reopen: %v", trial, err)
		}
		ctx := context.Background()
		have := map[string]bool{}
		for u := range 3 {
			user := fmt.Sprintf("u%d", u)
			if err := e.Flush(ctx, user); err != nil {
				t.Fatal(err)
			}
			fs, err := e.State(ctx, user)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fs {
				have[f.Object] = true
			}
		}
		// Nothing half-applied and nothing invented: every object is from
		// a write the child attempted, and a two-fact write is whole.
		for obj := range have {
			var i int
			var b string
			switch {
			case strings.HasPrefix(obj, "thing-"):
				if _, err := fmt.Sscanf(obj, "thing-%d-%s", &i, &b); err != nil {
					if _, err := fmt.Sscanf(obj, "thing-%d", &i); err != nil {
						t.Fatalf("trial %d: unexpected object %q", trial, obj)
					}
				}
				if !have[fmt.Sprintf("thing-%d", i)] || !have[fmt.Sprintf("thing-%d-b", i)] {
					t.Fatalf("trial %d: write %d half applied: %q without its pair", trial, i, obj)
				}
			case strings.HasPrefix(obj, "said-"):
				if _, err := fmt.Sscanf(obj, "said-%d", &i); err != nil {
					t.Fatalf("trial %d: unexpected object %q", trial, obj)
				}
			default:
				t.Fatalf("trial %d: unexpected object %q", trial, obj)
			}
			if i >= next {
				t.Fatalf("trial %d: object %q of a write the child never reached (next %d)", trial, obj, next)
			}
		}
		// A bulk import is all there or not at all, and there if
		// acknowledged.
		users, err := e.Users(ctx)
		if err != nil {
			t.Fatal(err)
		}
		bulks := map[string]bool{}
		for _, u := range users {
			if !strings.HasPrefix(u, "bulk-") {
				continue
			}
			bulks[u] = true
			fs, err := e.State(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			if len(fs) != len(bulkFacts(0)) {
				t.Fatalf("trial %d: bulk import %s half applied: %d facts of %d", trial, u, len(fs), len(bulkFacts(0)))
			}
		}
		for i := range acked {
			if isBulk(i) {
				if !bulks[fmt.Sprintf("bulk-%d", i)] {
					t.Fatalf("trial %d: acknowledged bulk import %d lost", trial, i)
				}
				continue
			}
			want := []string{fmt.Sprintf("thing-%d", i), fmt.Sprintf("thing-%d-b", i)}
			if i%2 == 1 {
				want = []string{fmt.Sprintf("said-%d", i)}
			}
			for _, w := range want {
				if !have[w] {
					t.Fatalf("trial %d: acknowledged write %d (%s) lost", trial, i, w)
				}
			}
		}
		if err := e.Check(ctx); err != nil {
			t.Fatalf("trial %d: Check after crash: %v", trial, err)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("trial %d: %d acknowledged writes survive (%d new)", trial, len(acked), len(acked)-ackedBefore)
		if len(acked) > ackedBefore {
			productive++
		}
	}
}
