package extract

import (
	"strings"
	"unicode"

	"github.com/memor-db/memor/internal/norm"
	"github.com/memor-db/memor/lang/en"
)

// quantityFamily is the predicate family of a figure a speaker states for
// a matter of their own: "my grocery budget was increased to $550
// monthly" is user amount_grocery_budget "$550 monthly". The family is
// single-valued, so a later figure for the same matter supersedes the
// earlier one; a period the figure holds for ("for April to June") is the
// context, so figures for other periods coexist. The rate it is counted
// at is part of the value: a restatement often leaves it out ("my
// increased budget of $650" after "my $600 annual budget").
const quantityFamily = "amount_"

// quantityPredicate is the predicate of matter ("grocery budget" →
// amount_grocery_budget).
func quantityPredicate(matter string) string { return quantityFamily + norm.Predicate(matter) }

// The words a noun phrase of a stated figure cannot hold: they end it.
var npStops = set("a", "an", "the", "my", "our", "your", "his", "her", "their", "its", "this",
	"that", "these", "those", "of", "for", "to", "at", "in", "on", "by", "from", "with", "about",
	"over", "under", "into", "than", "as", "and", "or", "but", "so", "is", "was", "are", "were",
	"be", "been", "being", "am", "has", "have", "had", "do", "does", "did", "will", "would",
	"can", "could", "should", "might", "may", "must", "shall", "not", "no", "which", "who",
	"what", "how", "when", "where", "why", "i", "we", "you", "he", "she", "it", "they", "me",
	"us", "him", "them", "if", "because", "while", "since", "until", "per", "each", "every",
	"up", "down", "out", "off", "around", "after", "before", "'s", "total", "only")

// objectStarts are words after which a noun phrase's last word was a verb
// ("my 3 kids love pizza"): an object pronoun or a determiner.
var objectStarts = set("me", "us", "him", "them", "it", "a", "an", "the", "my", "our", "your",
	"her", "his", "their")

// currencies are the symbols a figure of money opens with.
var currencies = set("$", "€", "£", "¥", "₹")

// figure is a stated quantity: its tokens (currency, number, percent sign,
// unit) and the rate it is counted at ("monthly"), if one follows.
type figure struct {
	toks []tok
	rate string
	// ownUnit: a currency or a percent sign gives the unit, so no unit
	// noun follows and the figure may stand before the noun it is for
	// ("my $35 monthly budget").
	ownUnit bool
	n       int // tokens read, rate included
}

// measuresTime reports whether f is a span of time ("5-7 months").
func (f figure) measuresTime() bool {
	return len(f.toks) > 1 && en.DurationUnit(f.toks[len(f.toks)-1].w)
}

// isNumberTok reports whether t is a written number ("12", "5-7", "1.5",
// "15k").
func isNumberTok(t tok) bool {
	if !t.word || t.w == "" || !unicode.IsDigit(rune(t.w[0])) {
		return false
	}
	w := strings.TrimSuffix(strings.TrimSuffix(t.w, "k"), "m")
	return strings.Trim(w, "0123456789.,-–") == ""
}

// figureAt reads a figure at toks[i]: [currency] number [%] [unit]
// [rate]. A bare year, a time of day and a number inside a date are no
// figure.
func (st *state) figureAt(toks []tok, i int) (figure, bool) {
	var f figure
	j := i
	if j < len(toks) && currencies[toks[j].w] {
		f.ownUnit = true
		j++
	}
	if j >= len(toks) || !isNumberTok(toks[j]) {
		return figure{}, false
	}
	if !f.ownUnit && en.YearFigure(toks[j].w) {
		return figure{}, false
	}
	j++
	// "2,000": the groups of a thousand are tokens of their own.
	for j+1 < len(toks) && toks[j].w == "," && st.gap(toks[j-1], toks[j]) == "" &&
		st.gap(toks[j], toks[j+1]) == "" && len(toks[j+1].w) == 3 && isNumberTok(toks[j+1]) {
		j += 2
	}
	if j < len(toks) && (toks[j].w == ":" || toks[j].w == "am" || toks[j].w == "pm") {
		return figure{}, false // a time of day
	}
	if j+1 < len(toks) && toks[j].w == "/" && isNumberTok(toks[j+1]) &&
		st.gap(toks[j-1], toks[j]) == "" && st.gap(toks[j], toks[j+1]) == "" {
		j += 2 // "120/80"
	}
	if j < len(toks) && toks[j].w == "%" {
		f.ownUnit = true
		j++
	}
	w := words(toks)
	// A unit: the noun phrase after a count, up to its head, which is
	// plural ("12 books", "5-7 months", "5 simultaneous loans", "1 cup").
	for u := j; !f.ownUnit && u < len(toks) && u < j+3 && unitTok(toks[u]); u++ {
		if r, _ := en.RateAt(w, u); r != "" {
			break
		}
		if u+1 == len(toks) || !unitTok(toks[u+1]) || u+1 == j+3 || en.Singular(toks[u].w) != toks[u].w {
			j = u + 1
			break
		}
	}
	f.toks = toks[i:j]
	f.n = j - i
	if r, n := en.RateAt(w, j); n > 0 {
		f.rate, f.n = r, f.n+n
	}
	return f, true
}

