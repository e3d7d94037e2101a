package memor

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

var errStop = errors.New("stop")

func (e *Engine) validUser(user string) error {
	switch {
	case user == "":
		return fmt.Errorf("%w: empty", ErrInvalidUser)
	case len(user) > MaxUserBytes:
		return fmt.Errorf("%w: %d bytes (max %d)", ErrInvalidUser, len(user), MaxUserBytes)
	case !utf8.ValidString(user):
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidUser)
	}
	return nil
}

func (e *Engine) validText(text string) error {
	switch {
	case len(text) > e.opts.MaxTextBytes:
		return fmt.Errorf("%w: text of %d bytes (max %d)", ErrTooLarge, len(text), e.opts.MaxTextBytes)
	case !utf8.ValidString(text):
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidText)
	}
	return nil
}

// episodeTime defaults a zero time to now and checks the range.
func (e *Engine) episodeTime(t time.Time) (time.Time, error) {
	if t.IsZero() {
		return e.clock().UTC(), nil
	}
	if err := checkTime(t, "episode time"); err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}
