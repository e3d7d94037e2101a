package instant

import (
	"fmt"
	"strings"
	"time"
)

// Parse parses an instant given as RFC 3339 (with or without fractional
// seconds) or as a bare date YYYY-MM-DD, meaning midnight UTC: the one
// syntax of a time argument in every front end (the HTTP and MCP servers,
// the CLI). An empty string gives def. An instant memor does not accept
// (before 1678-01-01 or from 2262-01-01 on) is an error: 0001-01-01 is
// Go's zero time, which the library reads as "unset" (now), not a date.
// The error wraps ErrInvalid (memor.ErrInvalidTime).
func Parse(s string, def time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return def, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		if t, err = time.Parse(time.DateOnly, s); err != nil {
			return time.Time{}, fmt.Errorf("%w: %q is neither RFC 3339 (2026-02-01T09:00:00Z) nor a date (2026-02-01)", ErrInvalid, s)
		}
	}
	if err := Check(t, "time"); err != nil {
		return time.Time{}, err
	}
	return t, nil
}
