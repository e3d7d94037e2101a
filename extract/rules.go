package extract

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/memor-db/memor/lang"
	"github.com/memor-db/memor/lang/en"
)

// RuleExtractor is memor's offline extractor: hand-written English patterns
// over a small tokenizer, with no model and no I/O. It is deterministic
// (same text and time, same ops in the same order), so Rebuild reproduces
// the same facts, and it is safe for concurrent use: it holds no state
// between calls. extract/README.md lists every pattern it knows.
//
// It is deliberately conservative: questions, hypotheticals, negations,
// plans and other people's claims yield nothing, because a missed fact
// costs less than a wrong one that supersedes a right one.
type RuleExtractor struct {
	// cat says which predicates are single-valued (nil: en's catalogue).
	cat *lang.Catalogue
}

// NewRuleExtractor returns a RuleExtractor.
func NewRuleExtractor() *RuleExtractor { return &RuleExtractor{} }

// WithCatalogue returns a RuleExtractor that reads the cardinality of its
// predicates from c: a hedged intention ("I might get a cat") is proposed
// only on a predicate c says is single-valued (see hedgedIntentConfidence).
// It implements Catalogued.
func (r *RuleExtractor) WithCatalogue(c *lang.Catalogue) Extractor {
	return &RuleExtractor{cat: c}
}

// one reports whether pred is single-valued.
func (r *RuleExtractor) one(pred string) bool {
	c := r.cat
	if c == nil {
		c = defaultCatalogue
	}
	p, _ := c.Lookup(pred)
	return p.One
}

// defaultCatalogue is the catalogue of a RuleExtractor not given one.
var defaultCatalogue = en.NewCatalogue()

// User is the subject the extractors use for the speaker.
const User = "user"

// hedgedConfidence is the confidence of a claim the user hedged ("I think",
// "probably"): low enough that the resolver contests it rather than letting
// it replace a confident value.
const hedgedConfidence = 0.7

// hedgedIntentConfidence is the confidence of a hedged intention or
// possibility about one of the user's single-valued facts ("I might move to
// Boston", "Maybe I will work at Apple", "I'm thinking about moving to
// Lisbon", "I'm considering a job at Stripe"). It is far enough below any
// stated value (1, or hedgedConfidence) that memor's resolver contests the
// claim instead of letting it replace that value, and the episode is then
// not served as if the move had happened. Dropping the sentence instead
// would leave its raw text to be recalled as a fact.
const hedgedIntentConfidence = 0.3

// Extract proposes operations for text said at at. It fails only when ctx
// is done.
func (r *RuleExtractor) Extract(ctx context.Context, text string, at time.Time) ([]Op, error) {
	return r.ExtractKnown(ctx, text, at, nil)
}

// ExtractKnown is Extract with the names of people already known from
// earlier episodes ("my brother Alex" said last month), so that "Alex moved
// to Dallas" is about Alex. It implements KnownNamesExtractor.
func (r *RuleExtractor) ExtractKnown(ctx context.Context, text string, at time.Time, names []string) ([]Op, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("extract: %w", err)
	}
	st := &state{
		one:     r.one,
		text:    text,
		at:      at,
		seen:    map[string]bool{},
		names:   map[string]string{},
		relName: map[string]string{},
	}
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" && n != User {
			st.addName(n)
		}
	}
	for i, s := range sentences(tokenize(text)) {
		if i%32 == 31 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("extract: %w", err)
			}
		}
		st.sentence(s)
	}
	return st.ops, nil
}

// ExtractInput is ExtractKnown over in.Text, in.At and in.Names, with the
// first person of a spoken episode (in.Speaker set) attributed to the
// speaker instead of User. It implements InputExtractor.
func (r *RuleExtractor) ExtractInput(ctx context.Context, in Input) ([]Op, error) {
	ops, err := r.ExtractKnown(ctx, in.Text, in.At, in.Names)
	if err != nil || in.Speaker == "" {
		return ops, err
	}
	return AttributeTo(ops, in.Speaker), nil
}

// state is the per-call memory of one Extract: the ops so far and the
// people named so far, so that "My brother Alex … He adopted a dog" and
// "my brother lives in Austin" resolve to Alex.
type state struct {
	one        func(pred string) bool // single-valued predicates
	text       string
	at         time.Time
	ops        []Op
	seen       map[string]bool
	names      map[string]string // lower-case full or first name → canonical name
	relName    map[string]string // relation predicate → the name last given for it
	lastPerson string
	// speaker is who says the current line when it opens with a known
	// name and a colon ("Tim: I love sushi"); first person is then them.
	speaker string
	// tailName is the person the previous clause ended with, whom a
	// following "who" is about ("I met Robert, who's 75").
	tailName string
}

