package cli

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/memor-db/memor"
)

// Progress of the long commands (import, export, rebuild, check) goes to
// stderr, never stdout. On a terminal it is a bar (github.com/schollz/
// progressbar: it redraws one line, throttled, with the count, the rate
// and the elapsed and remaining time). Anywhere else (a log, CI) it is a
// plain line every MEMOR_PROGRESS_INTERVAL (default 5s; "off" or 0 for
// none), so a command that ends sooner prints nothing.

// defaultProgressInterval is how often plain progress lines are printed.
const defaultProgressInterval = 5 * time.Second

// bar reports one command's progress on stderr. A nil *bar reports
// nothing, so callers need not check whether there is one.
type bar struct {
	w           io.Writer
	label, unit string
	note        string
	done, total int64

	// On a terminal: the drawn bar, for the current run (a new one
	// starts when the total changes or the count goes back).
	term bool
	pb   *progressbar.ProgressBar

	// Off a terminal: a line every interval.
	every       time.Duration
	start, last time.Time
	printed     bool
	// before: the units finished in earlier runs (the users already
	// rebuilt), so that the rate is the command's, not the run's.
	before int64
	// shown is the state of the last line printed.
	shown struct {
		note        string
		done, total int64
	}
}

// progressIn returns the progress of the command label ("rebuild")
// counting unit ("episodes", "users", "bytes"): a bar on a terminal,
// periodic lines elsewhere, nil if lines are off.
func (a *app) progressIn(label, unit string) *bar {
	b := &bar{w: a.io.Err, label: label, unit: unit}
	if isTerminal(a.io.Err) {
		b.term = true
		return b
	}
	b.every = defaultProgressInterval
	if v := a.io.Getenv("MEMOR_PROGRESS_INTERVAL"); v != "" {
		d, err := time.ParseDuration(v)
		switch {
		case v == "off" || (err == nil && d == 0):
			return nil
		case err != nil || d < 0:
			fmt.Fprintf(a.io.Err, "memor: MEMOR_PROGRESS_INTERVAL=%q is not a duration (e.g. 10s) or \"off\"; using %v\n", v, defaultProgressInterval)
		default:
			b.every = d
		}
	}
	b.start = time.Now()
	b.last = b.start
	return b
}

// report is a memor.WithProgress callback that feeds the bar.
func (b *bar) report(p memor.Progress) {
	b.set(p.User, p.Done, p.Total)
}

// set records that done of total units are finished, working on note
// (a user, say).
func (b *bar) set(note string, done, total int) {
	if b == nil || total <= 0 {
		return
	}
	d, t := int64(done), int64(total)
	// A new run: another total, a count that goes back, or the same
	// count of another subject (the next user's first episode).
	restart := t != b.total || d < b.done || (d == b.done && note != b.note)
	b.note = note
	if b.term {
		if restart || b.pb == nil {
			b.finishBar()
			b.pb = b.newBar(t)
		}
		if !b.pb.IsFinished() { // a finished bar would draw a second line
			b.pb.Describe(b.describe())
			b.pb.Set64(d)
		}
	} else {
		now := time.Now()
		if restart && b.total > 0 {
			b.before += b.done
		}
		b.done, b.total = d, t
		if now.Sub(b.last) >= b.every && b.changed() {
			b.last = now
			b.line(now)
		}
	}
	b.done, b.total = d, t
}

// describe is the bar's label with its note, short enough for one line.
func (b *bar) describe() string {
	note := b.note
	if r := []rune(note); len(r) > 24 {
		note = string(r[:23]) + "…"
	}
	if note == "" {
		return b.label
	}
	return b.label + " " + note
}

func (b *bar) newBar(total int64) *progressbar.ProgressBar {
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(b.w),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionSetTheme(progressbar.Theme{Saucer: "=", SaucerPadding: " ", BarStart: "[", BarEnd: "]"}),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(b.w) }),
	}
	if b.unit == "bytes" {
		opts = append(opts, progressbar.OptionShowBytes(true)) // counts and rate in B, kB, MB
	} else {
		opts = append(opts, progressbar.OptionShowIts(), progressbar.OptionSetItsString(b.unit))
	}
	return progressbar.NewOptions64(total, opts...)
}

// finishBar ends the drawn bar's line where it stands, if it did not end
// at 100% (where it printed its own newline).
func (b *bar) finishBar() {
	if b.pb != nil && !b.pb.IsFinished() {
		b.pb.Exit()
		fmt.Fprintln(b.w)
	}
}

// line prints one plain progress line.
func (b *bar) line(now time.Time) {
	el := now.Sub(b.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(b.before+b.done) / el
	}
	eta := "unknown"
	if rate > 0 && b.total >= b.done {
		eta = (time.Duration(float64(b.total-b.done)/rate*float64(time.Second)) + time.Second/2).Truncate(time.Second).String()
	}
	count := fmt.Sprintf("%d/%d %s", b.done, b.total, b.unit)
	if b.unit == "bytes" {
		count = b.amount(b.done) + "/" + b.amount(b.total)
	}
	fmt.Fprintf(b.w, "memor: %s: %s (%d%%), %s/s, ETA %s\n", b.describe(), count,
		b.done*100/b.total, b.amount(int64(math.Round(rate))), eta)
	b.printed = true
	b.shown.note, b.shown.done, b.shown.total = b.note, b.done, b.total
}

// changed reports whether the state differs from the last line's.
func (b *bar) changed() bool {
	return b.shown.note != b.note || b.shown.done != b.done || b.shown.total != b.total
}

// amount renders n units: "12 episodes", "3.4 MB".
func (b *bar) amount(n int64) string {
	if b.unit != "bytes" {
		return fmt.Sprintf("%d %s", n, b.unit)
	}
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// finish completes the bar, or, off a terminal, prints the final line if
// any line was printed.
func (b *bar) finish() {
	if b == nil || b.total == 0 {
		return
	}
	if b.term {
		b.finishBar()
		return
	}
	if b.printed && b.changed() {
		b.line(time.Now())
	}
}
