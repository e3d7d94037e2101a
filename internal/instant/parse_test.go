package instant

import (
	"errors"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	t.Parallel()
	def := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"":                            def,
		"  2026-02-01 ":               time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC),
		"2026-02-01":                  time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC),
		"2026-02-01T09:30:00Z":        time.Date(2026, 2, 1, 9, 30, 0, 0, time.UTC),
		"2026-02-01T09:30:00.5+02:00": time.Date(2026, 2, 1, 7, 30, 0, 5e8, time.UTC),
		"1969-12-31T23:59:59Z":        time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC),
	} {
		got, err := Parse(in, def)
		if err != nil || !got.Equal(want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"yesterday", "2026-02-30", "01/02/2026", "2026-02-01 09:30",
		"0001-01-01", "0001-01-01T00:00:00Z", "1677-12-31T23:59:59.999999999Z", "2262-01-01", "9999-12-31T00:00:00+14:00"} {
		if _, err := Parse(in, def); !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) = %v, want ErrInvalid", in, err)
		}
	}
}