// valueAt reads a figure given as a phrase's value at toks[i] (after
// "of", "is", "to"): one that ends there. A figure that measures what
// follows it ("my score was 3 points higher", "my kids were 5 minutes
// late") or one of several ("my kids are 4 and 6") is none.
func (st *state) valueAt(toks []tok, i int) (figure, bool) {
	f, ok := st.figureAt(toks, i)
	if !ok {
		return f, false
	}
	if k := i + f.n; k < len(toks) {
		next := toks[k]
		switch {
		case nounTok(next) && !en.PeriodWord(next.w) && !strings.HasSuffix(next.w, "ing"):
			return figure{}, false
		case (next.w == "and" || next.w == "or" || next.w == ",") && k+1 < len(toks) && isNumberTok(toks[k+1]):
			return figure{}, false
		}
	}
	return f, true
}

// unitTok reports whether t may be a word of a count's unit: a lower-case
// noun-like word, not a period, a gerund or an adverb.
func unitTok(t tok) bool {
	return nounTok(t) && !t.cap && !en.PeriodWord(t.w) && !strings.HasSuffix(t.w, "ing") && !strings.HasSuffix(t.w, "ly")
}

// isLetters reports whether w is made of letters, with hyphens or
// apostrophes inside ("dining", "april-june").
func isLetters(w string) bool {
	for _, r := range w {
		if !unicode.IsLetter(r) && r != '-' && r != '\'' {
			return false
		}
	}
	return w != ""
}

// nounTok reports whether t may be a word of the noun phrase a figure is
// stated for.
func nounTok(t tok) bool {
	return t.word && !npStops[t.w] && !fillers[t.w] && (isLetters(t.w) || en.YearFigure(t.w))
}

// participle reports whether w reads as a past participle or past tense
// of a verb that sets a figure ("increased", "set", "cut").
func participle(w string) bool {
	return (strings.HasSuffix(w, "ed") && len(w) > 4) || w == "set" || w == "cut" || w == "raised"
}

// statedLead returns the statement that opens a question sentence ("I saw
// that my budget was increased to $550, so how can I …"): the tokens
// before the clause that asks. A sentence that asks from its first word
// has none.
func statedLead(toks []tok) []tok {
	first := 0
	for first < len(toks) && (!toks[first].word || fillers[toks[first].w]) {
		first++
	}
	if first == len(toks) || questionStarts[toks[first].w] {
		return nil
	}
	for i := first + 1; i < len(toks); i++ {
		if toks[i-1].w != "," {
			continue
		}
		k := i
		for k < len(toks) && (toks[k].w == "so" || toks[k].w == "and" || toks[k].w == "but" || fillers[toks[k].w]) {
			k++
		}
		if k+1 < len(toks) && asks(toks[k].w, toks[k+1].w) {
			return toks[:i-1]
		}
	}
	return nil
}

// asks reports whether a clause opened by w then next asks: a wh-word
// ("how can I", "what do you think"), or an auxiliary before its subject
// ("can you", "should I"). After a comma, "which", "who" and "whose" open
// a relative clause ("…, which is $8 over my budget"), not a question.
func asks(w, next string) bool {
	switch {
	case w == "which" || w == "who" || w == "whom" || w == "whose":
		return false
	case w == "how" || w == "what" || w == "where" || w == "when" || w == "why":
		return true
	}
	return questionStarts[w] && questionSubjects[next]
}

