// Package instant is the range of instants memor accepts and their int64
// form, shared by every encoding of an instant (records, keys, the
// resolver, the temporal index) and every parser of one (the HTTP and
// MCP servers, the CLI, the LLM answer decoder).
//
// memor accepts [Min, Max): 1678-01-01T00:00:00Z included to
// 2262-01-01T00:00:00Z excluded, whole years inside what int64 Unix
// nanoseconds can hold (1677-09-21 to 2262-04-11). The Unix epoch and
// every instant before it are ordinary instants: 0 ns is 1970-01-01, not
// "unset". "No instant" (an open ValidTo or ExpiredAt, a time left unset)
// is None, math.MaxInt64, which no accepted instant can take and which
// sorts after all of them.
package instant

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrInvalid reports an instant outside [Min, Max) (memor.ErrInvalidTime
// is the same value).
var ErrInvalid = errors.New("memor: invalid time")

const (
	// MinNanos is Min in Unix nanoseconds.
	MinNanos int64 = -9214560000000000000
	// MaxNanos is Max in Unix nanoseconds.
	MaxNanos int64 = 9214646400000000000
	// None is the int64 of no instant: an open end or an unset time.
	None int64 = math.MaxInt64
)

// Min is the first instant accepted, 1678-01-01T00:00:00Z.
func Min() time.Time { return time.Unix(0, MinNanos).UTC() }

// Max is the first instant refused after Min, 2262-01-01T00:00:00Z.
func Max() time.Time { return time.Unix(0, MaxNanos).UTC() }

// Valid reports whether t is an accepted instant. The zero time (year 1)
// is not one.
func Valid(t time.Time) bool { return !t.Before(Min()) && t.Before(Max()) }

// Check returns nil for an accepted instant and an error wrapping
// ErrInvalid naming what (for instance "valid time") otherwise.
func Check(t time.Time, what string) error {
	if Valid(t) {
		return nil
	}
	return fmt.Errorf("%w: %s %s outside [1678-01-01, 2262-01-01)", ErrInvalid, what, t.Format(time.RFC3339Nano))
}

// Nanos returns t in Unix nanoseconds, and None for the zero time. t must
// be zero or accepted.
func Nanos(t time.Time) int64 {
	if t.IsZero() {
		return None
	}
	return t.UnixNano()
}

// FromNanos inverts Nanos: None is the zero time, anything else the
// instant in UTC.
func FromNanos(n int64) time.Time {
	if n == None {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
