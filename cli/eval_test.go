package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestEval runs memor eval on the eval package's synthetic data set, in
// both formats, as a user would.
func TestEval(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, path := range []string{"../eval/testdata/small.jsonl", "../eval/testdata/beam"} {
		out := e.ok("eval", path)
		for _, want := range []string{"recall@10", "recall@5", "recall@20", "knowledge_update", "memor-vector", "bm25", "recent", "Speaker", "bm25 1/1"} {
			if !strings.Contains(out, want) {
				t.Errorf("memor eval %s: no %q in\n%s", path, want, out)
			}
		}
		var r struct {
			Questions int `json:"questions"`
			All       map[string]struct {
				R5, R10 float64
			} `json:"all"`
		}
		if err := json.Unmarshal([]byte(e.ok("eval", path, "--json", "--limit", "1")), &r); err != nil {
			t.Fatal(err)
		}
		// Hand-computed in eval's TestRunSynthetic: recent r10 is 1.
		if r.Questions != 3 || r.All["recent"].R10 != 1 {
			t.Errorf("memor eval %s --json: %+v", path, r)
		}
	}
	if r := e.run("", "eval", "../eval/testdata/small.jsonl", "--conversations", "nope"); r.code != 2 {
		t.Errorf("unknown conversation: exit %d, stderr %s", r.code, r.stderr)
	}
	if r := e.run("", "eval", "no-such-file.jsonl"); r.code != 1 || !strings.Contains(r.stderr, "check the path") {
		t.Errorf("missing file: exit %d, stderr %s", r.code, r.stderr)
	}
}
