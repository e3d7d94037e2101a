package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEpochOverHTTP is issue 15.6's story against `memor serve`, run as
// the README says: a move dated 1970 (the Unix epoch, 0 ns) supersedes
// the earlier city; a time memor does not accept is invalid_time, never
// "now"; the CLI refuses it too.
func TestEpochOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	base, stop := serve(t, e, "--addr", "127.0.0.1:0")
	post := func(body string) (int, string) {
		t.Helper()
		resp, err := http.Post(base+"/v1/users/x/episodes", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, body := range []string{
		`{"text":"I have lived in Paris since 1965.","at":"2026-01-01","wait":true}`,
		`{"text":"I moved to Rome in 1970.","at":"2026-01-02","wait":true}`,
	} {
		if code, out := post(body); code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", body, code, out)
		}
	}
	resp, err := http.Get(base + "/v1/users/x/state")
	if err != nil {
		t.Fatal(err)
	}
	var st struct{ Facts []fact }
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Facts) != 1 || st.Facts[0].Object != "Rome" || !st.Facts[0].ValidFrom.Equal(time.Unix(0, 0)) {
		t.Errorf("state %+v, want Rome from 1970-01-01 alone", st.Facts)
	}
	if code, out := post(`{"text":"I live in Oslo.","at":"0001-01-01","wait":true}`); code != http.StatusBadRequest || !strings.Contains(out, `"invalid_time"`) {
		t.Errorf("at 0001-01-01: %d %s, want 400 invalid_time", code, out)
	}
	if code := stop(syscall.SIGTERM); code != 0 {
		t.Errorf("serve exited %d", code)
	}
	if r := e.run("", "add", "--at", "0001-01-01", "I live in Oslo."); r.code != 2 || !strings.Contains(r.stderr, "invalid time") {
		t.Errorf("memor add --at 0001-01-01: exit %d, %s", r.code, r.stderr)
	}
}
