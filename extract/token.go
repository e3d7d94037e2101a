package extract

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// tok is one token of episode text. Contractions expand into several tokens
// that share the span of the written word ("I'm" → "i" "am"), so a span
// built from tokens is always a verbatim substring of the text.
type tok struct {
	s, e  int    // byte span in the text
	w     string // lower-cased word with ’ normalised to '
	cap   bool   // written with an upper-case first letter
	upper bool   // written with an upper-case letter anywhere ("eBay", "iPhone")
	word  bool   // letters/digits, as opposed to punctuation
	nl    bool   // a line break precedes the token
}

// sentence is a run of tokens ended by . ! ? or a line break.
type sentence struct {
	toks     []tok
	question bool
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

// tokenize splits text into tokens. Apostrophes, hyphens, dots and
// ampersands inside a word stay in it ("don't", "co-worker", "3.5",
// "Amazon.com", "AT&T"); every other non-space rune is a token of its own.
func tokenize(text string) []tok {
	toks := make([]tok, 0, len(text)/4)
	nl := false
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == '\n' || r == '\r':
			nl = true
			i += n
			continue
		case unicode.IsSpace(r):
			i += n
			continue
		case isWordRune(r):
			j := i + n
			for j < len(text) {
				r2, n2 := utf8.DecodeRuneInString(text[j:])
				if isWordRune(r2) {
					j += n2
					continue
				}
				if r2 == '\'' || r2 == '’' || r2 == '-' || r2 == '.' || r2 == '&' {
					if r3, _ := utf8.DecodeRuneInString(text[j+n2:]); j+n2 < len(text) && isWordRune(r3) {
						j += n2
						continue
					}
				}
				break
			}
			toks = appendWord(toks, text, i, j, nl)
			i = j
		default:
			toks = append(toks, tok{s: i, e: i + n, w: text[i : i+n], nl: nl})
			i += n
		}
		nl = false
	}
	return toks
}

// pronounIs lists the words whose 's means "is" rather than a possessive.
var pronounIs = map[string]bool{
	"he": true, "she": true, "it": true, "that": true, "there": true, "here": true,
	"what": true, "who": true, "where": true, "how": true, "this": true, "everything": true,
}

var contractionTail = map[string]string{"'m": "am", "'re": "are", "'ve": "have", "'ll": "will", "'d": "would"}

// appendWord appends text[s:e] as one or more tokens, expanding contractions.
func appendWord(toks []tok, text string, s, e int, nl bool) []tok {
	orig := text[s:e]
	w := strings.ToLower(strings.ReplaceAll(orig, "’", "'"))
	first, _ := utf8.DecodeRuneInString(orig)
	t := tok{s: s, e: e, w: w, cap: unicode.IsUpper(first), word: true, nl: nl}
	for _, r := range orig {
		if unicode.IsUpper(r) {
			t.upper = true
			break
		}
	}
	two := func(a, b string) []tok {
		t1, t2 := t, t
		t1.w, t2.w = a, b
		t2.cap, t2.upper, t2.nl = false, false, false
		return append(toks, t1, t2)
	}
	switch w {
	case "cannot":
		return two("can", "not")
	case "gonna":
		return two("going", "to")
	case "wanna":
		return two("want", "to")
	case "gotta":
		return two("got", "to")
	}
	if strings.HasSuffix(w, "n't") && len(w) > 3 {
		base := w[:len(w)-3]
		switch base {
		case "wo":
			base = "will"
		case "ca":
			base = "can"
		case "sha":
			base = "shall"
		case "ai":
			base = "is"
		}
		return two(base, "not")
	}
	if k := strings.LastIndexByte(w, '\''); k > 0 {
		base, tail := w[:k], w[k:]
		if full, ok := contractionTail[tail]; ok {
			return two(base, full)
		}
		if tail == "'s" {
			if pronounIs[base] {
				return two(base, "is")
			}
			return two(base, "'s")
		}
	}
	return append(toks, t)
}

// abbreviations whose trailing dot does not end a sentence.
var abbreviations = map[string]bool{
	"mr": true, "mrs": true, "ms": true, "dr": true, "st": true, "jr": true, "sr": true,
	"prof": true, "vs": true, "etc": true, "mt": true, "ft": true, "inc": true, "co": true,
	"e.g": true, "i.e": true, "approx": true, "no": true,
}

// sentences splits tokens at . ! ? and line breaks, dropping the
// terminators. A sentence ended by '?' is a question.
func sentences(toks []tok) []sentence {
	var out []sentence
	start := 0
	flush := func(end int, q bool) {
		if end > start {
			out = append(out, sentence{toks: toks[start:end], question: q})
		}
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.nl && i > start {
			flush(i, false)
			start = i
		}
		switch t.w {
		case ".":
			if i > start && abbreviations[toks[i-1].w] && i+1 < len(toks) && toks[i+1].e > 0 && !toks[i+1].nl {
				continue
			}
			flush(i, false)
			start = i + 1
		case "!", "?", "…":
			q := t.w == "?"
			// "?!" and "!?" are still questions.
			j := i
			for j+1 < len(toks) && (toks[j+1].w == "?" || toks[j+1].w == "!") {
				j++
				q = q || toks[j].w == "?"
			}
			flush(i, q)
			i = j
			start = i + 1
		}
	}
	flush(len(toks), false)
	return out
}