// frame is what a clause's ops share.
type frame struct {
	subj     string
	kind     Kind
	from     time.Time
	conf     float64
	quote    string
	additive bool
	perfect  bool // "have lived", "have been"
	be       bool // a form of "to be" preceded the predicate
	// inherited: the subject was carried over from the previous clause.
	inherited bool
	// context is the clause's Op.Context ("work", "home", "weekends"),
	// from a leading context phrase.
	context string
	// until is when a stated interval ended ("from 2015 to 2018"): an
	// Assert is followed by an End at until.
	until time.Time
	// intent: the clause states a hedged intention or possibility; ops
	// get hedgedIntentConfidence and only single-valued predicates are
	// emitted.
	intent bool
}

func (st *state) emit(f *frame, pred, obj string) {
	obj = strings.TrimSpace(obj)
	if f.subj == "" || (obj == "" && f.kind == Assert) || (f.intent && !st.one(pred)) {
		return
	}
	key := fmt.Sprint(f.kind, "\x00", f.subj, "\x00", pred, "\x00", obj)
	if st.seen[key] {
		return
	}
	st.seen[key] = true
	op := Op{Kind: f.kind, Subject: f.subj, Predicate: pred, Object: obj, Context: f.context,
		ValidFrom: f.from, Confidence: f.conf, Quote: f.quote}
	if f.kind == Assert {
		// A possibility is never added beside the value in force ("I might
		// also work at Starbucks"): it must meet that value and be
		// contested.
		op.Additive = f.additive && !f.intent
	}
	if st.speaker != "" && op.Subject == User {
		op.Subject = st.speaker // "Tim: I live in Oslo"
	}
	st.ops = append(st.ops, op)
	if f.kind == Assert && !f.until.IsZero() && !f.intent {
		// "I lived in Paris from 2015 to 2018": held from 2015, ended 2018.
		end := op
		end.Kind, end.ValidFrom, end.Additive = End, f.until, false
		st.ops = append(st.ops, end)
	}
}

// speakerPrefix matches one or two capitalised words and a colon opening
// a sentence ("Tim:", "Mary Ann:") and returns the tokens it spans and the
// name.
// Markup around the name ("- **Tim**:") is part of the prefix.
func speakerPrefix(toks []tok) (int, string) {
	markup := func(t tok) bool { return t.w == "-" || t.w == "*" || t.w == "_" || t.w == "•" }
	b := 0
	for b < len(toks) && b < 4 && markup(toks[b]) {
		b++
	}
	n := b
	for n < len(toks) && n-b < 2 && isNameTok(toks[n]) {
		n++
	}
	if n == b {
		return 0, ""
	}
	e := n
	for e < len(toks) && e-n < 2 && (toks[e].w == "*" || toks[e].w == "_") {
		e++
	}
	if e >= len(toks) || toks[e].w != ":" || toks[e].s != toks[e-1].e {
		return 0, ""
	}
	var parts []string
	for _, t := range toks[b:n] {
		parts = append(parts, t.w)
	}
	e++
	for e < len(toks) && (toks[e].w == "*" || toks[e].w == "_") && toks[e].s == toks[e-1].e {
		e++ // "**Tim:**"
	}
	return e, strings.Join(parts, " ")
}

func isQuoteChar(w string) bool {
	switch w {
	case "\"", "“", "”", "«", "»", "„":
		return true
	}
	return false
}