// questionSubjects are the subjects an auxiliary stands before in a
// question ("can you", "do I").
var questionSubjects = set("you", "i", "we", "it", "they", "he", "she", "this", "that", "there", "my", "our")

// quantities proposes the figures a statement gives for matters of the
// speaker's own: a noun phrase opened by "my" or "our" (or by "the" or
// "a" that a verb of "I" or "we" governs, see governed) and a figure bound
// to it —
//
//   - before its head: "my $35 monthly budget" (money or a percentage
//     only: "my 3 kids love pizza" has no head to tell);
//   - after "of": "my book budget of $50";
//   - after a form of "to be" or a participle, then "to" or "at": "my
//     grocery budget was increased to $550 monthly", "my goal is 12
//     books";
//   - after a participle that governs the phrase: "I've increased my
//     grocery budget to $550/month", "I capped my gifts budget at $400".
//
// The matter is the phrase's head and its nearest noun modifier (or the
// noun of a "for" phrase after it), singular: "joint budget for groceries"
// and "my grocery budget" are both "grocery budget". A month, season,
// year or range of them in the phrase or after "for"/"in" is the period
// the figure holds for (the context: a budget for April to June never
// supersedes January's), and a rate ("monthly", "/month") is written
// after the figure in its canonical form ("$550 monthly"). A negated,
// modal or infinitive clause states no figure.
func (st *state) quantities(toks []tok, conf float64) {
	for i := 0; i < len(toks); i++ {
		switch w := toks[i].w; {
		case w == "my" || w == "our" || governed(toks, i):
			st.quantityAt(toks, i, conf)
		case w == "the":
			st.durationAt(toks, i, conf)
		case w == "it":
			st.pronounQuantity(toks, i, conf)
		}
	}
}

// embeddedQuantities proposes the figures a question takes as given
// after its first clause, in a "how" clause under a verb or preposition
// ("can you tell me more about how it was shortened to 5-7 months"):
// the clause states what the question asks about. from is where the
// statement that opens the question, read already, ends.
func (st *state) embeddedQuantities(toks []tok, from int) {
	for k := max(from, 1); k+1 < len(toks); k++ {
		if toks[k].w != "how" || !toks[k-1].word {
			continue
		}
		switch toks[k+1].w {
		case "it":
			st.pronounQuantity(toks, k+1, 0)
		case "my", "our":
			st.quantityAt(toks, k+1, 0)
		}
	}
}

// phraseEnd returns where the noun phrase starting at toks[j] ends: at
// most five noun-like words, an adverb ending it ("my $90 fuel allowance
// barely lasts").
func phraseEnd(toks []tok, j int) int {
	start := j
	for j < len(toks) && j-start < 5 && nounTok(toks[j]) {
		if r, _ := en.RateAt([]string{toks[j].w}, 0); r == "" && strings.HasSuffix(toks[j].w, "ly") {
			break
		}
		j++
	}
	return j
}

// figureFits returns the test a matter's head must pass to be measured
// by f: a sum of money is a budget's or a cost's, a span of time a
// process's or a period's; a figure of another unit fits no matter that
// was not named with it.
func figureFits(f figure) func(head string) bool {
	switch {
	case len(f.toks) > 0 && currencies[f.toks[0].w]:
		return en.MoneyNoun
	case f.measuresTime():
		return en.DurationNoun
	}
	return func(string) bool { return false }
}

// adverb reports whether w reads as an adverb of manner or frequency
// ("typically", "usually").
func adverb(w string) bool {
	r, _ := en.RateAt([]string{w}, 0)
	return len(w) > 4 && strings.HasSuffix(w, "ly") && r == ""
}

// takeVerbs say how long something takes.
var takeVerbs = set("take", "takes", "took", "taking", "lasts", "lasted", "lasting")

