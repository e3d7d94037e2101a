package cli_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestProgressLines: off a terminal, the long commands print a plain line
// every MEMOR_PROGRESS_INTERVAL to stderr, with the count, the percentage,
// the rate and an ETA, and a last line at the end; stdout keeps only the
// result. Without the variable a command shorter than the default
// interval prints none (TestExportImport checks that stderr stays empty).
func TestProgressLines(t *testing.T) {
	t.Parallel()
	a := newEnv(t)
	for i := range 6 {
		a.ok("add", fmt.Sprintf("I live in City%d.", i), "--user", fmt.Sprint("u", i%3))
	}
	a.vars = append(a.vars, "MEMOR_PROGRESS_INTERVAL=1ns")
	line := func(cmd, unit string) *regexp.Regexp {
		// "memor: rebuild u0: 1/2 episodes (50%), 77 episodes/s, ETA 0s",
		// "memor: import 2 episodes: 294 B/588 B (50%), 8.6 KiB/s, ETA 0s"
		if unit == "bytes" {
			return regexp.MustCompile(`(?m)^memor: ` + cmd + `[^:]*: [\d.]+ [KMG]?i?B/[\d.]+ [KMG]?i?B \(\d+%\), [\d.]+ [KMG]?i?B/s, ETA (\d+(\.\d+)?[mµn]?s|unknown)$`)
		}
		return regexp.MustCompile(`(?m)^memor: ` + cmd + `[^:]*: \d+/\d+ ` + unit + ` \(\d+%\), \d+ ` + unit + `/s, ETA (\d+(\.\d+)?[mµn]?s|unknown)$`)
	}
	check := func(cmd string, r result, re *regexp.Regexp, min int) {
		t.Helper()
		if r.code != 0 {
			t.Fatalf("%s: exit %d: %s", cmd, r.code, r.stderr)
		}
		if n := len(re.FindAllString(r.stderr, -1)); n < min {
			t.Errorf("%s: %d progress lines matching %v, want at least %d:\n%s", cmd, n, re, min, r.stderr)
		}
		if strings.Contains(r.stdout, "memor: "+cmd) || strings.Contains(r.stderr, "\r") {
			t.Errorf("%s: progress on stdout or drawn off a terminal: stdout %q stderr %q", cmd, r.stdout, r.stderr)
		}
	}
	r := a.run("", "rebuild", "--all")
	check("rebuild", r, line("rebuild", "episodes"), 6)
	if !strings.Contains(r.stderr, "memor: rebuild u2: 2/2 episodes (100%)") {
		t.Errorf("rebuild: no line for u2's last episode:\n%s", r.stderr)
	}
	check("check", a.run("", "check"), line("check", "users"), 3)
	file := filepath.Join(t.TempDir(), "dump.jsonl")
	check("export", a.run("", "export", "-o", file), line("export", "episodes"), 1)
	b := newEnv(t)
	b.vars = append(b.vars, "MEMOR_PROGRESS_INTERVAL=1ns")
	r = b.run("", "import", file)
	check("import", r, line("import", "bytes"), 2)
	if !strings.Contains(r.stdout, "imported 6 episodes") {
		t.Errorf("import: %q", r.stdout)
	}

	a.vars[len(a.vars)-1] = "MEMOR_PROGRESS_INTERVAL=off"
	if r := a.run("", "rebuild", "--all"); r.code != 0 || r.stderr != "" {
		t.Errorf("MEMOR_PROGRESS_INTERVAL=off: exit %d, stderr %q", r.code, r.stderr)
	}
	a.vars[len(a.vars)-1] = "MEMOR_PROGRESS_INTERVAL=often"
	if r := a.run("", "rebuild", "--all"); r.code != 0 || !strings.Contains(r.stderr, `MEMOR_PROGRESS_INTERVAL="often" is not a duration`) {
		t.Errorf("a bad MEMOR_PROGRESS_INTERVAL: exit %d, stderr %q", r.code, r.stderr)
	}
}
