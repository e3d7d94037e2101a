package server

import (
	"fmt"
	"strings"
	"time"

	"github.com/memor-db/memor"
)

// ParseTime parses an instant given as RFC 3339 (with or without fractional
// seconds) or as a bare date YYYY-MM-DD, meaning midnight UTC. An empty
// string gives def. The error wraps memor.ErrInvalidTime.
func ParseTime(s string, def time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return def, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%w: %q is neither RFC 3339 (2026-02-01T09:00:00Z) nor a date (2026-02-01)", memor.ErrInvalidTime, s)
}
