package memor

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/memor-db/memor/graph"
	"github.com/memor-db/memor/index/bm25"
	"github.com/memor-db/memor/internal/norm"
	"github.com/memor-db/memor/lang/en"
)

// A question is about someone. Serving facts about someone else is a
// wrong answer that looks right ("where does my friend Sarah live?"
// answered with the user's own city), so Query works out whom a question
// is about and keeps only facts about them:
//
//  1. people the question names ("Sarah", "Alex");
//  2. else people it names by relation ("my brother" → Alex), through the
//     user's relation facts visible in the view — a relation with nobody
//     behind it ("my sister", none known) means nothing is known;
//  3. else the user, for a first-person question;
//  4. else anyone.
//
// What the question asks about is not a filter: a word no memory holds
// ("pet", when the fact says "adopted") leaves the answer to ranking, and
// to the abstention decision (see support).

// focus is whom a question is about.
type focus struct {
	// context, when the question names one ("at home"), excludes facts of
	// other contexts.
	context string
	// about holds normalised entity names; nil means anyone.
	about map[string]bool
	// relation is the relation predicate the question went through, and
	// owner the normalised subject of its facts ("user" for "my brother",
	// "caroline" for "Caroline's brother"), so the relation fact itself
	// ("user brother Alex") is about them too.
	relation, owner string
	// asked is the question with its relation phrase ("Caroline's
	// brother", "my brother") replaced by the names it resolved to, if it
	// has one (see resolve).
	asked string
	// relatives are the names of the people the relation reached, as stored.
	relatives []string
	// ownerName is the owner as named, when a relation of someone other
	// than the user resolves to nobody (see mention).
	ownerName string
	// nothing: the question is about someone or something memor does not
	// know in this view; the answer is nothing.
	nothing bool
	// mention: the question names someone by a relation word that no
	// relation fact resolves, but visible episodes say it: episodes that
	// say the word are about them.
	mention string
	// seeds start the graph walk.
	seeds []string
	// named: the question names someone memor holds visible facts about,
	// by name ("Alex", "the user") or through a relation fact ("my
	// brother" → Alex). Such a question is answered with what is known
	// about them, however few of its words they match (see support).
	named bool
}

// queryFocus works out whom text is about, in the view facts.
func (e *Engine) queryFocus(ctx context.Context, ui *userIndex, text string, facts, allow *roaring.Bitmap) (focus, error) {
	var f focus
	ws := en.Words(text)
	first := false
	for i, w := range ws {
		if en.FirstPerson(w) {
			first = true
		}
		if c, ok := en.ContextAt(ws, i); ok {
			f.context = c
		}
	}
	owner := ""
	for _, name := range ui.g.Entities(text) {
		k := norm.Key(name)
		// Only someone memor holds visible facts about can be the focus:
		// "do I still live in Seattle?" names a place, not a person.
		about, err := hasFacts(ctx, ui, name, facts)
		if err != nil {
			return f, err
		}
		if about {
			f.named = true
			if _, ok := en.PossessedRelation(text, name); ok && owner == "" {
				// "Caroline's brother" is not Caroline: whom it names
				// is found through her relation facts, as "my
				// brother" is through the owner's.
				owner = name
			}
		}
		if k == "user" {
			// "Where does the user live?" names the owner in the third
			// person: known, but no narrower than anyone.
			continue
		}
		if about {
			if f.about == nil {
				f.about = map[string]bool{}
			}
			f.about[k] = true
			f.seeds = append(f.seeds, name)
		}
	}
	if owner != "" {
		p, _ := en.PossessedRelation(text, owner)
		f.about = nil
		f, err := f.throughRelation(ctx, ui, owner, p.Relation, p.Noun, facts, allow)
		if err == nil && len(f.about) > 0 {
			f.asked = f.replaced(text, p)
		}
		return f, err
	}
	if f.about != nil {
		if withFirstPerson(ws) {
			// "the budget Alexis and I agreed on": the owner is asked
			// about beside whom the question names.
			f.about["user"] = true
			f.seeds = append(f.seeds, "user")
		}
		return f, nil
	}
	for _, w := range ws {
		if rel, ok := en.Relation(w); ok && first {
			f, err := f.throughRelation(ctx, ui, "user", rel, w, facts, allow)
			if p, ok := en.FirstPersonRelation(text); ok && p.Relation == rel && err == nil && len(f.about) > 0 {
				f.asked = f.replaced(text, p)
			}
			return f, err
		}
	}
	if first {
		f.about = map[string]bool{"user": true}
		f.seeds = []string{"user"}
	}
	return f, nil
}

