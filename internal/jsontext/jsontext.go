// Package jsontext finds what encoding/json would decode lossily. It
// replaces invalid UTF-8 and the \u escape of half a UTF-16 surrogate pair
// with U+FFFD without an error, so "\xff", "\xfe", "\ud800" and "\udfff"
// all decode to the same string: an input that is to be decoded faithfully
// (a user ID, a text) must be refused instead.
package jsontext

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Lossy returns an error saying where the JSON text b holds invalid UTF-8
// or an unpaired surrogate escape, or nil if encoding/json decodes every
// string of b as written. b must be valid JSON for the escapes to be found.
func Lossy(b []byte) error {
	if !utf8.Valid(b) {
		for i := 0; i < len(b); {
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return fmt.Errorf("not valid UTF-8 at byte %d", i)
			}
			i += n
		}
	}
	if off, ok := pairedSurrogates(b); !ok {
		return fmt.Errorf("a string holds half a UTF-16 surrogate pair at byte %d", off)
	}
	return nil
}

// pairedSurrogates scans the \u escapes of valid JSON and reports the
// offset of the first half of a surrogate pair that is not paired.
func pairedSurrogates(b []byte) (int, bool) {
	in := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !in {
			in = c == '"'
			continue
		}
		switch c {
		case '"':
			in = false
		case '\\':
			if i+1 >= len(b) {
				return i, false
			}
			if b[i+1] != 'u' {
				i++ // a one-letter escape
				continue
			}
			if i+6 > len(b) {
				return i, false
			}
			r := hex4(b[i+2 : i+6])
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return i, false
			case r >= 0xD800 && r <= 0xDBFF:
				if i+12 > len(b) || b[i+6] != '\\' || b[i+7] != 'u' {
					return i, false
				}
				if lo := hex4(b[i+8 : i+12]); lo < 0xDC00 || lo > 0xDFFF {
					return i, false
				}
				i += 6
			}
			i += 5
		}
	}
	return 0, true
}

// hex4 decodes the four hex digits of a \u escape; -1 if they are not.
func hex4(b []byte) rune {
	n, err := strconv.ParseUint(string(b), 16, 16)
	if err != nil {
		return -1
	}
	return rune(n)
}
