package eval

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/memor-db/memor"
)

// TestAddOptionsSpeaker: a user message is the owner's, an assistant's
// is said by "assistant", so the assistant's first person never becomes
// a fact about the user.
func TestAddOptionsSpeaker(t *testing.T) {
	e, err := memor.Open(filepath.Join(t.TempDir(), "db"), memor.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	at := time.Date(2024, 3, 15, 9, 0, 0, 0, time.UTC)
	for _, m := range []Message{
		{ID: "1", Role: "user", Text: "I live in Boston.", At: at},
		{ID: "2", Role: "assistant", Text: "I live in the cloud, but Boston is lovely.", At: at.Add(time.Minute)},
		{ID: "3", Text: "I play the clarinet.", At: at.Add(2 * time.Minute)},
	} {
		if _, err := e.Add(ctx, user, m.Text, append(addOptions(m), memor.Sync())...); err != nil {
			t.Fatal(err)
		}
	}
	eps, err := e.Episodes(ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	var speakers []string
	for _, ep := range eps {
		speakers = append(speakers, ep.Speaker)
	}
	if !slices.Equal(speakers, []string{"", "assistant", ""}) {
		t.Fatalf("speakers %q", speakers)
	}
	st, err := e.State(ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range st {
		if f.Subject == "user" && f.Episode == eps[1].Seq {
			t.Fatalf("the assistant's words became the user's: %v", f)
		}
	}
}