// withFirstPerson reports whether the words ws join a first-person
// pronoun to someone with "and" ("Alexis and I", "me and Alex"): the
// question is about them together, the owner included. A pronoun that
// is not joined ("Have I worked with Michael?") leaves the question about
// whom it names.
func withFirstPerson(ws []string) bool {
	for i, w := range ws {
		if w != "i" && w != "me" {
			continue
		}
		if (i > 0 && ws[i-1] == "and") || (i+1 < len(ws) && ws[i+1] == "and") {
			return true
		}
	}
	return false
}

// resolve returns the question with the phrase that names the people in
// focus through a relation replaced by their names: "Where does
// Caroline's brother live?" asks where Alex lives, as does "Where does my
// brother live?" of the owner whose brother is Alex. The owner and the
// relation identify whom the question is about; left in, they are the
// words the relation fact ("Caroline brother Alex") matches best, and it
// would outrank what is asked about Alex.
func (f focus) resolve(text string) string {
	if f.asked != "" {
		return f.asked
	}
	return text
}

// replaced returns text with the phrase p replaced by the names of the
// people the relation reached.
func (f focus) replaced(text string, p en.Possessed) string {
	return text[:p.Start] + strings.Join(f.relatives, " and ") + text[p.End:]
}

// throughRelation narrows f to whom owner's relation rel names ("my
// brother", owner "user"; "Caroline's brother", owner Caroline), through
// owner's relation facts in the view; noun is the word the question said.
func (f focus) throughRelation(ctx context.Context, ui *userIndex, owner, rel, noun string, facts, allow *roaring.Bitmap) (focus, error) {
	paths, err := ui.g.BFSLimit(ctx, []string{owner}, 1, 4*candidatesPerSignal, facts)
	if err != nil {
		return f, err
	}
	f.about, f.relation, f.owner = map[string]bool{}, rel, norm.Key(owner)
	for _, p := range paths {
		if h := p.Hops[0]; h.Label == rel && !h.Inverse && !f.about[norm.Key(h.To)] {
			f.about[norm.Key(h.To)] = true
			f.relatives = append(f.relatives, h.To)
			f.named = true
		}
	}
	if len(f.about) == 0 {
		// Nobody is known by that relation. If no visible memory says
		// the word either, nothing is known; if one does (an episode
		// nothing was extracted from: "my sister lives in Denver now"),
		// the episodes that say it are what is known.
		hits, err := ui.bm.Search(ctx, noun, 1, allow)
		if err != nil {
			return f, err
		}
		if len(hits) == 0 || hits[0].Score <= 0 {
			f.nothing = true
		}
		f.mention = noun
		f.ownerName = owner
	}
	f.seeds = []string{owner}
	return f, nil
}

// hasFacts reports whether entity is the subject of a fact in the view
// (among the first paths of its walk).
func hasFacts(ctx context.Context, ui *userIndex, entity string, facts *roaring.Bitmap) (bool, error) {
	// Most names a question shares with memory are values (a city, an
	// employer), the subject of nothing: the entity's subject documents
	// answer that without walking its many incoming edges.
	subj := roaring.New()
	ui.g.AddSubjectDocs(subj, entity)
	if !subj.Intersects(facts) {
		return false, nil
	}
	paths, err := ui.g.BFSLimit(ctx, []string{entity}, 1, 4*candidatesPerSignal, facts)
	if err != nil {
		return false, err
	}
	for _, p := range paths {
		if !p.Hops[0].Inverse {
			return true, nil
		}
	}
	return false, nil
}

