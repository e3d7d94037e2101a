package bm25

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	texts "github.com/memor-db/memor/internal/corpus"
)

func TestTokenize(t *testing.T) {
	for _, tc := range []struct {
		rule, in string
		want     []string
	}{
		{"ASCII is lower-cased and stop words dropped", "The Cat and THE hat", []string{"cat", "hat"}},
		{"punctuation and symbols separate words", "e-mail:foo_bar/baz+qux", []string{"e", "mail", "foo", "bar", "baz", "qux"}},
		{"inflections of one verb share a stem", "relocated relocates relocating relocate", []string{"relocat", "relocat", "relocat", "relocat"}},
		{"plurals", "dogs ponies classes status", []string{"dog", "poni", "class", "status"}},
		{"-ing undoubles and restores e", "running hoping hopping", []string{"run", "hope", "hop"}},
		{"possessive 's is removed", "Alice's cat’s", []string{"alic", "cat"}},
		{"inner apostrophes join", "O'Neill rock'n'roll", []string{"oneil", "rocknrol"}},
		{"contractions that are stop words go", "don't I'm it's", nil},
		{"decimal points are kept", "pi is 3.14, v1.2.3 and 10.0.0.1.", []string{"pi", "3.14", "v1.2.3", "10.0.0.1"}},
		{"thousands separators are dropped", "1,000,000 people", []string{"1000000", "peopl"}},
		{"other commas separate numbers", "1,2 and 12,34", []string{"1", "2", "12", "34"}},
		{"numbers are not stemmed", "1990s 2024", []string{"1990s", "2024"}},
		{"Unicode letters are words, case-folded", "Ærøskøbing ÉCOLE", []string{"ærøskøbing", "école"}},
		{"full case folding", "STRASSE Straße", []string{"strass", "strass"}},
		{"final sigma folds to sigma", "ΣΊΣΥΦΟΣ σίσυφος", []string{"σίσυφοσ", "σίσυφοσ"}},
		{"composed and decomposed accents match", "caf\u00e9 cafe\u0301", []string{"café", "café"}},
		{"fullwidth letters normalise to ASCII and stem", "ＲＥＬＯＣＡＴＥＤ", []string{"relocat"}},
		{"CJK runs are words", "東京に住んでいる", []string{"東京に住んでいる"}},
		{"invalid UTF-8 separates", "abc\xffdef", []string{"abc", "def"}},
		{"compatibility expansion is split again", "\ufdfa", []string{"صلى", "الله", "عليه", "وسلم"}},
		{"empty and all-stop input", " the, a; an. ", nil},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			if got := Tokenize(tc.in); !slices.Equal(got, tc.want) {
				t.Errorf("Tokenize(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestTokenizeLongWord(t *testing.T) {
	got := Tokenize(strings.Repeat("é", 100))
	if len(got) != 1 || len(got[0]) > MaxTermBytes || !utf8.ValidString(got[0]) {
		t.Fatalf("long word: %q", got)
	}
}

// FuzzTokenize checks the tokenizer's contract on arbitrary input.
func FuzzTokenize(f *testing.F) {
	for _, s := range []string{
		"", "I relocated to Berlin in March 2024.", "Alice's dog's bone", "1,000.50 and 3.14",
		"Straße ΣΊΣΥΦΟΣ", "\ufdfa½", "a'", "'s", "x's'", "\xff\xfe", "ﬁnance", strings.Repeat("ab", 80),
	} {
		f.Add(s)
	}
	for _, tx := range texts.MustTexts() {
		f.Add(tx.Body)
	}
	f.Fuzz(func(t *testing.T, s string) {
		toks := Tokenize(s)
		for _, tok := range toks {
			if tok == "" || len(tok) > MaxTermBytes || !utf8.ValidString(tok) {
				t.Fatalf("bad term %q from %q", tok, s)
			}
			for i, r := range tok {
				if !isWordRune(r) && !(r == '.' && i > 0 && i+1 < len(tok)) {
					t.Fatalf("term %q from %q holds separator %q", tok, s, r)
				}
			}
		}
		for _, tok := range toks {
			if !MayContain(s, tok) {
				t.Fatalf("MayContain(%q, %q) is false, and Tokenize gives the term", s, tok)
			}
		}
		if again := Tokenize(s); !slices.Equal(again, toks) {
			t.Fatalf("not deterministic on %q", s)
		}
		if isASCII(s) {
			if up := Tokenize(strings.ToUpper(s)); !slices.Equal(up, toks) {
				t.Fatalf("case-sensitive on %q: %q vs %q", s, up, toks)
			}
		}
		// A term is found by a query made of itself, whatever the text
		// around it: joining the terms with spaces yields them again, up
		// to stemming being applied once more.
		joined := Tokenize(strings.Join(toks, " "))
		if len(joined) > len(toks) {
			t.Fatalf("re-tokenizing %q grew it to %q", toks, joined)
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func TestStopWordsAreLowercase(t *testing.T) {
	for w := range stopWords {
		if strings.ToLower(w) != w || strings.IndexFunc(w, func(r rune) bool { return !unicode.IsLetter(r) }) >= 0 {
			t.Errorf("stop word %q must be lower-case letters", w)
		}
		if !IsStopWord(w) {
			t.Errorf("IsStopWord(%q) = false", w)
		}
	}
}

// TestMayContain: every term Tokenize gives of a text, of the realistic
// corpus (whole and line by line, as entity names and labels are short),
// of names and of words the stemmer changes, MayContain keeps; and it
// rules out terms a text does not hold, which is what it is for.
func TestMayContain(t *testing.T) {
	var samples []string
	for _, tx := range texts.MustTexts() {
		samples = append(samples, tx.Body)
		samples = append(samples, strings.Split(tx.Body, "\n")...)
		samples = append(samples, strings.Fields(tx.Body)...)
	}
	samples = append(samples, "Company 317", "HOPING", "hopped", "Happy", "ponies", "agreed", "caresses",
		"controlling", "filing", "rated", "troubled", "sized", "O'Neills", "don't", "1,000 users",
		"Straße", "café", "ﬁnance", "Tel Aviv", "東京", "relocates", "ALL CAPS", "x", "ies", "lives_in")
	for _, p := range []string{"hop", "rat", "siz", "happ", "agre", "control", "fil", "bless", "pon", "car", "troubl", "fe", "a", "yy", "sky"} {
		for _, x := range []string{"", "s", "es", "ies", "ed", "ing", "eed", "y", "e", "ll", "lls", "ely", "ied", "ying", "ated", "bled", "izing", "ss", "us"} {
			samples = append(samples, p+x, strings.ToUpper(p+x), "the "+p+x+" of it")
		}
	}
	kept := 0
	for _, s := range samples {
		for _, tok := range Tokenize(s) {
			if !MayContain(s, tok) {
				t.Fatalf("MayContain(%q, %q) is false, and Tokenize gives the term", s, tok)
			}
			kept++
		}
	}
	if kept < 1000 {
		t.Fatalf("only %d terms checked", kept)
	}
	for _, c := range []struct {
		text, term string
		want       bool
	}{
		{"Company 317", "live", false},
		{"entity 4", "work", false},
		{"Lisbon", "live", false},
		{"I live here", "live", true},
		{"LIVING room", "live", true},
		{"happy", "happi", true},
		{"café", "live", true},    // non-ASCII: not ruled out
		{"o'clock", "live", true}, // an apostrophe: not ruled out
		{"1,000", "1000", true},   // a digit in the term: not ruled out
		{"anything", "", false},
	} {
		if got := MayContain(c.text, c.term); got != c.want {
			t.Errorf("MayContain(%q, %q) = %v, want %v", c.text, c.term, got, c.want)
		}
	}
}