// sentence applies the sentence-level filters, then extracts clause by
// clause.
func (st *state) sentence(s sentence) {
	toks := make([]tok, 0, len(s.toks))
	quoted := false
	for _, t := range s.toks {
		if isQuoteChar(t.w) {
			quoted = true
			continue
		}
		toks = append(toks, t)
	}
	if len(toks) > 0 && (toks[0].nl || toks[0].s == 0) {
		st.speaker = ""
	}
	if n, name := speakerPrefix(toks); n > 0 {
		// "Tim: Harry Potter is my favorite book": a transcript line. Its
		// first person is Tim if Tim is known; otherwise memor cannot
		// tell a speaker from a label ("Update: …") and proposes nothing.
		known := st.names[strings.ToLower(name)]
		if known == "" {
			st.speaker = ""
			return
		}
		st.speaker = known
		toks = toks[n:]
	}
	if s.question {
		// "I saw that my budget was raised to $550, so how can I …?":
		// the figure stated before the question is the speaker's; the
		// other patterns read statements only.
		lead := statedLead(toks)
		if stated, ok := asserted(lead); ok && len(stated) > 0 {
			st.quantities(stated, 0)
		}
		st.embeddedQuantities(toks, len(lead))
		return
	}
	first := 0
	for first < len(toks) && (!toks[first].word || fillers[toks[first].w]) {
		first++
	}
	if first == len(toks) || questionStarts[toks[first].w] {
		return
	}
	toks, ok := asserted(toks)
	if !ok {
		return
	}
	var conf float64
	for k := 0; k < len(toks); k++ {
		t := toks[k]
		if hedges[t.w] {
			conf = hedgedConfidence
		}
		if !reporting[t.w] {
			continue
		}
		p := k - 1
		for p >= 0 && (fillers[toks[p].w] || hedges[toks[p].w]) {
			p--
		}
		if p >= 0 && (toks[p].w == "i" || toks[p].w == "we") {
			if userHedges[t.w] && (p == 0 || isBoundary(toks[p-1])) {
				// "I think (that) I'm allergic to cats": the user's claim,
				// hedged.
				conf = hedgedConfidence
				end := k + 1
				if end < len(toks) && toks[end].w == "that" {
					end++
				}
				toks = append(append(make([]tok, 0, len(toks)), toks[:p]...), toks[end:]...)
				k = p - 1
			}
			continue // "I told Alex that I moved": the user's own statement
		}
		if t.w == "heard" || t.w == "thought" || t.w == "believed" {
			if p >= 0 && (toks[p].w == "have" || toks[p].w == "had") {
				continue
			}
		}
		if quoted {
			return // `"I live in Paris," Alex said`
		}
		toks = toks[:k] // the rest is someone else's claim
		break
	}
	st.quantities(toks, conf)
	// Learn names first so that clause splitting can see them.
	for i := range toks {
		if _, names, _, ok := st.matchRelation(toks, i); ok {
			for _, n := range names {
				st.addName(n)
			}
		}
	}
	var prev *frame
	st.tailName = ""
	for ci, c := range st.clauses(toks) {
		prev = st.clause(c, ci == 0, prev, conf)
		st.tailName = st.endName(c)
	}
}

// asserted returns the part of a sentence's tokens that is asserted: all
// of them, or those before an embedded question ("I don't know if that's
// a problem"); ok is false for a hypothetical sentence ("if", "in case").
func asserted(toks []tok) (_ []tok, ok bool) {
	for i, t := range toks {
		if (t.w == "if" || t.w == "whether") && i > 0 && embedders[toks[i-1].w] {
			// An embedded question, not a condition. What it asks is not
			// asserted; what precedes is.
			return toks[:i], true
		}
		if conditionals[t.w] || (t.w == "in" && i+1 < len(toks) && toks[i+1].w == "case") {
			return nil, false
		}
	}
	return toks, true
}

// intervalTo joins the two ends of an interval ("from 2015 to 2018").
var intervalTo = set("to", "until", "till", "through", "-", "–")

// isBoundary reports whether t separates clauses.
func isBoundary(t tok) bool {
	if !t.word {
		return true
	}
	switch t.w {
	case "and", "but", "so", "because", "while", "although", "though", "whereas", "plus",
		"then", "cause", "cos", "that", "as", "since":
		return true
	}
	return false
}

// clauses splits a sentence at commas and conjunctions that start a new
// clause. A comma or "and" in a list ("English and Spanish", "a dog and a
// cat") does not split.
func (st *state) clauses(toks []tok) [][]tok {
	var out [][]tok
	start := 0
	// runEnd and lead memoise two forward scans that would otherwise be
	// repeated for every k, quadratic in a long run of boundaries (a
	// document of punctuation or broken bytes): toks[k+1:runEnd] are
	// boundaries for any k < runEnd already scanned, and lead is the first
	// token at or after leadFrom that is neither a boundary nor a filler.
	runEnd, lead, leadFrom := 0, 0, -1
	for k := 0; k < len(toks); k++ {
		if toks[k].w == "considering" && k > start && k+1 < len(toks) && (toks[k+1].w == "i" || toks[k+1].w == "we") {
			// "…, considering I'm 35": a reason, stated as a clause
			out = append(out, toks[start:k])
			start = k + 1
			continue
		}
		if !isBoundary(toks[k]) || k == start {
			continue
		}
		j := max(k+1, runEnd)
		for j < len(toks) && isBoundary(toks[j]) {
			j++
		}
		runEnd = j
		if toks[k].w == "and" && j < len(toks) && isNameTok(toks[k-1]) && isNameTok(toks[j]) {
			continue // "Tom and Ann"
		}
		if leadFrom < 0 || start > lead || start < leadFrom {
			lead, leadFrom = start, start
			for lead < len(toks) && (isBoundary(toks[lead]) || fillers[toks[lead].w]) {
				lead++
			}
		}
		s := min(lead, k)
		if _, n := st.contextAt(toks, s); n > 0 && s+n > k {
			continue // "At work, I use …": the phrase belongs to its clause
		}
		if appositive(toks, s, k) {
			continue // "Alex, my brother, …": the relation names Alex
		}
		if toks[k].w == "," && likeAfter(toks, j) {
			continue // "…, like error handling": a preposition, not a verb
		}
		if toks[k].w == "," && j < len(toks) && isNameTok(toks[j]) && (k > 0 && isRelationNoun(toks[k-1]) ||
			k > 3 && toks[k-3].w == "of" && isRelationNoun(toks[k-4])) {
			continue // "my mom, Wendy, …": the name belongs to the relation
		}
		if toks[k].w == "," && j < len(toks) && questionStarts[toks[j].w] && !toks[j].cap {
			// "I'm 60, will that be a problem": a question follows, a clause
			// of its own.
			out = append(out, toks[start:k])
			start = k + 1
			k = j - 1
			continue
		}
		if j < len(toks) && st.startsClause(toks, j) {
			out = append(out, toks[start:k])
			start = k + 1
			k = j - 1
		}
	}
	return append(out, toks[start:])
}