// durationAt reads how long a process the speaker speaks of takes: "the"
// and a noun phrase measured in time, then a verb of taking and a span
// of time ("I'm worried about the probate process taking 6-9 months").
// The speaker's own words name the process, so the span is theirs to
// state; a figure of another unit, or of a noun not measured in time, is
// none.
func (st *state) durationAt(toks []tok, i int, conf float64) {
	j := i + 1
	for e := phraseEnd(toks, j); j < e && !takeVerbs[toks[j].w]; j++ {
	}
	np := toks[i+1 : j]
	if len(np) == 0 || unstated(toks, i) {
		return
	}
	// "the probate timeline that Stephanie explained, which typically
	// takes 6-9 months": a relative clause between the phrase and the verb.
	v := j
	if v < len(toks) && toks[v].w == "that" {
		for v < len(toks) && v-j < 6 && toks[v].w != "," {
			v++
		}
	}
	if v+1 < len(toks) && toks[v].w == "," && toks[v+1].w == "which" {
		v += 2
	}
	for v < len(toks) && (fillers[toks[v].w] || adverb(toks[v].w)) {
		v++
	}
	if v >= len(toks) || !takeVerbs[toks[v].w] {
		return
	}
	k := v + 1
	for k < len(toks) && (fillers[toks[k].w] || adverb(toks[k].w)) {
		k++
	}
	fig, ok := st.valueAt(toks, k)
	if !ok || !fig.measuresTime() {
		return
	}
	st.emitQuantity(toks, i, np, j, k+fig.n, fig, conf, en.DurationNoun)
}

// pronounQuantity reads a figure set for "it" ("it was shortened to 5-7
// months", "it has been raised to $600"): a change stated in the passive,
// whose matter is the nearest noun phrase before it in the sentence,
// opened by "the", "my" or "our", that the figure's unit fits (see
// figureFits).
func (st *state) pronounQuantity(toks []tok, i int, conf float64) {
	k := i + 1
	switch {
	case k < len(toks) && (toks[k].w == "was" || toks[k].w == "is"):
		k++
	case k+1 < len(toks) && (toks[k].w == "has" || toks[k].w == "had") && toks[k+1].w == "been":
		k += 2
	default:
		return
	}
	for k < len(toks) && fillers[toks[k].w] {
		k++
	}
	if k >= len(toks) || !participle(toks[k].w) || unstated(toks, i) {
		return
	}
	t, ok := st.targetAt(toks, k+1)
	if !ok {
		return
	}
	fig, ok := st.valueAt(toks, t)
	if !ok {
		return
	}
	fits := figureFits(fig)
	for p := i - 1; p >= 0; p-- {
		if w := toks[p].w; w != "the" && w != "my" && w != "our" {
			continue
		}
		e := phraseEnd(toks, p+1)
		if e == p+1 || e > i {
			continue
		}
		if st.emitQuantity(toks, p, toks[p+1:e], e, t+fig.n, fig, conf, fits) {
			return
		}
	}
}

// governed reports whether the phrase toks[i] opens with "the", "a" or
// "an" is the speaker's by the verb before it: "the" after a participle
// whose subject is "I" or "we" ("I've adjusted the snack budget to
// $75"), "a" after such a "have", "got" or "set" ("I have a snack budget
// of $70"). Elsewhere a figure with an article is anyone's ("a $50,000
// buyout offer").
func governed(toks []tok, i int) bool {
	if i == 0 {
		return false
	}
	v := toks[i-1].w
	switch toks[i].w {
	case "the":
		if !participle(v) {
			return false
		}
	case "a", "an":
		if v != "have" && v != "has" && v != "had" && v != "got" && v != "set" {
			return false
		}
	default:
		return false
	}
	k := i - 2
	for k >= 0 && (fillers[toks[k].w] || toks[k].w == "have" || toks[k].w == "had") {
		k--
	}
	return k >= 0 && (toks[k].w == "i" || toks[k].w == "we") && !unstated(toks, i-1)
}

// unstated reports whether the clause leading to toks[i] makes what
// follows something other than a stated fact: a negation, a modal or
// plan, a condition, or an infinitive ("want to raise my budget to").
// A clause opened by "how", "after" or "since" states its own fact ("I'm
// trying to rebuild my motivation after reducing my work hours to 45").
func unstated(toks []tok, i int) bool {
	for k := i - 1; k >= 0; k-- {
		t := toks[k]
		if t.w == "," || t.w == ":" || t.w == ";" || t.w == "which" || t.w == "that" || t.w == "how" || t.w == "after" || t.w == "since" || t.w == "and" || t.w == "but" || t.w == "so" {
			return false
		}
		if negations[t.w] || modals[t.w] || conditionals[t.w] || t.w == "to" || t.w == "n't" {
			return true
		}
	}
	return false
}

