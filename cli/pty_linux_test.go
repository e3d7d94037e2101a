package cli_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY returns the two ends of a new pseudo-terminal.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Skipf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("open the terminal end: %v", err)
	}
	return m, s
}

// runOnTTY runs memor with stderr on a terminal and returns stdout and
// what the terminal showed.
func runOnTTY(t *testing.T, e *env, args ...string) (stdout, screen string) {
	t.Helper()
	m, s := openPTY(t)
	defer m.Close()
	cmd := exec.Command(memorBin, args...)
	cmd.Env = e.vars
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, s
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.Close() // the child holds its copy; reads end when it exits
	var scr bytes.Buffer
	copied := make(chan struct{})
	go func() {
		io.Copy(&scr, m) // ends with EIO once the terminal end is closed
		close(copied)
	}()
	err := cmd.Wait()
	<-copied
	if err != nil {
		t.Fatalf("memor %s: %v\n%s", strings.Join(args, " "), err, scr.String())
	}
	return out.String(), scr.String()
}

// TestProgressOnTerminal: import, export, rebuild, check and reembed draw a
// progress bar with the count, the rate and the elapsed and remaining
// time when stderr is a terminal, never on stdout (the tests elsewhere
// check that they are quiet when it is not).
func TestProgressOnTerminal(t *testing.T) {
	a := newEnv(t)
	for i := range 6 {
		a.ok("add", fmt.Sprintf("I live in City%d.", i), "--at", fmt.Sprintf("2025-01-%02dT00:00:00Z", i%28+1), "--user", fmt.Sprint("u", i%3))
	}
	// "export episodes 100% [====…====] (6/6, 40 episodes/s) [0s]", in bytes
	// "(822/822 B, 5.3 MB/s)".
	drawn := func(cmd, rate string) *regexp.Regexp {
		return regexp.MustCompile(`\r` + cmd + `[^\r]* 100% \[={30}\] \(\d+/\d+[^,]*, [\d.]+ ` + rate + `/(s|min|hr)\)`)
	}
	eta := regexp.MustCompile(`\[\d+s:\d+s\]`)
	file := filepath.Join(t.TempDir(), "dump.jsonl")
	out, screen := runOnTTY(t, a, "export", "-o", file)
	if !strings.Contains(out, "exported 6 episodes of 3 user(s)") {
		t.Errorf("export: %s", out)
	}
	if !drawn("export", "episodes").MatchString(screen) {
		t.Errorf("export on a terminal drew no complete progress bar with a rate: %q", screen)
	}

	b := newEnv(t)
	out, screen = runOnTTY(t, b, "import", file)
	if !strings.Contains(out, "imported 6 episodes of 3 user(s)") {
		t.Errorf("import: %s", out)
	}
	if !drawn("import", "[kMG]?B").MatchString(screen) || !strings.Contains(screen, "B/s") {
		t.Errorf("import on a terminal drew no complete progress bar in bytes: %q", screen)
	}
	if strings.Contains(out, "\r") || strings.Contains(out, "[=") {
		t.Errorf("progress went to stdout: %q", out)
	}

	_, screen = runOnTTY(t, b, "rebuild", "--all")
	if !drawn("rebuild", "episodes").MatchString(screen) {
		t.Errorf("rebuild on a terminal drew no complete progress bar: %q", screen)
	}
	// One bar per user, each ending its line.
	if n := strings.Count(screen, "100% ["); n != 3 {
		t.Errorf("rebuild --all of 3 users drew %d complete bars, want 3: %q", n, screen)
	}
	if !eta.MatchString(screen) {
		t.Errorf("no elapsed:remaining time in the bars: %q", screen)
	}
	out, screen = runOnTTY(t, b, "check")
	if !strings.Contains(out, "ok:") || !drawn("check", "users").MatchString(screen) {
		t.Errorf("check on a terminal: %q, screen %q", out, screen)
	}
	out, screen = runOnTTY(t, b, "reembed")
	if !strings.Contains(out, "reembedded with") || !drawn("reembed", "users").MatchString(screen) {
		t.Errorf("reembed on a terminal: %q, screen %q", out, screen)
	}
}
