package cli_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memor-db/memor/internal/syncbuf"
)

// mountTmpfs mounts a tmpfs of size on a new folder; the test is skipped
// unless it runs as root.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs (a full disk for real)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs (%v: %s)", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

// TestServeFullDisk runs `memor serve` on a store on a small tmpfs and
// fills the disk through HTTP writes: the failing write is a 503 with
// code "storage" (no panic in the log), later writes get it promptly, and
// SIGTERM makes the server exit within a few seconds. The store, with
// space back, passes `memor check`.
func TestServeFullDisk(t *testing.T) {
	mnt := mountTmpfs(t, "20m")
	e := newEnv(t)
	e.db = filepath.Join(mnt, "store")
	for i, v := range e.vars {
		if strings.HasPrefix(v, "MEMOR_DB=") {
			e.vars[i] = "MEMOR_DB=" + e.db
		}
	}
	cmd := exec.Command(memorBin, "serve", "--addr", "127.0.0.1:0")
	cmd.Env = e.vars
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	t.Cleanup(func() {
		if !exited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	var log syncbuf.Buffer
	sc := bufio.NewScanner(stderr)
	base := ""
	for sc.Scan() {
		log.Write(append(sc.Bytes(), '\n'))
		if m := regexp.MustCompile(`serving http://(\S+) `).FindStringSubmatch(sc.Text()); m != nil {
			base = "http://" + m[1]
			break
		}
	}
	if base == "" {
		t.Fatalf("memor serve did not announce its address: %s", log.String())
	}
	go io.Copy(&log, stderr)

	// Leave about 3 MB free.
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, int64(st.Bavail)*st.Bsize-3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	post := func(text string) (int, string, time.Duration) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"text": text, "wait": true})
		t0 := time.Now()
		resp, err := client.Post(base+"/v1/users/u/episodes", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("POST: %v (server log: %s)", err, log.String())
		}
		defer resp.Body.Close()
		var eb struct {
			Code string `json:"code"`
		}
		json.NewDecoder(resp.Body).Decode(&eb)
		return resp.StatusCode, eb.Code, time.Since(t0)
	}
	text := strings.Repeat("I live in Paris and my sister Ana works at the museum. ", 1200)
	status, code := 0, ""
	for i := 0; i < 500; i++ {
		if status, code, _ = post(fmt.Sprintf("%d %s", i, text[:60000])); status >= 300 {
			break
		}
	}
	if status != http.StatusServiceUnavailable || code != "storage" {
		t.Fatalf("the write that filled the disk: %d %q, want 503 storage (server log: %s)", status, code, log.String())
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if status, code, d := post("I moved to Rome."); status != http.StatusServiceUnavailable || code != "storage" || d > 2*time.Second {
			t.Errorf("a write after the failure: %d %q in %v, want a prompt 503 storage", status, code, d)
		}
	}
	t0 := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		exited = true
	case <-time.After(15 * time.Second):
		t.Fatalf("memor serve still running 15 s after SIGTERM (log: %s)", log.String())
	}
	t.Logf("exited %v after SIGTERM", time.Since(t0))
	if l := log.String(); strings.Contains(l, "panic") || !strings.Contains(l, "no space left on device") {
		t.Errorf("server log should name the cause and hold no panic:\n%s", l)
	}
	if out := e.ok("check"); !strings.HasPrefix(out, "ok") {
		t.Errorf("memor check after the full disk: %s", out)
	}
}
