package cli_test

import (
	"bufio"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startStudio runs memor studio and returns the URL it prints.
func startStudio(t *testing.T, e *env, args ...string) string {
	t.Helper()
	cmd := exec.Command(memorBin, append([]string{"studio", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = e.vars
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case u, ok := <-line:
		if !ok {
			t.Fatalf("memor studio printed no URL; stderr:\n%s", errb.String())
		}
		return u
	case <-time.After(30 * time.Second):
		t.Fatalf("memor studio printed no URL within 30s; stderr:\n%s", errb.String())
	}
	return ""
}

func fetch(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestStudioCommand: memor studio serves an existing store and prints the
// URL of the studio (of a user's timeline with --user); with MEMOR_TOKEN the
// URL logs the browser in; it never creates a store.
func TestStudioCommand(t *testing.T) {
	e := newEnv(t)
	if r := e.run("", "studio", "--addr", "127.0.0.1:0"); r.code != 1 || !strings.Contains(r.stderr, "no memor store") {
		t.Fatalf("studio of a missing store: exit %d, %s", r.code, r.stderr)
	}
	e.ok("add", "--user", "alice", "I live in Lisbon.", "--at", "2026-01-10")
	u := startStudio(t, e, "--user", "alice")
	if !strings.HasSuffix(u, "/studio/u/alice/") {
		t.Fatalf("printed %q, want the timeline of alice", u)
	}
	if code, body := fetch(t, http.DefaultClient, u); code != 200 || !strings.Contains(body, "Lisbon") {
		t.Fatalf("GET %s: %d\n%s", u, code, body)
	}
}

func TestStudioCommandToken(t *testing.T) {
	e := newEnv(t)
	e.ok("add", "--user", "alice", "I live in Lisbon.", "--at", "2026-01-10")
	token := "studio-test-token-0123456789"
	e.vars = append(e.vars, "MEMOR_TOKEN="+token)
	u := startStudio(t, e)
	if !strings.Contains(u, "/studio/login?token="+token) {
		t.Fatalf("printed %q, want the login URL", u)
	}
	base := u[:strings.Index(u, "/studio/")]
	if code, _ := fetch(t, http.DefaultClient, base+"/studio/"); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d, want 401", code)
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	if code, body := fetch(t, browser, u); code != 200 || !strings.Contains(body, `data-user="alice"`) {
		t.Fatalf("the login URL: %d\n%s", code, body)
	}
	if code, body := fetch(t, browser, base+"/studio/u/alice/"); code != 200 || !strings.Contains(body, "Lisbon") {
		t.Errorf("with the session: %d\n%s", code, body)
	}
}
