package memor_test

import (
	"context"
	"testing"
	"time"

	"github.com/memor-db/memor"
)

// TestVoicePrior: whom a question is about is a ranking prior. Asked in
// the first person, the owner's own turn ranks above another
// participant's turn that shares more of the question's words; asked
// about a named participant, that participant's turn ranks first.
func TestVoicePrior(t *testing.T) {
	t.Parallel()
	e, err := memor.Open(t.TempDir(), memor.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	at := time.Date(2024, 3, 15, 9, 0, 0, 0, time.UTC)
	turns := []struct{ speaker, text string }{
		{"", "I have uploaded 30 documents to the portal so far."},
		{"assistant", "Great progress! Uploading documents to the portal in batches helps: check that each uploaded document opens, name the documents consistently, and keep the portal's upload log so you know how many documents are uploaded."},
		{"Dana", "I work at Initech."},
		{"Dana", "I uploaded the quarterly report to the portal."},
		{"assistant", "Dana, uploading the report to the portal is done: the portal shows the uploaded report and the upload time."},
	}
	for i, tr := range turns {
		opts := []memor.AddOption{memor.At(at.Add(time.Duration(i) * time.Minute))}
		if tr.speaker != "" {
			opts = append(opts, memor.Speaker(tr.speaker))
		}
		if _, err := e.Add(ctx, "chat", tr.text, append(opts, memor.Sync())...); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ q, want string }{
		{"How many documents have I uploaded to the portal?", turns[0].text},
		{"What did Dana upload to the portal?", turns[3].text},
	} {
		rs, err := e.Query(ctx, "chat", c.q, memor.QueryOptions{K: 3, Explain: true})
		if err != nil {
			t.Fatal(err)
		}
		var first *memor.Episode
		for _, r := range rs {
			if r.Episode != nil {
				first = r.Episode
				break
			}
		}
		if first == nil || first.Text != c.want {
			for _, r := range rs {
				t.Logf("%s %.3f %+v", r.Text(), r.Score, r.Signals)
			}
			t.Errorf("%q: first turn %v, want %q", c.q, first, c.want)
			continue
		}
		if first := rs[0]; first.Episode != nil && first.Signals.Voice != 1.2 {
			t.Errorf("%q: voice factor %v, want 1.2", c.q, first.Signals.Voice)
		}
	}
}
