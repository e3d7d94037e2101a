package bm25

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// MaxTermBytes is the longest term the tokenizer emits; longer words are cut
// at a rune boundary. It bounds the size of a document record and keeps
// pathological input (base64 blobs, minified text) from bloating the
// dictionary.
const MaxTermBytes = 64

// Tokenize splits text into index terms. Queries and documents go through
// the same function, so a query term matches a document term exactly when
// their normalised forms are equal. The rules:
//
//  1. A word is a maximal run of letters, marks and digits (any script).
//     Everything else separates words: whitespace, punctuation, symbols,
//     hyphens, underscores and invalid UTF-8.
//  2. Inside a word, an apostrophe (' ’ ʼ) between letters is dropped
//     ("don't" → "dont"), except a possessive "'s" at the end, which is
//     removed ("Alice's" → "alice").
//  3. Numbers: a '.' between digits is kept ("3.14", "10.0.0.1"); a ','
//     followed by exactly three digits is a thousands separator and is
//     dropped ("1,000" → "1000"); any other ',' separates ("1,2" → "1" "2").
//  4. Words with non-ASCII characters are NFKC-normalised (composed accents,
//     fullwidth forms, ligatures) and Unicode case-folded ("Straße" →
//     "strasse"); ASCII words are lower-cased.
//  5. English stop words ([IsStopWord]) are dropped.
//  6. Words of ASCII letters are stemmed with the inflectional steps of the
//     Porter stemmer (plurals, -ed, -ing, final -e), so "relocated",
//     "relocates", "relocating" and "relocate" all become "relocat".
//  7. A term longer than [MaxTermBytes] is cut at a rune boundary.
//
// Tokenize never returns empty terms and every term is valid UTF-8.
func Tokenize(text string) []string {
	var out []string
	var t tokenizer
	t.run(text, func(tok []byte) { out = append(out, string(tok)) })
	return out
}

// MayContain reports whether term may be one of [Tokenize](text)'s terms:
// false only if it is not. It neither allocates nor tokenises, so that a
// caller matching a few terms against many short texts (the entities a
// query's graph paths reach) tokenises only the texts it cannot rule out.
//
// It rules a term out only in ASCII text without apostrophes, for a term
// of letters: such a term comes from a word of letters, lower-cased and
// stemmed, and every step of the stemmer either cuts the word short or
// replaces its last letter or appends one ("hoping" → "hope", "happy" →
// "happi"), so all of the term but its last byte begins the word, and
// occurs in the text, whatever its case. Any other text or term (accents
// folded, NFKC, apostrophes and thousands separators dropped) may hold it.
func MayContain(text, term string) bool {
	if term == "" {
		return false
	}
	for i := 0; i < len(term); i++ {
		if c := term[i]; c < 'a' || c > 'z' {
			return true
		}
	}
	for i := 0; i < len(text); i++ {
		if c := text[i]; c >= utf8.RuneSelf || c == '\'' {
			return true
		}
	}
	return containsFold(text, term[:len(term)-1])
}

// containsFold reports whether sub, of lower-case ASCII letters, occurs
// in the ASCII text, whatever its case.
func containsFold(text, sub string) bool {
	for i := 0; i+len(sub) <= len(text); i++ {
		j := 0
		for ; j < len(sub); j++ {
			c := text[i+j]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != sub[j] {
				break
			}
		}
		if j == len(sub) {
			return true
		}
	}
	return false
}

// folder is stateless and safe for concurrent use (cases.Fold doc).
var folder = cases.Fold()

// tokenizer holds the scratch buffers of one tokenization; its zero value is
// ready. It is not safe for concurrent use; callers keep one per goroutine.
type tokenizer struct {
	buf  []byte // current word, lower-cased
	norm []byte // NFKC + folded form of a non-ASCII word
}

func isApostrophe(r rune) bool { return r == '\'' || r == '’' || r == 'ʼ' }

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiWord[r]
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsNumber(r) || unicode.IsMark(r)
}

var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	return t
}()

func isASCIIDigit(c byte) bool { return c >= '0' && c <= '9' }