// quantityAt reads one noun phrase opened at toks[i] and emits the figure
// bound to it, if any.
func (st *state) quantityAt(toks []tok, i int, conf float64) {
	j := i + 1
	pre, hasPre := st.figureAt(toks, j)
	if hasPre {
		if !pre.ownUnit {
			return
		}
		j += pre.n
	}
	start := j
	j = phraseEnd(toks, j)
	np := toks[start:j]
	if len(np) == 0 || (j < len(toks) && objectStarts[toks[j].w]) {
		return
	}
	// "our budget for groceries is $320": the phrase after the noun
	// phrase says what it is for; the figure comes after it.
	ppAt := -1
	if !hasPre {
		if pp := forPhrase(toks, j); pp.end > j {
			ppAt, j = j, pp.end
		}
	}
	var fig figure
	end := j
	switch {
	case hasPre:
		fig = pre
	case j+1 < len(toks) && toks[j].w == "of":
		f, ok := st.valueAt(toks, j+1)
		if !ok {
			return
		}
		fig, end = f, j+1+f.n
	default:
		k, ok := st.predicateTo(toks, j)
		switch {
		case ok && !unstated(toks, i):
		case !ok:
			v, gov := governingVerb(toks, i)
			t, to := st.targetAt(toks, k)
			if !gov || !to || unstated(toks, v) {
				return
			}
			k = t // "I've increased my budget to $550", "cut my hours from 50 to 42"
		default:
			return
		}
		f, ok := st.valueAt(toks, k)
		if !ok {
			return
		}
		fig, end = f, k+f.n
	}
	at := end
	if ppAt >= 0 {
		at = ppAt
	}
	st.emitQuantity(toks, i, np, at, end, fig, conf, nil)
}

// emitQuantity emits fig as the figure of the noun phrase np that
// toks[from] opens, its "for"/"in" phrase read at toks[at:] and the
// statement ending at toks[end]. fits, when not nil, must accept the
// matter's head; it returns whether a figure was emitted.
func (st *state) emitQuantity(toks []tok, from int, np []tok, at, end int, fig figure, conf float64, fits func(head string) bool) bool {
	matter, head, period, qend := st.matter(np, toks, at)
	qend = max(qend, end)
	if matter == "" || (fits != nil && !fits(head)) {
		return false
	}
	if topic, h, ok := strings.Cut(matter, " "); ok && h == head && fig.measuresTime() && en.TimeMeasureNoun(head) {
		// "the probate process" and "the probate timeline", measured in
		// time, are both how long probate takes.
		matter = topic + " " + en.DurationMatter
	}
	obj := st.objText(fig.toks)
	rate := fig.rate
	if rate == "" {
		rate = npRate(np)
	}
	if rate != "" {
		obj += " " + rate
	}
	f := &frame{subj: User, kind: Assert, conf: conf, quote: st.spanText(toks[from:qend]), context: period}
	st.emit(f, quantityPredicate(matter), obj)
	return true
}

// predicateTo reads, after a noun phrase ending at toks[j], a predicate
// that gives it a figure: a form of "to be" and/or a participle and its
// target (see targetAt): "is", "was increased to", "has been cut from 50
// to 42", "increased to". It returns where the figure starts and whether
// there was one; without one, the index after any fillers.
func (st *state) predicateTo(toks []tok, j int) (int, bool) {
	k := j
	verb := false
	switch {
	case k < len(toks) && (toks[k].w == "is" || toks[k].w == "was" || toks[k].w == "are" || toks[k].w == "were"):
		verb = true
		k++
	case k+1 < len(toks) && (toks[k].w == "has" || toks[k].w == "have" || toks[k].w == "had") && toks[k+1].w == "been":
		verb = true
		k += 2
	}
	for k < len(toks) && fillers[toks[k].w] {
		k++
	}
	if k < len(toks) && participle(toks[k].w) {
		// Without a target, "increased by $50" gives a change, not the
		// figure.
		return st.targetAt(toks, k+1)
	}
	return k, verb
}

// targetAt reads the target of a verb that sets a figure at toks[k]: "to"
// or "at" ("to $550"), or "from" a figure "to" ("from 50 to 42", the
// later figure). It returns where the figure starts.
func (st *state) targetAt(toks []tok, k int) (int, bool) {
	if k >= len(toks) {
		return k, false
	}
	switch toks[k].w {
	case "to", "at":
		return k + 1, true
	case "from":
		if f, ok := st.figureAt(toks, k+1); ok {
			if t := k + 1 + len(f.toks); t < len(toks) && toks[t].w == "to" {
				return t + 1, true
			}
		}
	}
	return k, false
}

