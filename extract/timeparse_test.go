package extract

import (
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	// Saturday 2026-07-11 15:04 UTC.
	at := time.Date(2026, 7, 11, 15, 4, 0, 0, time.UTC)
	d := func(y int, m time.Month, day int) time.Time { return time.Date(y, m, day, 0, 0, 0, 0, time.UTC) }
	tests := []struct {
		expr string
		want time.Time
		ok   bool
	}{
		{"today", at, true},
		{"now", at, true},
		{"yesterday", at.AddDate(0, 0, -1), true},
		{"last night", at.AddDate(0, 0, -1), true},
		{"the day before yesterday", at.AddDate(0, 0, -2), true},
		{"this morning", at, true},
		{"last week", at.AddDate(0, 0, -7), true},
		{"last weekend", d(2026, 7, 4), true}, // said on a Saturday: the weekend before
		{"last month", time.Date(2026, 6, 11, 15, 4, 0, 0, time.UTC), true},
		{"last year", time.Date(2025, 7, 11, 15, 4, 0, 0, time.UTC), true},
		{"last Monday", d(2026, 7, 6), true},
		{"last Saturday", d(2026, 7, 4), true},
		{"last March", d(2026, 3, 1), true},
		{"last December", d(2025, 12, 1), true},
		{"last July", d(2025, 7, 1), true},
		{"3 days ago", at.AddDate(0, 0, -3), true},
		{"two weeks ago", at.AddDate(0, 0, -14), true},
		{"a month ago", time.Date(2026, 6, 11, 15, 4, 0, 0, time.UTC), true},
		{"a couple of months ago", time.Date(2026, 5, 11, 15, 4, 0, 0, time.UTC), true},
		{"a few years ago", time.Date(2023, 7, 11, 15, 4, 0, 0, time.UTC), true},
		{"five hours ago", at.Add(-5 * time.Hour), true},
		{"a decade ago", time.Date(2016, 7, 11, 15, 4, 0, 0, time.UTC), true},
		{"for 5 years", time.Date(2021, 7, 11, 15, 4, 0, 0, time.UTC), true},
		{"for the past two months", time.Date(2026, 5, 11, 15, 4, 0, 0, time.UTC), true},
		{"over the last year", time.Date(2025, 7, 11, 15, 4, 0, 0, time.UTC), true},
		{"since March 2024", d(2024, 3, 1), true},
		{"since 2020", d(2020, 1, 1), true},
		{"since January", d(2026, 1, 1), true},
		{"since September", d(2025, 9, 1), true},
		{"since last year", time.Date(2025, 7, 11, 15, 4, 0, 0, time.UTC), true},
		{"ever since 2019", d(2019, 1, 1), true},
		{"on 2026-07-11", d(2026, 7, 11), true},
		{"2026-07-01", d(2026, 7, 1), true},
		{"on July 4", d(2026, 7, 4), true},
		{"on July 4th, 2025", d(2025, 7, 4), true},
		{"July 4 2025", d(2025, 7, 4), true},
		{"on 4 July 2025", d(2025, 7, 4), true},
		{"on the 4th of July", time.Time{}, false},
		{"4th of July", d(2026, 7, 4), true},
		{"on August 3", d(2025, 8, 3), true}, // not yet this year: last year's
		{"on Monday", d(2026, 7, 6), true},
		{"on Saturday", d(2026, 7, 11), true},
		{"in January", d(2026, 1, 1), true},
		{"in July", d(2026, 7, 1), true},
		{"in December", d(2025, 12, 1), true},
		{"in May", d(2026, 5, 1), true},
		{"in March 2024", d(2024, 3, 1), true},
		{"in 2019", d(2019, 1, 1), true},
		{"back in 2015", d(2015, 1, 1), true},
		{"as of June", d(2026, 6, 1), true},
		{"March 2024", d(2024, 3, 1), true},
		{"on February 29, 2024", d(2024, 2, 29), true},
		{"Sept 3rd", d(2025, 9, 3), true},
		// Rejected: future, invalid, partial or not a time at all.
		{"tomorrow", time.Time{}, false},
		{"next week", time.Time{}, false},
		{"next Monday", time.Time{}, false},
		{"in two weeks", time.Time{}, false},
		{"two weeks from now", time.Time{}, false},
		{"on 2030-01-01", time.Time{}, false},
		{"in 2031", time.Time{}, false},
		{"on February 30", time.Time{}, false},
		{"on February 29, 2025", time.Time{}, false},
		{"2026-13-01", time.Time{}, false},
		{"January", time.Time{}, false},
		{"may", time.Time{}, false},
		{"2019", time.Time{}, false},
		{"in Paris", time.Time{}, false},
		{"for Google", time.Time{}, false},
		{"last", time.Time{}, false},
		{"last name", time.Time{}, false},
		{"ago", time.Time{}, false},
		{"", time.Time{}, false},
		{"yesterday morning", time.Time{}, false},
		{"on 32 July", time.Time{}, false},
		{"since 0999", time.Time{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseTime(tt.expr, at)
		if ok != tt.ok || !got.Equal(tt.want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v, %v", tt.expr, got, ok, tt.want, tt.ok)
		}
	}
}

// One month before March 31 clamps to the end of February instead of
// overflowing into March.
func TestParseTimeClampsMonths(t *testing.T) {
	at := time.Date(2026, 3, 31, 9, 0, 0, 0, time.UTC)
	got, ok := ParseTime("last month", at)
	if want := time.Date(2026, 2, 28, 9, 0, 0, 0, time.UTC); !ok || !got.Equal(want) {
		t.Fatalf("got %v %v, want %v", got, ok, want)
	}
	got, ok = ParseTime("a year ago", time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC))
	if want := time.Date(2027, 2, 28, 0, 0, 0, 0, time.UTC); !ok || !got.Equal(want) {
		t.Fatalf("got %v %v, want %v", got, ok, want)
	}
}

func TestParseTimeLastWeekendOnWeekdays(t *testing.T) {
	for day := 6; day <= 12; day++ { // Mon 2026-07-06 .. Sun 2026-07-12
		at := time.Date(2026, 7, day, 12, 0, 0, 0, time.UTC)
		got, ok := ParseTime("last weekend", at)
		if !ok || got.Weekday() != time.Saturday || !got.Before(at) || at.Sub(got) > 9*24*time.Hour || at.Sub(got) < 36*time.Hour {
			t.Errorf("at %s: last weekend = %v %v", at.Weekday(), got, ok)
		}
	}
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"last weekend", "since March 2024", "on 2026-07-11", "in January",
		"3 days ago", "for the past two months", "July 4th, 2025", "next week", "in 9999", "a couple of"} {
		f.Add(s, int64(1783782240))
	}
	f.Fuzz(func(t *testing.T, expr string, unix int64) {
		// Keep at within years 1..9999 so time arithmetic stays meaningful.
		at := time.Unix(unix%(250000000000), 0).UTC()
		got, ok := ParseTime(expr, at)
		if !ok {
			if !got.IsZero() {
				t.Fatalf("ParseTime(%q) not ok but returned %v", expr, got)
			}
			return
		}
		if got.After(at) {
			t.Fatalf("ParseTime(%q, %v) = %v: in the future", expr, at, got)
		}
		again, ok2 := ParseTime(expr, at)
		if !ok2 || !again.Equal(got) {
			t.Fatalf("ParseTime(%q) not deterministic", expr)
		}
	})
}