// runeAt decodes the rune at text[i:], returning (utf8.RuneError, 0) at the
// end of the text.
func runeAt(text string, i int) (rune, int) {
	if i >= len(text) {
		return utf8.RuneError, 0
	}
	if c := text[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(text[i:])
}

// run tokenizes text and calls emit with each term. The slice passed to emit
// is only valid during the call.
func (t *tokenizer) run(text string, emit func([]byte)) {
	t.buf = t.buf[:0]
	nonASCII := false
	lastDigit, lastLetter := false, false
	flush := func() {
		if len(t.buf) > 0 {
			t.finish(nonASCII, emit)
		}
		t.buf = t.buf[:0]
		nonASCII, lastDigit, lastLetter = false, false, false
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf && asciiWord[c] {
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			t.buf = append(t.buf, c)
			lastDigit = isASCIIDigit(c)
			lastLetter = !lastDigit
			i++
			continue
		}
		r, sz := runeAt(text, i)
		if r >= utf8.RuneSelf && isWordRune(r) {
			t.buf = append(t.buf, text[i:i+sz]...)
			nonASCII = true
			lastDigit = unicode.IsDigit(r)
			lastLetter = unicode.IsLetter(r) || (unicode.IsMark(r) && lastLetter)
			i += sz
			continue
		}
		if len(t.buf) > 0 {
			j := i + sz
			switch {
			case isApostrophe(r) && lastLetter:
				next, nsz := runeAt(text, j)
				if !unicode.IsLetter(next) {
					break
				}
				if next == 's' || next == 'S' {
					if after, _ := runeAt(text, j+nsz); !isWordRune(after) {
						// Possessive "'s": drop it; the word ends here.
						i = j + nsz
						flush()
						continue
					}
				}
				i = j // join "don't" → "dont"
				continue
			case r == '.' && lastDigit && j < len(text) && isASCIIDigit(text[j]):
				t.buf = append(t.buf, '.')
				i = j
				continue
			case r == ',' && lastDigit && thousands(text[j:]):
				i = j
				continue
			}
		}
		flush()
		i += sz
	}
	flush()
}

// thousands reports whether s starts with exactly three ASCII digits.
func thousands(s string) bool {
	if len(s) < 3 || !isASCIIDigit(s[0]) || !isASCIIDigit(s[1]) || !isASCIIDigit(s[2]) {
		return false
	}
	return len(s) == 3 || !isASCIIDigit(s[3])
}

// finish normalises the word in t.buf and emits it unless it is a stop word.
func (t *tokenizer) finish(nonASCII bool, emit func([]byte)) {
	if !nonASCII {
		t.emitWord(t.buf, emit)
		return
	}
	t.norm = norm.NFKC.Append(t.norm[:0], t.buf...)
	// Folding may change the normal form (cases.Fold doc) but never makes a
	// folded word fold differently, which is all matching needs.
	t.norm = folder.Bytes(t.norm)
	// Compatibility mappings can introduce separators (U+FDFA expands to four
	// words, '½' to "1⁄2"): split again on anything that is not a word rune.
	w := t.norm
	start := 0
	for i := 0; i < len(w); {
		r, sz := utf8.DecodeRune(w[i:])
		if !isWordRune(r) && !(r == '.' && i > start && i+1 < len(w) && isASCIIDigit(w[i-1]) && isASCIIDigit(w[i+1])) {
			if i > start {
				t.emitWord(w[start:i:i], emit)
			}
			start = i + sz
		}
		i += sz
	}
	if start < len(w) {
		t.emitWord(w[start:], emit)
	}
}

// emitWord drops stop words, stems, bounds the length and emits.
func (t *tokenizer) emitWord(w []byte, emit func([]byte)) {
	if stopWords[string(w)] {
		return
	}
	if allLetters(w) { // also a fullwidth word that NFKC made ASCII
		w = stem(w)
	}
	if len(w) > MaxTermBytes {
		n := MaxTermBytes
		for n > 0 && !utf8.RuneStart(w[n]) {
			n--
		}
		w = w[:n]
	}
	if len(w) > 0 {
		emit(w)
	}
}

func allLetters(w []byte) bool {
	for _, c := range w {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// IsStopWord reports whether the lower-cased word w is dropped by
// [Tokenize]. The list is Lucene's English stop set (EnglishAnalyzer,
// ENGLISH_STOP_WORDS_SET) plus pronouns, auxiliaries and apostrophe-less
// contractions that dominate conversational text ("i", "my", "was", "dont"),
// which is what memor indexes.
func IsStopWord(w string) bool { return stopWords[w] }

var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range []string{
		// Lucene EnglishAnalyzer.ENGLISH_STOP_WORDS_SET.
		"a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in",
		"into", "is", "it", "no", "not", "of", "on", "or", "such", "that", "the",
		"their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
		// Conversational additions.
		"i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "you", "your",
		"yours", "he", "him", "his", "she", "her", "hers", "its", "them", "am",
		"were", "been", "being", "has", "have", "had", "having", "do", "does", "did",
		"so", "than", "too", "very", "just", "from", "about", "what", "which", "who",
		"whom", "would", "should", "can", "could", "those", "also", "some", "any",
		"dont", "doesnt", "didnt", "isnt", "wasnt", "arent", "im", "ive", "youre",
		"theyre", "weve", "cant", "wont",
	} {
		m[w] = true
	}
	return m
}()
