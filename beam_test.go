package memor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/memor-db/memor"
)

// beamDir is the BEAM-100K development data (see its README): public
// two-speaker conversations nobody here wrote, at MEMOR_BEAM_DIR or beside
// the repository. It is not part of the repository; tests that read it
// skip when it is absent.
func beamDir() string {
	if d := os.Getenv("MEMOR_BEAM_DIR"); d != "" {
		return d
	}
	return "../shared/datasets/beam-100k"
}

type beamMessage struct {
	Role    string `json:"role"`
	ID      int    `json:"id"`
	Content string `json:"content"`
}

type beamBatch struct {
	Turns [][]beamMessage `json:"turns"`
}

// beamMessages returns conversation n's messages in order, or skips t.
func beamMessages(t *testing.T, n int) []beamMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(beamDir(), fmt.Sprint(n), "chat.json"))
	if os.IsNotExist(err) {
		t.Skipf("%s is absent", beamDir())
	}
	if err != nil {
		t.Fatal(err)
	}
	var batches []beamBatch
	if err := json.Unmarshal(b, &batches); err != nil {
		t.Fatal(err)
	}
	var out []beamMessage
	for _, bt := range batches {
		for _, turn := range bt.Turns {
			out = append(out, turn...)
		}
	}
	return out
}

// TestBEAMConversationsApply writes every message of the 20 BEAM
// conversations (5,732 messages of real length and vocabulary), queued and
// inline, the assistant's with their speaker, and requires every episode applied, none failed, and a clean
// Check after a reopen. 14 of the 20 once crashed the engine.
func TestBEAMConversationsApply(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("writes 5,732 real messages")
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "db")
	e, err := memor.Open(dir, memor.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { e.Close() }()
	total, tooLarge := 0, 0
	for n := 1; n <= 20; n++ {
		user := fmt.Sprintf("beam-%d", n)
		for i, m := range beamMessages(t, n) {
			var opts []memor.AddOption
			if i%2 == 0 {
				opts = append(opts, memor.Sync())
			}
			if m.Role != "user" {
				// The assistant's first person is the assistant's.
				opts = append(opts, memor.Speaker(m.Role))
			}
			_, err := e.Add(ctx, user, m.Content, opts...)
			if errors.Is(err, memor.ErrTooLarge) && len(m.Content) > memor.DefaultMaxTextBytes {
				tooLarge++ // refused whole, as documented
				continue
			}
			if err != nil {
				t.Fatalf("conversation %d message %d: %v", n, m.ID, err)
			}
			total++
		}
		if err := e.Flush(ctx, user); err != nil {
			t.Fatal(err)
		}
		f, err := e.Freshness(ctx, user)
		if err != nil {
			t.Fatal(err)
		}
		if f.Failed != 0 || f.Pending != 0 {
			t.Fatalf("conversation %d: %+v", n, f)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if e, err = memor.Open(dir, memor.Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d messages applied, %d over the text limit refused", total, tooLarge)
}
