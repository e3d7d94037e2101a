package suite

import (
	"bufio"
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed testdata/*.case
var caseFiles embed.FS

// DefaultUser is the user of a turn or question that names none.
const DefaultUser = "me"

var loadCases = sync.OnceValues(func() ([]Case, error) {
	names, err := fs.Glob(caseFiles, "testdata/*.case")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCase, err)
	}
	var all []Case
	for _, name := range names {
		data, err := caseFiles.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCase, err)
		}
		cs, err := Parse(path.Base(name), data)
		if err != nil {
			return nil, err
		}
		all = append(all, cs...)
	}
	if err := validateSet(all); err != nil {
		return nil, err
	}
	return all, nil
})

// Cases returns the built-in cases (testdata/*.case, embedded), in file
// order. The slice is a fresh copy on each call.
func Cases() ([]Case, error) {
	cs, err := loadCases()
	if err != nil {
		return nil, err
	}
	out := make([]Case, len(cs))
	for i, c := range cs {
		c.Turns = slices.Clone(c.Turns)
		c.Expect = slices.Clone(c.Expect)
		c.Stale = slices.Clone(c.Stale)
		c.Gone = slices.Clone(c.Gone)
		out[i] = c
	}
	return out, nil
}

var kebab = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// Parse reads cases in the testdata format described in the package
// documentation. file names the source in errors and in each Case.
func Parse(file string, data []byte) ([]Case, error) {
	var (
		out []Case
		cur *Case
	)
	finish := func() error {
		if cur == nil {
			return nil
		}
		if cur.K == 0 {
			cur.K = DefaultK
		}
		if err := validate(*cur); err != nil {
			return err
		}
		out = append(out, *cur)
		cur = nil
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		key, rest, _ := strings.Cut(text, " ")
		if k, ok := strings.CutSuffix(key, ":"); ok && k == "ask" { // "ask: question" names no user
			key, rest = k, ": "+rest
		}
		rest = strings.TrimSpace(rest)
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: %s:%d: %s", ErrCase, file, line, fmt.Sprintf(format, args...))
		}
		if key == "case" {
			if err := finish(); err != nil {
				return nil, err
			}
			cur = &Case{Name: rest, File: file, Line: line}
			continue
		}
		if cur == nil {
			return nil, bad("%q before the first case line", key)
		}
		switch key {
		case "category":
			cur.Category = rest
		case "rule":
			cur.Rule = rest
		case "turn":
			ts, after, _ := strings.Cut(rest, " ")
			if strings.HasSuffix(ts, ":") { // "turn 2025-01-10: text" names no user
				ts, after = ts[:len(ts)-1], ": "+after
			}
			at, err := parseTime(ts)
			if err != nil {
				return nil, bad("turn time: %v", err)
			}
			user, said, err := splitUser(after)
			if err != nil {
				return nil, bad("turn: %v", err)
			}
			if said == "" {
				return nil, bad("turn without text")
			}
			cur.Turns = append(cur.Turns, Turn{User: user, At: at, Text: said})
		case "ask":
			if cur.Question != "" {
				return nil, bad("second ask")
			}
			user, q, err := splitUser(rest)
			if err != nil {
				return nil, bad("ask: %v", err)
			}
			cur.User, cur.Question = user, q
		case "expect":
			cur.Expect = append(cur.Expect, rest)
		case "stale":
			cur.Stale = append(cur.Stale, rest)
		case "gone":
			cur.Gone = append(cur.Gone, rest)
		case "abstain":
			if rest != "" {
				return nil, bad("abstain takes no argument")
			}
			cur.Abstain = true
		case "k":
			k, err := strconv.Atoi(rest)
			if err != nil || k <= 0 {
				return nil, bad("k must be a positive integer, got %q", rest)
			}
			cur.K = k
		default:
			return nil, bad("unknown key %q", key)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCase, file, err)
	}
	if err := finish(); err != nil {
		return nil, err
	}
	return out, nil
}

// parseTime accepts RFC 3339 or a bare date (midnight UTC).
func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Parse(time.DateOnly, s)
}

// splitUser splits `[user]: text`; user is a bare word or a Go-quoted
// string (so that adversarial IDs such as "" or "a\x00b" can be written).
func splitUser(s string) (user, text string, err error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, ":") {
		return DefaultUser, strings.TrimSpace(s[1:]), nil
	}
	if strings.HasPrefix(s, `"`) {
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return "", "", fmt.Errorf("quoted user: %w", err)
		}
		user, _ = strconv.Unquote(q)
		s = s[len(q):]
	} else {
		i := strings.IndexByte(s, ':')
		if i < 0 {
			return "", "", fmt.Errorf("missing ':' after the user")
		}
		user, s = s[:i], s[i:]
		if strings.ContainsAny(user, " \t") {
			return "", "", fmt.Errorf("user %q has spaces; quote it", user)
		}
	}
	if !strings.HasPrefix(s, ":") {
		return "", "", fmt.Errorf("missing ':' after the user")
	}
	return user, strings.TrimSpace(s[1:]), nil
}

func validate(c Case) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s:%d: case %q: %s", ErrCase, c.File, c.Line, c.Name, fmt.Sprintf(format, args...))
	}
	switch {
	case !kebab.MatchString(c.Name):
		return bad("name must be kebab-case")
	case !kebab.MatchString(c.Category):
		return bad("category must be kebab-case")
	case c.Rule == "":
		return bad("no rule")
	case c.Question == "":
		return bad("no ask")
	case c.Abstain && len(c.Expect) > 0:
		return bad("abstain and expect exclude each other")
	case !c.Abstain && len(c.Expect) == 0:
		return bad("needs expect (or abstain)")
	case c.Abstain && len(c.Stale) == 0:
		return bad("an abstention needs the stale strings that must not appear")
	}
	for _, e := range c.Expect {
		for _, s := range c.Stale {
			if Contains(e, s) || Contains(s, e) {
				return bad("expect %q and stale %q overlap", e, s)
			}
		}
	}
	return nil
}

func validateSet(cs []Case) error {
	seen := map[string]string{}
	for _, c := range cs {
		if prev, ok := seen[c.Name]; ok {
			return fmt.Errorf("%w: case %q in %s:%d already in %s", ErrCase, c.Name, c.File, c.Line, prev)
		}
		seen[c.Name] = fmt.Sprintf("%s:%d", c.File, c.Line)
	}
	return nil
}