// admits reports whether a loaded candidate is about the focus. An episode
// is about the focus when the facts it produced all are, or, for an episode
// nothing was extracted from, when it names someone in focus (any
// first-person episode is about the user).
func (f focus) admits(ui *userIndex, c *candidate) bool {
	if f.context != "" {
		if c.fact != nil && c.fact.Context != "" && norm.Key(c.fact.Context) != f.context {
			return false
		}
		if c.episode != nil {
			for ctx := range ui.episodeContexts(c.episode.Seq) {
				if ctx != "" && ctx != f.context {
					return false
				}
			}
		}
	}
	if f.about == nil {
		return true
	}
	if c.fact != nil {
		s := norm.Key(c.fact.Subject)
		return f.about[s] || (s == f.owner && f.relation != "" && c.fact.Predicate == f.relation && f.about[norm.Key(c.fact.Object)])
	}
	if c.episode == nil {
		return false
	}
	if f.about["user"] {
		// A first-person question: an episode qualifies unless its facts
		// are about someone else (its speaker aside, see saidBy).
		for s := range ui.episodeSubjects(c.episode.Seq) {
			if s != "user" && !saidBy(c.episode, s) {
				return false
			}
		}
		return true
	}
	// Someone else: the episode must name them (or be said by them), and
	// the facts it produced must be about them (or be the user's relation
	// to them).
	for s := range ui.episodeSubjects(c.episode.Seq) {
		if !f.about[s] && !(s == f.owner && f.relation != "") {
			return false
		}
	}
	if f.spokenBy(c.episode) {
		return true
	}
	text := " " + strings.Join(en.Words(c.episode.Text), " ") + " "
	if f.mention != "" && strings.Contains(text, " "+f.mention+" ") {
		// Someone's "sister" is theirs: a named owner's mention counts
		// in the owner's turns and in turns naming them.
		return f.ownerName == "" || f.owner == "user" || saidBy(c.episode, f.owner) ||
			strings.Contains(text, " "+strings.Join(en.Words(f.ownerName), " ")+" ")
	}
	for name := range f.about {
		if strings.Contains(text, " "+strings.Join(en.Words(name), " ")+" ") {
			return true
		}
	}
	return false
}

// readsText reports whether admits may read an episode's text: for a
// question about someone other than the user, an episode must name them.
func (f focus) readsText() bool {
	return f.about != nil && !f.about["user"]
}

// spokenBy reports whether someone in focus said ep (see Speaker): a
// participant's own turn is about them as much as a turn naming them.
func (f focus) spokenBy(ep *Episode) bool {
	return ep.Speaker != "" && f.about[norm.Key(ep.voice())]
}

// voicePrior is what a turn said by whom the question is about gains:
// its score is multiplied by 1 + voicePrior. Whom a question is about is a
// prior, not only a filter: what they said themselves ("I've uploaded 30
// documents") is first-hand, where another participant's turn that
// shares the question's words (an assistant's long answer about the
// upload) is at best second-hand. The value was measured on the
// development conversations (README, Retrieval on real conversations).
const voicePrior = 0.2

// voice applies voicePrior to a loaded episode said by someone in focus:
// the owner for a first-person question, a named participant otherwise.
func (f focus) voice(c *candidate) {
	if f.about == nil || c.episode == nil || !f.about[norm.Key(c.episode.voice())] {
		return
	}
	c.signals.Voice = 1 + voicePrior
	c.score *= c.signals.Voice
}

// saidBy reports whether the subject key s is ep's speaker. A turn
// another participant says to the owner is part of the owner's
// conversation: what the speaker says of themselves ("I'd recommend …",
// an assistant's "as a producer, I …") does not make it about someone
// else, as "my brother Alex lives in Austin" does. Their facts are still
// theirs: admits keeps a fact about the speaker out of the owner's answer.
func saidBy(ep *Episode, s string) bool {
	return ep.Speaker != "" && norm.Key(ep.voice()) == s
}