// isRelationNoun reports whether t is a lower-case relation noun.
func isRelationNoun(t tok) bool {
	_, ok := relations[t.w]
	return ok && !t.cap
}

// likeAfter reports whether toks[j:] starts, after fillers, with "like",
// which after a comma introduces examples ("some features, like caching")
// rather than a clause whose subject likes something.
func likeAfter(toks []tok, j int) bool {
	for j < len(toks) && fillers[toks[j].w] {
		j++
	}
	return j < len(toks) && (toks[j].w == "like" || toks[j].w == "likes")
}

// appositive reports whether the comma at toks[k] follows a name that
// opens the clause at toks[s] and precedes "my/our [adjective] RELATION"
// and a comma or the end: "Alex, my brother, lives in Austin".
func appositive(toks []tok, s, k int) bool {
	if toks[k].w != "," || k == s || k-s > 2 {
		return false
	}
	for i := s; i < k; i++ {
		if !isNameTok(toks[i]) {
			return false
		}
	}
	j := k + 1
	if j >= len(toks) || (toks[j].w != "my" && toks[j].w != "our") {
		return false
	}
	j++
	for j < len(toks) && relationAdjectives[toks[j].w] && !toks[j].cap {
		j++
	}
	if j >= len(toks) {
		return false
	}
	if _, ok := relations[toks[j].w]; !ok || toks[j].cap {
		return false
	}
	return j+1 == len(toks) || toks[j+1].w == ","
}

// startsClause reports whether toks[j:] opens a clause: a subject, a known
// name, a verb that carries the previous subject over, or a time expression
// followed by one of those.
func (st *state) startsClause(toks []tok, j int) bool {
	for j < len(toks) && fillers[toks[j].w] {
		j++
	}
	if j >= len(toks) {
		return false
	}
	t := toks[j]
	switch t.w {
	case "i", "we", "my", "our", "he", "she", "who":
		return true
	}
	if t.cap && st.names[t.w] != "" {
		return true
	}
	if clauseVerbs[t.w] {
		return true
	}
	if _, n := st.contextAt(toks, j); n > 0 {
		return true // "… and at home I use a Pixel"
	}
	if m := matchTime(words(toks[j:]), st.at); m.n > 0 {
		return j+m.n < len(toks) && st.startsClause(toks, j+m.n)
	}
	return false
}

