package memor

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/memor-db/memor/extract"
)

var errStop = errors.New("stop")

// ValidUser reports whether id may name a user, as an error wrapping
// ErrInvalidUser that says why not. It is the one rule for user IDs: every
// user-scoped method of the engine applies it, and so do the HTTP API, the
// MCP tools and the CLI, which all reach the engine with the ID as given.
//
// A user ID is 1 to MaxUserBytes bytes of valid UTF-8 with no control
// character (Unicode category Cc: U+0000–U+001F, U+007F–U+009F, so no NUL,
// tab or newline) and at least one character that is neither white space
// nor an invisible format character (category Cf, such as U+200B). IDs are
// compared byte for byte: no trimming, case folding or normalisation, so
// "Ana", "ana" and " ana" are three users.
func ValidUser(id string) error {
	return checkName(id, MaxUserBytes, ErrInvalidUser, "only white space", func(r rune) bool {
		return !unicode.IsSpace(r) && !unicode.Is(unicode.Cf, r)
	})
}

func (e *Engine) validUser(user string) error { return ValidUser(user) }

// MaxSpeakerBytes bounds a speaker's name (see Speaker).
const MaxSpeakerBytes = 256

// ValidSpeaker reports whether name may name a speaker, as an error
// wrapping ErrInvalidSpeaker that says why not. A speaker's name is 1 to
// MaxSpeakerBytes bytes of valid UTF-8 with no control character (so no
// tab or newline) and at least one letter or digit. It becomes the
// subject of the speaker's facts, so it is stored as given and compared
// the way subjects are: "Caroline" and " caroline" are one speaker.
func ValidSpeaker(name string) error {
	return checkName(name, MaxSpeakerBytes, ErrInvalidSpeaker, "no letter or digit", func(r rune) bool {
		return unicode.IsLetter(r) || unicode.IsDigit(r)
	})
}

// checkName is the rule user IDs and speakers' names share: 1 to
// maxBytes bytes of valid UTF-8, no control character, and at least one
// rune that counts (else the error says none). Its errors wrap invalid.
func checkName(s string, maxBytes int, invalid error, none string, counts func(rune) bool) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: empty", invalid)
	case len(s) > maxBytes:
		return fmt.Errorf("%w: %d bytes (max %d)", invalid, len(s), maxBytes)
	case !utf8.ValidString(s):
		return fmt.Errorf("%w: not valid UTF-8", invalid)
	}
	counted := false
	for i, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: control character %U at byte %d", invalid, r, i)
		}
		if !counted && counts(r) {
			counted = true
		}
	}
	if !counted {
		return fmt.Errorf("%w: %s", invalid, none)
	}
	return nil
}

// storedUser is the rule for the two calls that must still reach a user an
// earlier version stored under an ID that ValidUser now refuses (only
// white space, or a control character): Episodes, so that export keeps
// every episode, and Forget, so that the user can still be erased. It is
// the rule those versions applied.
func storedUser(id string) error {
	if err := ValidUser(id); err == nil || id == "" || len(id) > MaxUserBytes || !utf8.ValidString(id) {
		return err
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

// CheckEpisode reports, without writing anything, whether replaying ep
// would be refused as invalid input, with the error the replaying call
// would return: Add of its text for EpisodeText; for EpisodeFacts,
// AssertBatch of each run of Assert ops and End of each End op; Correct
// for EpisodeCorrect; Accept for EpisodeAccept. A nil result does not promise that the replay
// succeeds: storage can fail, and a correction can name a fact the store
// does not hold (ErrNotFound). `memor import` checks every episode of its
// input this way before it writes the first.
func (e *Engine) CheckEpisode(ep Episode) error {
	if err := e.validUser(ep.User); err != nil {
		return err
	}
	if ep.Key != "" {
		if ep.Kind != EpisodeText {
			return fmt.Errorf("%w: only a text episode is added under a key", ErrInvalidIdempotencyKey)
		}
		if err := validIdempotencyKey(ep.Key); err != nil {
			return err
		}
	}
	switch ep.Kind {
	case EpisodeText:
		if err := e.validText(ep.Text); err != nil {
			return err
		}
		if strings.TrimSpace(ep.Text) == "" {
			return fmt.Errorf("%w: empty text", ErrInvalidText)
		}
		if ep.Speaker != "" {
			if err := ValidSpeaker(ep.Speaker); err != nil {
				return err
			}
		}
		if !ep.At.IsZero() {
			return checkTime(ep.At, "episode time")
		}
	case EpisodeFacts:
		if len(ep.Ops) == 0 {
			return fmt.Errorf("%w: no facts", ErrInvalidFact)
		}
		for i, op := range ep.Ops {
			if err := validOp(op); err != nil {
				return fmt.Errorf("op %d: %w", i, err)
			}
			// AssertBatch checks the text of a single fact.
			alone := op.Kind == extract.Assert && (i == 0 || ep.Ops[i-1].Kind != extract.Assert) &&
				(i == len(ep.Ops)-1 || ep.Ops[i+1].Kind != extract.Assert)
			if alone {
				if err := e.validText(renderOp(op)); err != nil {
					return fmt.Errorf("op %d: %w", i, err)
				}
			}
		}
	case EpisodeCorrect:
		if ep.Correct == nil {
			return fmt.Errorf("%w: a correction episode without its fact", ErrInvalidFact)
		}
	case EpisodeAccept:
		if ep.Accept == nil {
			return fmt.Errorf("%w: an accept episode without its fact", ErrInvalidFact)
		}
	default:
		return fmt.Errorf("%w: unknown episode kind %d", ErrInvalidFact, ep.Kind)
	}
	return nil
}