// governingVerb returns the verb before the phrase at toks[i] that may set
// its figure: a participle or past tense, with a particle between
// ("increased my budget", "cut down my meetings"), or a gerund after
// "after" or "since", which tell a change already made ("after cutting
// my work hours to 45 weekly"; "about cutting" may be a plan).
func governingVerb(toks []tok, i int) (int, bool) {
	v := i - 1
	if v > 0 && (toks[v].w == "down" || toks[v].w == "up" || toks[v].w == "back") {
		v--
	}
	if v > 0 && strings.HasSuffix(toks[v].w, "ing") && (toks[v-1].w == "after" || toks[v-1].w == "since") {
		return v, true
	}
	return v, v >= 0 && participle(toks[v].w)
}

// prepPhrase is a "for", "in" or "during" phrase read by forPhrase: the
// periods it names or, for "for", the noun it names as a figure's topic,
// and where it ends (its start when there is none).
type prepPhrase struct {
	topic   string
	periods []string
	end     int
}

// forPhrase reads a phrase at toks[k] that says what a figure is for ("for
// groceries") or the period it holds for ("for April to June", "in
// 2025").
func forPhrase(toks []tok, k int) prepPhrase {
	out := prepPhrase{end: k}
	if k+1 >= len(toks) || (toks[k].w != "for" && toks[k].w != "in" && toks[k].w != "during") {
		return out
	}
	prep := toks[k].w
	var pp []string
	for k++; k < len(toks); k++ {
		w := toks[k].w
		period := len(pp) > 0 && en.PeriodWord(pp[0])
		if !(nounTok(toks[k]) || (period && intervalTo[w])) || (!period && len(pp) > 0 && (strings.HasSuffix(w, "ing") || en.PeriodWord(w))) {
			break // "for groceries starting Sept 1"
		}
		pp = append(pp, w)
	}
	switch {
	case len(pp) == 0:
	case en.PeriodWord(pp[0]):
		for _, w := range pp {
			if en.PeriodWord(w) {
				out.periods = append(out.periods, w)
			}
		}
		out.end = k
	case prep == "for":
		out.topic, out.end = en.Singular(pp[len(pp)-1]), k
	}
	return out
}

// npRate is the rate a noun phrase's modifiers name ("monthly budget").
func npRate(np []tok) string {
	w := words(np)
	for k := range w {
		if r, n := en.RateAt(w, k); n == 1 {
			return r
		}
	}
	return ""
}

// matter names what a noun phrase's figure is for: its head and nearest
// noun modifier (or the noun of a "for" phrase at toks[after:]), singular,
// and the period the phrase or a following "for"/"in" phrase names.
func (st *state) matter(np []tok, toks []tok, after int) (matter, head, period string, end int) {
	var periods []string
	var mods []string
	end = after
	headCap := false
	for _, t := range np {
		if _, person := en.Relation(t.w); person {
			// "my brother Alex is 40", "my partner of 5 years": a
			// person, not a matter.
			return "", "", "", end
		}
		switch r, _ := en.RateAt([]string{t.w}, 0); {
		case en.PeriodWord(t.w):
			periods = append(periods, t.w)
		case r != "" || participle(t.w) || strings.HasSuffix(t.w, "ly"):
		default:
			mods = append(mods, en.Singular(t.w))
			headCap = t.cap
		}
	}
	if len(mods) == 0 || headCap {
		return "", "", "", end // a name ("my dog Max is 3") is no matter
	}
	head = mods[len(mods)-1]
	if en.IdentifierNoun(head) {
		return "", "", "", end // "my order number is 55123" names, not counts
	}
	topic := ""
	if len(mods) > 1 {
		topic = mods[len(mods)-2]
	}
	// A "for"/"in" phrase after the figure: a period ("for April to
	// June") or what the figure is for ("for groceries").
	k := after
	for k < len(toks) && (toks[k].w == "total" || fillers[toks[k].w]) {
		k++
	}
	if pp := forPhrase(toks, k); pp.end > k {
		periods = append(periods, pp.periods...)
		if pp.topic != "" {
			topic = pp.topic
		}
		end = pp.end
	}
	matter = head
	if topic != "" && topic != head {
		matter = topic + " " + head
	}
	return matter, head, strings.Join(periods, "-"), end
}