// contextAt matches a context phrase at toks[i] ("at work", "on weekends",
// "at the office") followed by an optional comma and a subject, and returns
// the canonical context and the number of tokens of the phrase and comma.
// Requiring a subject after it keeps objects out: in "I work at home" the
// phrase does not open the clause, and "At Home Depot I …" is followed by a
// name, not a subject.
func (st *state) contextAt(toks []tok, i int) (string, int) {
	for _, p := range contextPhrases {
		if i+len(p.words) > len(toks) {
			continue
		}
		ok := true
		for k, w := range p.words {
			if toks[i+k].w != w {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		n := len(p.words)
		if i+n < len(toks) && toks[i+n].w == "," {
			n++
		}
		j := i + n
		for j < len(toks) && fillers[toks[j].w] {
			j++
		}
		if j >= len(toks) {
			return "", 0
		}
		switch t := toks[j]; t.w {
		case "i", "we", "my", "our", "he", "she":
			return p.ctx, n
		default:
			if t.cap && st.names[t.w] != "" {
				return p.ctx, n
			}
		}
		return "", 0
	}
	return "", 0
}

func words(toks []tok) []string {
	w := make([]string, len(toks))
	for i, t := range toks {
		w[i] = t.w
	}
	return w
}

// spanText is the verbatim text from the first to the last token.
func (st *state) spanText(toks []tok) string {
	if len(toks) == 0 {
		return ""
	}
	return st.text[toks[0].s:toks[len(toks)-1].e]
}

// gap is the text between two tokens; empty for the halves of one
// contraction, which share a span.
func (st *state) gap(a, b tok) string {
	if b.s <= a.e {
		return ""
	}
	return st.text[a.e:b.s]
}

// objText renders tokens as an object: verbatim when they are contiguous in
// the text, else their words joined by spaces.
func (st *state) objText(toks []tok) string {
	if len(toks) == 0 {
		return ""
	}
	for k := 1; k < len(toks); k++ {
		if strings.TrimSpace(st.gap(toks[k-1], toks[k])) != "" {
			var parts []string
			for i, t := range toks {
				if i > 0 && t.s == toks[i-1].s {
					continue
				}
				parts = append(parts, st.text[t.s:t.e])
			}
			return strings.Join(parts, " ")
		}
	}
	return st.spanText(toks)
}

func (st *state) addName(name string) {
	low := strings.ToLower(name)
	st.names[low] = name
	if f, _, ok := strings.Cut(low, " "); ok {
		if _, taken := st.names[f]; !taken {
			st.names[f] = name
		}
	}
}

// clause extracts from one clause. first says whether it opens the
// sentence; prev is the previous clause's frame, whose subject and time a
// subject-less clause inherits. It returns this clause's frame.
func (st *state) clause(c []tok, first bool, prev *frame, conf float64) *frame {
	// Trim boundary tokens so the quote is the clause proper.
	for len(c) > 0 && isBoundary(c[0]) && c[0].w != "that" {
		c = c[1:]
	}
	for len(c) > 0 && !c[len(c)-1].word {
		c = c[:len(c)-1]
	}
	if len(c) == 0 {
		return prev
	}
	f := &frame{kind: Assert, conf: conf, quote: st.spanText(c)}
	drop := make([]bool, len(c))

	// A leading context phrase: "At work(,) I use a BlackBerry".
	k := 0
	for k < len(c) && fillers[c[k].w] {
		k++
	}
	if ctx, n := st.contextAt(c, k); n > 0 {
		f.context = ctx
		for i := k; i < k+n; i++ {
			drop[i] = true
		}
	}

	// Time expressions: resolve, then drop them from the working tokens.
	w := words(c)
	for i := 0; i < len(c); i++ {
		if !c[i].word || drop[i] {
			continue
		}
		m := matchTime(w[i:], st.at)
		if m.n == 0 {
			continue
		}
		if m.future {
			return nil // a plan, not a fact
		}
		if f.from.IsZero() && (w[i] != "now" && w[i] != "currently" && w[i] != "today") {
			f.from = m.t
		}
		if w[i] == "from" && i+m.n+1 < len(w) && intervalTo[w[i+m.n]] {
			// "from 2015 to 2018": the end of a past interval.
			if e := matchCore(w[i+m.n+1:], st.at, true); e.n > 0 {
				if e.future {
					return nil // "from now until 2030" is a plan
				}
				f.until = e.t
				m.n += 1 + e.n
			}
		}
		for k := i; k < i+m.n; k++ {
			drop[k] = true
		}
		i += m.n - 1
	}
	v := make([]tok, 0, len(c))
	for i, t := range c {
		if drop[i] {
			continue
		}
		switch {
		case t.w == "also" || t.w == "too" || (t.w == "as" && i+1 < len(c) && c[i+1].w == "well" && i+2 == len(c)):
			f.additive = true
			if t.w == "as" {
				drop[i+1] = true
				continue
			}
		case hedges[t.w]:
			f.conf = hedgedConfidence
			continue
		}
		if fillers[t.w] && !(t.w == "so" && i > 0) {
			continue
		}
		v = append(v, t)
	}
	if len(v) == 0 {
		return prev
	}

	st.relationEdges(v, f)
	st.appositiveAges(v, f)
	if st.favoriteReversed(v, f) {
		return f
	}

	pos := st.subject(v, first, prev, f)
	if pos < 0 || f.subj == "" {
		return &frame{subj: f.subj, from: f.from, context: f.context}
	}
	if f.inherited && prev != nil && f.from.IsZero() {
		f.from = prev.from // "Last month I got a job and moved to Pune"
	}
	if prev != nil && f.context == "" && (f.inherited || prev.subj == "") {
		// "At work I use a BlackBerry and carry a pager"; "At home, my
		// wife and I speak Spanish", where the opening clause named no one.
		f.context = prev.context
	}
	if pos <= len(v) {
		st.predicate(f, v[pos:])
	}
	if f.subj != User {
		st.lastPerson = f.subj
	}
	return f
}

// endName returns the person's name that ends clause c ("… my friend
// Dawn", "… met Robert"), or "".
func (st *state) endName(c []tok) string {
	e := len(c)
	for e > 0 && !c[e-1].word {
		e--
	}
	b := e
	for b > 0 && e-b < 2 && isNameTok(c[b-1]) && !honorifics[c[b-1].w] {
		b--
	}
	if b == e && e >= 2 && c[e-2].w == "as" && c[e-1].w == "someone" {
		return User // "as someone who's 60"
	}
	if b == e || (b > 0 && c[b-1].upper && c[b-1].word && !honorifics[c[b-1].w]) {
		return ""
	}
	name := st.objText(c[b:e])
	if n := st.names[strings.ToLower(name)]; n != "" {
		return n
	}
	if b > 0 && (c[b-1].w == "the" || c[b-1].w == "in" || c[b-1].w == "at" || c[b-1].w == "to" || c[b-1].w == "from") {
		return "" // a place or an organisation, not a person
	}
	return name
}

// possessor matches "my", "our", "his", "her" or "Name's" at v[i] and
// returns the owner's subject and the index after it.
func (st *state) possessor(v []tok, i int) (string, int, bool) {
	if i >= len(v) {
		return "", i, false
	}
	switch v[i].w {
	case "my", "our":
		return User, i + 1, true
	case "his", "her":
		if st.lastPerson != "" && i+1 < len(v) && !isBoundary(v[i+1]) {
			return st.lastPerson, i + 1, true
		}
		return "", i, false
	}
	if isNameTok(v[i]) && i+1 < len(v) && v[i+1].w == "'s" {
		if n := st.names[v[i].w]; n != "" {
			return n, i + 2, true
		}
		return st.text[v[i].s : v[i].e-2], i + 2, true
	}
	return "", i, false
}

// isNameTok reports whether t could be (part of) a person's name.
func isNameTok(t tok) bool {
	if !t.word || !t.cap || stopCaps[t.w] {
		return false
	}
	for _, r := range t.w {
		if !unicode.IsLetter(r) && r != '-' && r != '\'' {
			return false
		}
	}
	_, month := monthNames[t.w]
	return !month && !languages[t.w]
}

// names matches "Alex", "Sarah Connor", "Luna and Leo" at v[i].
func (st *state) nameList(v []tok, i int, many bool) ([]string, int) {
	var out []string
	for i < len(v) && isNameTok(v[i]) {
		j := i + 1
		if j < len(v) && isNameTok(v[j]) && !clauseVerbs[v[j].w] && st.gap(v[i], v[j]) == " " {
			j++ // surname
		}
		n := st.objText(v[i:j])
		if j < len(v) && v[j].w == "'s" {
			// "my friend Tanya's plans": the halves of "Tanya's" share
			// the word's span.
			n = strings.TrimSuffix(strings.TrimSuffix(n, "'s"), "’s")
		}
		out = append(out, n)
		i = j
		if !many || i+1 >= len(v) {
			break
		}
		if v[i].w == "and" || v[i].w == "&" || v[i].w == "," {
			k := i + 1
			if v[i].w == "," && k < len(v) && v[k].w == "and" {
				k++
			}
			if k < len(v) && isNameTok(v[k]) {
				i = k
				continue
			}
		}
		break
	}
	return out, i
}

// matchRelation matches POSSESSOR [adjective]* RELATION NAME(s) at v[i]:
// "my brother Alex", "my best friend Sarah", "our friends Tom and Ann",
// "Alex's wife Emma".
func (st *state) matchRelation(v []tok, i int) (string, []string, int, bool) {
	_, j, ok := st.possessor(v, i)
	if !ok {
		return "", nil, i, false
	}
	for j < len(v) && relationAdjectives[v[j].w] && !v[j].cap {
		j++
	}
	if j >= len(v) {
		return "", nil, i, false
	}
	rel, ok := relations[v[j].w]
	if !ok || v[j].cap {
		return "", nil, i, false
	}
	plural := strings.HasSuffix(v[j].w, "s") && v[j].w != "boss"
	j++
	if at(v, j) == "of" && (plausibleAge(at(v, j+1)) || numberWords[at(v, j+1)] > 0) {
		if _, _, _, ok := unitOf(at(v, j+2)); ok && at(v, j+3) == "," {
			j += 3 // "my partner of 5 years, Joshua"
		}
	}
	if j < len(v) && v[j].w == "," {
		j++ // "my brother, Alex, …"
	}
	names, k := st.nameList(v, j, plural)
	if len(names) == 0 {
		return rel, nil, j, true
	}
	return rel, names, k, true
}

// relationEdges emits the relation edges a clause states, wherever they
// sit in it: "my brother Alex", "Alex is my brother", "my brother's name is
// Alex", "I have a sister named Maya".
func (st *state) relationEdges(v []tok, f *frame) {
	edge := func(owner, rel, name string) {
		st.addName(name)
		st.relName[rel] = name
		st.lastPerson = name // "my partner David, he's 57"
		e := *f
		e.subj, e.kind, e.from, e.additive, e.context, e.intent = owner, Assert, time.Time{}, false, "", false
		st.emit(&e, rel, name)
	}
	negated := false
	for _, t := range v {
		if negations[t.w] {
			negated = true
		}
	}
	for i := 0; i < len(v); i++ {
		// POSSESSOR REL NAME…
		owner, _, ok := st.possessor(v, i)
		if ok {
			rel, names, next, ok := st.matchRelation(v, i)
			if ok && len(names) > 0 {
				for _, n := range names {
					edge(owner, rel, n)
				}
				i = next - 1
				continue
			}
			// my brother's name is Alex / my brother is called Alex
			if ok {
				j := next
				switch {
				case j+3 < len(v) && v[j].w == "'s" && v[j+1].w == "name" && v[j+2].w == "is" && isNameTok(v[j+3]):
					ns, _ := st.nameList(v, j+3, false)
					edge(owner, rel, ns[0])
				case j+2 < len(v) && (v[j].w == "is" || v[j].w == "'s") && (v[j+1].w == "called" || v[j+1].w == "named") && isNameTok(v[j+2]):
					ns, _ := st.nameList(v, j+2, false)
					edge(owner, rel, ns[0])
				}
			}
		}
		// Alex is my brother / Alex, my brother, …
		// "… with Stephen, my partner, …", "Kimberly, a close friend"
		comma := i+1 < len(v) && v[i+1].w == "," && (i == 0 || !v[i-1].upper)
		if isNameTok(v[i]) && (i == 0 || isBoundary(v[i-1]) || comma) && i+2 < len(v) && (v[i+1].w == "is" || v[i+1].w == ",") {
			ns, _ := st.nameList(v, i, false)
			own, j, ok := st.possessor(v, i+2)
			if !ok && comma && (v[i+2].w == "a" || v[i+2].w == "an") {
				own, j, ok = User, i+3, true
			}
			if ok && len(ns) == 1 {
				for j < len(v) && relationAdjectives[v[j].w] {
					j++
				}
				if j < len(v) {
					if rel, ok := relations[v[j].w]; ok && (j+1 == len(v) || !v[j+1].word || isBoundary(v[j+1])) {
						edge(own, rel, ns[0])
					}
				}
			}
		}
		// I have a sister named Maya / we have two sons called Leo and Max
		if !negated && (v[i].w == "have" || v[i].w == "has") && i > 0 && (v[i-1].w == "i" || v[i-1].w == "we") {
			j := i + 1
			if j < len(v) && v[j].w == "got" {
				j++
			}
			if j < len(v) && (v[j].w == "a" || v[j].w == "an" || numberWords[v[j].w] > 0) {
				j++
			}
			for j < len(v) && relationAdjectives[v[j].w] {
				j++
			}
			if j+2 < len(v) {
				if rel, ok := relations[v[j].w]; ok && (v[j+1].w == "named" || v[j+1].w == "called") {
					ns, _ := st.nameList(v, j+2, true)
					for _, n := range ns {
						edge(User, rel, n)
					}
				} else if ok && v[j+1].w == "," && !v[j].cap {
					// "I've got a close friend, David, who …"
					if ns, k := st.nameList(v, j+2, false); len(ns) == 1 && (k == len(v) || !v[k].word || isBoundary(v[k])) {
						edge(User, rel, ns[0])
					}
				}
			}
		}
	}
}

// appositiveAges emits the ages a clause gives beside a name: "my friend
// Tamara, 41, …", "Greg, 23, …", "Alan, a 41-year-old cinematographer".
func (st *state) appositiveAges(v []tok, f *frame) {
	for i := 0; i+2 < len(v); i++ {
		if !isNameTok(v[i]) || honorifics[v[i].w] || (i > 0 && v[i-1].upper && v[i-1].word && !honorifics[v[i-1].w]) ||
			strings.ToUpper(st.text[v[i].s:v[i].e]) == st.text[v[i].s:v[i].e] || at(v, i-1) == "am" {
			continue // not "7:30 PM, 21", nor the speaker's own "I'm Darryl, a 60-year-old …"
		}
		ns, k := st.nameList(v, i, false)
		if len(ns) != 1 || at(v, k) != "," {
			continue
		}
		age := ""
		if n, next, ok := ageAt(v, k+1); ok && (next == len(v) || v[next].w == "," || v[next].w == "and") && at(v, next) != "years" {
			age = n
		} else if a := at(v, k+1); a == "a" || a == "an" {
			age, _ = yearOld(at(v, k+2))
		}
		if age == "" {
			continue
		}
		name := ns[0]
		if n := st.names[strings.ToLower(name)]; n != "" {
			name = n
		}
		e := *f
		e.subj, e.kind, e.from, e.additive, e.context, e.intent = name, Assert, time.Time{}, false, "", false
		st.emit(&e, "age", age)
		i = k
	}
}

// favoriteReversed handles "Blue is my favorite color".
func (st *state) favoriteReversed(v []tok, f *frame) bool {
	for i := 1; i+3 < len(v); i++ {
		if v[i].w != "is" && v[i].w != "'s" && v[i].w != "are" {
			continue
		}
		owner, j, ok := st.possessor(v, i+1)
		if !ok || j >= len(v) || !isFavorite(v[j].w) {
			continue
		}
		thing := v[j+1:]
		if len(thing) == 0 {
			return false
		}
		obj := v[:i]
		if len(obj) > 0 && (obj[0].w == "the" && !obj[0].cap) {
			obj = obj[1:]
		}
		if len(obj) == 0 || negatedOrModal(v) {
			return false
		}
		f.subj = owner
		st.emit(f, favoritePredicate(thing), st.objText(obj))
		return true
	}
	return false
}

func isFavorite(w string) bool { return w == "favorite" || w == "favourite" || w == "fave" }

// favoritePredicate builds favorite_<thing> in snake case, US spelling.
func favoritePredicate(thing []tok) string {
	var parts []string
	for _, t := range thing {
		if !t.word {
			break
		}
		w := t.w
		if us, ok := britishToUS[w]; ok {
			w = us
		}
		var b strings.Builder
		for _, r := range w {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				b.WriteRune(unicode.ToLower(r))
			} else {
				b.WriteByte('_')
			}
		}
		parts = append(parts, strings.Trim(b.String(), "_"))
		if len(parts) == 4 {
			break
		}
	}
	return "favorite_" + strings.Join(parts, "_")
}

func negatedOrModal(v []tok) bool {
	for _, t := range v {
		if negations[t.w] || (modals[t.w] && !t.cap) {
			return true
		}
	}
	return false
}

// subject finds the clause's subject, sets f.subj and returns the index of
// the first predicate token, or -1 when the clause has been fully handled
// (possessive forms such as "my favorite color is blue") or has no subject
// memor can name.
func (st *state) subject(v []tok, first bool, prev *frame, f *frame) int {
	i := 0
	for i < len(v) && isBoundary(v[i]) {
		i++
	}
	if i >= len(v) {
		return -1
	}
	// "My wife and I", "Alex and I", "me and Sam".
	for k := i + 1; k < len(v) && k <= i+5; k++ {
		if v[k].w == "and" && k+1 < len(v) && v[k+1].w == "i" {
			f.subj = User
			return k + 2
		}
		if !v[k].word && v[k].w != "'s" {
			break
		}
	}
	switch v[i].w {
	case "i", "we":
		f.subj = User
		return i + 1
	case "me":
		if i+2 < len(v) && v[i+1].w == "and" {
			f.subj = User
			return -1
		}
	case "who":
		if at(v, i+1) == "are" || at(v, i+1) == "were" {
			return -1 // "my parents, Amy and Kyle, who are 63 and 77"
		}
		if st.tailName != "" {
			f.subj = st.tailName // "my friend Dawn, who's 59"
			return i + 1
		}
		if prev != nil && prev.subj != "" && prev.subj != User {
			f.subj = prev.subj
			return i + 1
		}
		return -1
	case "he", "she":
		if st.lastPerson != "" {
			f.subj = st.lastPerson
			return i + 1
		}
		return -1
	}
	if owner, j, ok := st.possessor(v, i); ok {
		f.subj = owner
		if j < len(v) && isFavorite(v[j].w) {
			st.favorite(f, v[j+1:])
			return -1
		}
		if rel, names, next, ok := st.matchRelation(v, i); ok {
			if next < len(v) && v[next].w == "'s" {
				return -1 // "my brother's dog": handled as an edge or not at all
			}
			switch {
			case len(names) > 0:
				f.subj = names[0]
			case st.relName[rel] != "" && owner == User:
				f.subj = st.relName[rel]
			default:
				f.subj = ""
				return -1 // "my brother lives in Austin": nobody memor can name
			}
			return next
		}
		st.possessedThing(f, v[j:])
		return -1
	}
	if isNameTok(v[i]) {
		if n := st.names[v[i].w]; n != "" {
			f.subj = n
			j := i + 1
			if strings.Contains(n, " ") && j < len(v) && isNameTok(v[j]) {
				j++
			}
			return j
		}
	}
	// A clause that starts with a verb carries the previous subject over;
	// a sentence may start with a diary verb and no subject at all.
	if clauseVerbs[v[i].w] && !v[i].cap || diaryVerbs[v[i].w] {
		if prev != nil && prev.subj != "" && !first {
			f.subj, f.inherited = prev.subj, true
			return i
		}
		if first && diaryVerbs[v[i].w] {
			f.subj = User
			return i
		}
	}
	return -1
}