// candidates returns the documents that may be served for a question
// with a focus (f.about not nil): the visible versions whose subject
// admitsSubject keeps, found through the graph's subject edges, and the
// servable episodes eps (nil: none), which admits judges once loaded.
func (f focus) candidates(ui *userIndex, facts, eps *roaring.Bitmap) *roaring.Bitmap {
	names := make([]string, 0, len(f.about)+1)
	for k := range f.about {
		names = append(names, k)
	}
	if f.relation != "" {
		names = append(names, f.owner)
	}
	out := roaring.New()
	ui.g.AddSubjectDocs(out, names...)
	out.And(facts)
	if eps != nil {
		out.Or(eps)
	}
	return out
}

// admitsSubject is the subject half of admits, for rejecting a fact before
// it is read: it keeps anything admits might keep.
func (f focus) admitsSubject(subjKey string) bool {
	return f.about == nil || f.about[subjKey] || (subjKey == f.owner && f.relation != "")
}

// pathScore is how many of the question's words a graph path explains, per
// hop.
func pathScore(p graph.Path, tokens *pathTokens) float64 {
	return float64(len(pathWords(p, tokens, nil))) / float64(len(p.Hops))
}

// pathTokens holds what one query's paths explain of its words: for each
// hop, label, gloss and entity name met, the words its tokens hold. The
// paths share most of them (a walk's paths share their first hops, and
// support reads the walks the entity stage found), so each is matched
// once per query, not once per path and hop; a hop met again costs one
// lookup by its edge. The tokens of a label or an entity are the user's
// (userIndex.tokens), so a query tokenises only the names no earlier
// query of the user reached and bm25.MayContain does not rule out; a
// gloss's follow the predicate catalogue, which RegisterPredicate
// changes, and stay the query's.
type pathTokens struct {
	ui    *userIndex
	words map[string]bool
	list  []string // words, for bm25.MayContain (ranging a map costs more)
	gloss func(string) string
	// of: label or entity name → the words its tokens hold (nil: none);
	// glossOf: label → the words its gloss's tokens hold; hop: a hop's
	// edge (hopKey) → the words of its label, gloss and entity, each once.
	of, glossOf map[string][]string
	hop         map[uint64][]string
}

// newPathTokens returns the pathTokens of a query's words, for paths that
// meet about names distinct labels and entities (a hint).
func newPathTokens(ui *userIndex, words map[string]bool, gloss func(string) string, names int) *pathTokens {
	pt := &pathTokens{ui: ui, words: words, gloss: gloss, of: make(map[string][]string, names), glossOf: map[string][]string{},
		hop: make(map[uint64][]string, names)}
	for w := range words {
		pt.list = append(pt.list, w)
	}
	return pt
}

// pathWords appends to matched the question's words a path explains: in
// its predicates (their names and glosses) and the entities it reaches.
func pathWords(p graph.Path, tokens *pathTokens, matched []string) []string {
	for _, h := range p.Hops {
		for _, w := range tokens.hopWords(h) {
			if !slices.Contains(matched, w) {
				matched = append(matched, w)
			}
		}
	}
	return matched
}

// hopWords returns the question's words in hop h's label, the label's
// gloss and the entity it reaches, each once. A hop is its edge's
// document walked one way: the same label and entity wherever met.
func (pt *pathTokens) hopWords(h graph.Hop) []string {
	k := hopKey(h)
	if ws, ok := pt.hop[k]; ok {
		return ws
	}
	var ws []string
	for _, part := range [...][]string{pt.wordsIn(h.Label), pt.glossWords(h.Label), pt.wordsIn(h.To)} {
		for _, w := range part {
			if !slices.Contains(ws, w) {
				ws = append(ws, w)
			}
		}
	}
	pt.hop[k] = ws
	return ws
}

// hopKey is what identifies hop h in pathTokens.hop: its edge's document
// and the direction it was walked.
func hopKey(h graph.Hop) uint64 {
	k := uint64(h.Doc) << 1
	if h.Inverse {
		k |= 1
	}
	return k
}

// wordsIn returns the question's words among the tokens of a label or an
// entity name s, in their order. A name none of the words can be in
// (bm25.MayContain) is not tokenised: a user's first query reaches
// hundreds of entities, few of which hold a word of the question, and
// tokenising each (a few allocations) was a large part of that query.
func (pt *pathTokens) wordsIn(s string) []string {
	ws, ok := pt.of[s]
	if ok {
		return ws
	}
	ts, held := pt.ui.tokensHeld(s)
	if !held {
		for _, w := range pt.list {
			if bm25.MayContain(s, w) {
				ts = pt.ui.tokens(s)
				break
			}
		}
	}
	ws = pt.among(ts)
	pt.of[s] = ws
	return ws
}

// glossWords is wordsIn for the gloss of label.
func (pt *pathTokens) glossWords(label string) []string {
	ws, ok := pt.glossOf[label]
	if !ok {
		ws = pt.among(bm25.Tokenize(pt.gloss(label)))
		pt.glossOf[label] = ws
	}
	return ws
}

// among returns the tokens ts that are the question's words (nil if none).
func (pt *pathTokens) among(ts []string) []string {
	var ws []string
	for _, t := range ts {
		if pt.words[t] {
			ws = append(ws, t)
		}
	}
	return ws
}

// DefaultMinSupport is the support (see QueryOptions.MinSupport) below
// which Query answers "nothing known". It is calibrated on questions a
// conversation cannot answer against questions it can (see the README,
// "What Query serves"): at this value few answerable questions are refused.
const DefaultMinSupport = 0.3

// support is how much of the question the best candidate explains: the
// largest share of the question's distinct index terms (bm25.Tokenize: stop
// words dropped, stemmed) that one candidate matches, in its text or along
// the graph path that reached it. It reads the candidates the text and
// graph signals found, not their fused scores, so it does not move with
// the fusion weights. The terms weigh alike: weighting them by IDF, as
// BM25 does, makes the topic of a small memory ("work" in every one of a
// few documents) weigh nothing beside a question word no memory holds
// ("where"). A date the question names ("on 2024-12-01") selects the
// view, not what is asked about, and is left out. A question with no
// other index terms has support 1: there is nothing to judge it by.
//
// tokens, if not nil, is what the entity stage matched of the question's
// words along its paths (the walks support reads): used when support's
// terms are those words (the question names no date), else support
// matches its own.
func (e *Engine) support(ui *userIndex, text string, cands map[uint32]*candidate, tokens *pathTokens) float64 {
	terms := map[string]bool{}
	for _, t := range bm25.Tokenize(en.WithoutDates(text, e.now())) {
		terms[t] = true
	}
	if len(terms) == 0 {
		return 1
	}
	if tokens == nil || tokens.ui != ui || !maps.Equal(tokens.words, terms) {
		tokens = newPathTokens(ui, terms, e.preds.gloss, len(cands))
	}
	best := 0
	var matched []string
	for _, c := range cands {
		if c.signals.BM25 == 0 && c.signals.Entity == 0 {
			continue
		}
		matched = matched[:0]
		if c.signals.BM25 > 0 {
			for _, te := range ui.bm.Explain(text, c.doc).Terms {
				if te.TF > 0 && terms[te.Term] && !slices.Contains(matched, te.Term) {
					matched = append(matched, te.Term)
				}
			}
		}
		if len(c.walk.Hops) > 0 {
			matched = pathWords(c.walk, tokens, matched)
		} else if c.path != "" {
			for _, t := range bm25.Tokenize(c.path) {
				if terms[t] && !slices.Contains(matched, t) {
					matched = append(matched, t)
				}
			}
		}
		best = max(best, len(matched))
	}
	return float64(best) / float64(len(terms))
}
