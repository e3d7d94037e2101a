package extract

import "strings"

// participles that make a preceding "have" an auxiliary.
var participles = set("been", "got", "gotten", "had", "become", "begun", "done", "left",
	"lost", "spoken", "taken", "made", "bought", "known", "quit", "moved", "lived", "worked",
	"played", "adopted", "studied", "started", "joined", "switched", "graduated", "retired",
	"stopped", "rescued", "learned", "learnt", "relocated", "settled", "always", "enrolled",
	"picked", "taken", "given", "gone", "went", "resigned", "upgraded", "converted", "married",
	"owned", "used", "loved", "liked", "enjoyed", "welcomed", "landed", "accepted", "found")

// eventParticiples may follow "was"/"were" as an event, not a past state.
var eventParticiples = set("promoted", "hired", "laid", "fired", "married", "engaged",
	"divorced", "diagnosed", "let", "made")

// npStop ends a noun phrase.
var npStop = set("because", "since", "for", "with", "at", "in", "on", "from", "when", "but",
	"so", "that", "which", "who", "if", "than", "as", "to", "too", "very", "much", "lot",
	"lots", "anymore", "though", "although", "while", "every", "each", "right", "here",
	"there", "lately", "more", "most", "is", "are", "was", "were", "am", "be", "been", "do",
	"does", "did", "have", "has", "had", "named", "called", "not", "no", "i", "we", "you",
	"he", "she", "they", "it", "about", "and", "or", "&", "'s", "by", "after", "before",
	"like", "whenever", "where", "during", "until", "into", "over", "under", "around",
	"me", "him", "us", "them", "without", "based", "located", "earning", "can", "could", "would", "should", "will",
	"might", "must", "shall")

// rejectObj are words that cannot open an object ("I love it").
var rejectObj = set("it", "that", "this", "them", "you", "him", "her", "me", "us", "those",
	"these", "everything", "anything", "something", "nothing", "one", "to", "when", "how",
	"what", "my", "your", "his", "their", "our", "its", "being", "having", "doing", "going",
	"there", "here", "people", "myself", "yourself", "himself", "herself", "all", "both",
	"someone", "somebody", "anyone", "everyone", "so", "such", "where", "why", "who",
	"everywhere", "anywhere", "somewhere", "nowhere", "without", "ones", "idea")

var determiners = set("a", "an", "the", "some", "any", "lots", "plenty")

// nounPhrase matches a short noun phrase at v[i] and returns it, its head
// word and the index after it.
func (st *state) nounPhrase(v []tok, i int) (string, string, int, bool) {
	for i < len(v) && determiners[v[i].w] && !v[i].cap {
		i++
		if i < len(v) && v[i].w == "of" {
			i++
		}
	}
	if i >= len(v) || !v[i].word || rejectObj[v[i].w] || npStop[v[i].w] {
		return "", "", i, false
	}
	j := i
	for j < len(v) && j-i < 6 && (v[j].word || v[j].w == "/") && !npStop[v[j].w] {
		if v[j].w == "/" {
			// "TV/film producer": a slash between two words, unspaced.
			if j == i || j+1 >= len(v) || !v[j+1].word || st.gap(v[j-1], v[j]) != "" || st.gap(v[j], v[j+1]) != "" {
				break
			}
			j += 2
			continue
		}
		if v[j].w == "of" {
			// "Lord of the Rings", "Bank of America": a title or name
			// continues through "of (the)"; any other "of" ends the
			// phrase, and then the phrase is only the head of a longer
			// one ("the idea of a party"): not an object.
			k := j + 1
			if k < len(v) && (v[k].w == "the" || v[k].w == "a") {
				k++
			}
			if v[i].upper && k < len(v) && v[k].upper && v[j-1].w != "fan" {
				j = k + 1
				continue
			}
			if v[j-1].w != "fan" {
				return "", "", i, false
			}
			break
		}
		if j > i && strings.TrimSpace(st.gap(v[j-1], v[j])) != "" {
			break
		}
		j++
	}
	if j == i || determiners[v[j-1].w] || v[j-1].w == "a" || v[j-1].w == "an" {
		return "", "", i, false // "declining a $50,000 offer": the phrase lost its noun
	}
	if j-i == 1 && !v[i].upper && v[i].w != "" && (strings.HasSuffix(v[i].w, "ed") || pastVerbs[v[i].w]) {
		return "", "", i, false // a verb, not a thing: "…, met me at …"
	}
	return st.objText(v[i:j]), v[j-1].w, j, true
}

// list matches item (("," | "and" | "or" | ", and") item)* at v[i]. A list
// joined by commas must end with "and" or "or" ("fantasy, sci-fi, and
// history"); otherwise what follows a comma is another clause ("Lauren,
// who loves sneakers, met me …") and only the first item counts.
func list(v []tok, i int, item func([]tok, int) (string, int, bool)) ([]string, int) {
	var out []string
	afterFirst := i
	comma, conj := false, false
	for {
		obj, next, ok := item(v, i)
		if !ok {
			break
		}
		out = append(out, obj)
		i = next
		if len(out) == 1 {
			afterFirst = i
		}
		if i >= len(v) {
			break
		}
		k := i
		last := false
		switch v[k].w {
		case ",":
			k++
			if k < len(v) && (v[k].w == "and" || v[k].w == "or") {
				k++
				last = true
			}
		case "and", "or", "&", "plus":
			k++
			last = true
		default:
			return finishList(out, i, afterFirst, comma, conj)
		}
		_, after, ok := item(v, k)
		if !ok {
			break
		}
		if a := at(v, after); modals[a] || auxWords[a] && a != "to" && a != "about" && a != "of" {
			break // "…, and Francis will enjoy it": a new clause's subject
		}
		if last {
			conj = true
		} else {
			comma = true
		}
		i = k
	}
	return finishList(out, i, afterFirst, comma, conj)
}

func finishList(out []string, i, afterFirst int, comma, conj bool) ([]string, int) {
	if comma && !conj && len(out) > 1 {
		return out[:1], afterFirst
	}
	return out, i
}

// proper matches a proper noun at v[i] ("Seattle", "San Francisco", "the
// Netherlands", "Rio de Janeiro", "St. Louis", "Johnson & Johnson", "3M").
func (st *state) proper(v []tok, i int) (string, int, bool) {
	if i < len(v) && v[i].w == "the" && !v[i].cap {
		i++
	}
	isProp := func(t tok) bool { return t.word && t.upper && !stopCaps[t.w] }
	if i >= len(v) {
		return "", i, false
	}
	start := i
	if v[i].w == "the" && v[i].cap && i+1 < len(v) && isProp(v[i+1]) {
		i++
	}
	if !isProp(v[i]) && !(v[i].word && v[i].w[0] >= '0' && v[i].w[0] <= '9' && len(v[i].w) > 1 && v[i].upper) {
		return "", start, false
	}
	end := i + 1
	adjacent := func(a, b int) bool { return strings.TrimSpace(st.gap(v[a], v[b])) == "" }
	for end < len(v) && end-start < 8 {
		t := v[end]
		switch {
		case !adjacent(end-1, end):
		case isProp(t) && !clauseVerbs[t.w]:
			end++
			continue
		case t.word && t.w[0] >= '0' && t.w[0] <= '9':
			end++
			continue
		case t.w == "." && abbreviations[v[end-1].w] && end+1 < len(v) && isProp(v[end+1]),
			t.w == "'s" && end+1 < len(v) && isProp(v[end+1]) && adjacent(end, end+1):
			end += 2
			continue
		case (t.w == "&" || t.w == "of" || t.w == "de" || t.w == "da" || t.w == "del" || t.w == "la" ||
			t.w == "upon" || t.w == "von" || t.w == "van" || t.w == "du" || t.w == "on") &&
			!t.upper && end+1 < len(v) && isProp(v[end+1]) && adjacent(end, end+1):
			end += 2
			continue
		}
		break
	}
	return st.objText(v[start:end]), end, true
}

// predicate extracts from the tokens after the subject.
func (st *state) predicate(f *frame, v []tok) {
	if f.subj != User && len(v) >= 2 && v[0].w == "," {
		// "my friend Carla, 58, suggested it"
		if n, _, ok := ageAt(v, 1); ok && (len(v) == 2 || v[2].w == ",") {
			st.emit(f, "age", n)
			return
		}
	}
	if k := dislikeAt(v); k > 0 && !endsHabit(v) {
		// "I don't like horror movies", "I can't stand loud music"
		if !negatedOrModal(v[k:]) {
			st.objects(f, "dislikes", v, k)
		}
		return
	}
	neg, negEnd := false, false
	kept := make([]tok, 0, len(v))
	// content: the clause's verb has been passed. A modal after it belongs
	// to what the verb's object does or to a noun ("… to match my style
	// needs", "I live in Paris but want to move"), not to the claim.
	content := false
	for k := 0; k < len(v); k++ {
		t := v[k]
		next := ""
		if k+1 < len(v) {
			next = v[k+1].w
		}
		if content && (modals[t.w] || intentMarkers[t.w]) && !negations[t.w] {
			kept = append(kept, t)
			continue
		}
		switch {
		case t.w == "no" && (next == "longer" || next == "more"):
			f.kind = End
			k++
			continue
		case t.w == "anymore" || (t.w == "any" && (next == "more" || next == "longer")):
			negEnd = true
			if t.w == "any" {
				k++
			}
			continue
		case t.w == "used" && next == "to":
			f.kind = End
			k++
			continue
		case t.w == "going" && next != "to", t.w == "need" && next != "to",
			(t.w == "try" || t.w == "tried" || t.w == "trying") && next != "to":
		case t.w == "thinking" && next != "of" && next != "about":
		case intentMarkers[t.w] && !t.cap:
			n, keep, ok := intentAt(f, v, k)
			if !ok {
				return // a plan, wish or possibility
			}
			f.intent = true
			if !keep {
				k += n - 1
				continue
			}
		case modals[t.w] && !t.cap:
			return // a plan, wish or possibility
		case negations[t.w]:
			neg = true
			continue
		}
		kept = append(kept, t)
		if !auxWords[t.w] && !intentMarkers[t.w] && !modals[t.w] {
			content = true
		}
	}
	if neg {
		if !negEnd || f.intent {
			return // "I don't live in Paris", "I might not move"
		}
		f.kind = End // "I don't live in Paris anymore"
	}
	if f.intent {
		if f.kind == End {
			return // "I might no longer work at X" proposes no end
		}
		f.conf = hedgedIntentConfidence
	}
	v = kept

	// Auxiliaries.
	for len(v) > 0 {
		w := v[0].w
		switch w {
		case "am", "is", "are", "be", "being":
			f.be = true
		case "been":
			f.be, f.perfect = true, true
		case "do", "does", "did":
		case "have", "has", "had":
			if len(v) < 2 || !(participles[v[1].w] || strings.HasSuffix(v[1].w, "ed")) {
				goto main
			}
			f.perfect = true
		case "was", "were":
			if len(v) < 2 || !eventParticiples[v[1].w] {
				if f.kind != End {
					return // a past state: "I was vegan"
				}
			}
		default:
			goto main
		}
		v = v[1:]
	}
main:
	if len(v) == 0 {
		return
	}
	for _, p := range []func(*frame, []tok) bool{
		st.pIdentity, st.pLive, st.pMove, st.pWork, st.pJob, st.pStudy, st.pMarital, st.pDiet,
		st.pDevice, st.pInstrument, st.pLanguage, st.pPet, st.pAllergy, st.pLike, st.pDislike,
		st.pName,
	} {
		if p(f, v) {
			return
		}
	}
}

// auxWords come before a clause's verb without being it.
var auxWords = set("am", "is", "are", "was", "were", "be", "been", "being", "do", "does",
	"did", "have", "has", "had", "to", "about", "of", "get", "got")

// intentAt decides whether the intent marker at v[k] makes the clause a
// hedged intention. It returns how many tokens the marker spans, whether
// its last token stays as the clause's verb ("considering a job at X"), and
// false when the clause is a plain plan or wish after all ("I will move",
// "I'm thinking about dinner").
func intentAt(f *frame, v []tok, k int) (int, bool, bool) {
	hedged := f.conf > 0 && f.conf < 1
	gerund := func(i int) bool {
		w := at(v, i)
		return len(w) > 4 && strings.HasSuffix(w, "ing")
	}
	switch v[k].w {
	case "might", "may":
		return 1, false, true
	case "will":
		return 1, false, hedged
	case "going":
		return 2, false, hedged && at(v, k+1) == "to" && !gerund(k+2)
	case "thinking":
		return 2, false, gerund(k + 2) // "thinking about|of moving"
	case "considering", "contemplating":
		if gerund(k + 1) {
			return 1, false, true // "considering moving to Lisbon"
		}
		switch at(v, k+1) {
		case "a", "an", "the":
			return 1, true, true // "considering a job at Stripe"
		}
	}
	return 0, false, false
}

func at(v []tok, i int) string {
	if i >= 0 && i < len(v) {
		return v[i].w
	}
	return ""
}

// pLive: live/reside in X; based/settled/located in X.
func (st *state) pLive(f *frame, v []tok) bool {
	switch v[0].w {
	case "live", "lives", "living", "reside", "resides", "residing":
	case "lived", "resided":
		if !f.perfect && f.kind != End && f.until.IsZero() {
			return false // "I lived in Paris" is over, but says not when
		}
	case "based", "located", "settled", "situated":
		if !f.be && !f.perfect && v[0].w != "settled" {
			return false
		}
	default:
		return false
	}
	i := 1
	if at(v, i) == "with" {
		// "I live with my partner Jordan in Toronto"
		for i < len(v) && i < 8 && at(v, i) != "in" {
			i++
		}
	}
	if at(v, i) != "in" && at(v, i) != "at" {
		return false
	}
	if obj, _, ok := st.place(v, i+1); ok {
		st.emit(f, "lives_in", obj)
	}
	return true
}

// pMove: moved/relocated (back) (from X) to Y; moved out of X.
func (st *state) pMove(f *frame, v []tok) bool {
	i := 1
	switch v[0].w {
	case "moved", "relocated", "move", "relocate":
		if (v[0].w == "move" || v[0].w == "relocate") && f.kind != End && !f.perfect && !f.intent {
			return false
		}
	case "moving", "relocating":
		if !f.intent {
			return false // "I'm moving to Denver" is a plan
		}
	case "considering", "contemplating":
		// "I'm considering a move to Lisbon"
		if !f.intent || !determiners[at(v, 1)] || at(v, 2) != "move" {
			return false
		}
		i = 3
	default:
		return false
	}
	if at(v, i) == "out" && at(v, i+1) == "of" || at(v, i) == "away" && at(v, i+1) == "from" {
		if obj, _, ok := st.proper(v, i+2); ok {
			e := *f
			e.kind = End
			st.emit(&e, "lives_in", obj)
		}
		return true
	}
	for at(v, i) == "back" || at(v, i) == "here" || at(v, i) == "over" || at(v, i) == "all" || at(v, i) == "the" || at(v, i) == "way" {
		i++
	}
	if at(v, i) == "from" {
		if _, next, ok := st.proper(v, i+1); ok {
			i = next
		}
	}
	if at(v, i) != "to" {
		return false
	}
	obj, next, ok := st.place(v, i+1)
	if !ok {
		return true
	}
	st.emit(f, "lives_in", obj)
	// The move's purpose, after at most a time phrase: "moved to Denver
	// last week for a new job at Denver Health".
	for j := next; j < len(v) && j < next+4; j++ {
		if v[j].w == "for" {
			st.jobPhrase(f, v, j+1)
			break
		}
	}
	return true
}

// pWork: work/working at|for X (as Y); employed at X; joined X; got a job
// at X; quit / left my job (at X); retired; laid off; fired.
func (st *state) pWork(f *frame, v []tok) bool {
	end := func(org string) {
		e := *f
		e.kind = End
		st.emit(&e, "works_at", org)
	}
	switch v[0].w {
	case "work", "works", "working", "worked", "employed", "hired":
		if v[0].w == "worked" && !f.perfect && f.kind != End && f.until.IsZero() {
			return false
		}
		if (v[0].w == "employed" || v[0].w == "hired") && !f.be {
			return false // "employed" needs "am"/"was"; "got hired" arrives via pGot
		}
		// The employer and title follow the verb directly, with at most
		// a manner word between: "work full-time at X as Y". A
		// preposition further on belongs to something else ("working on
		// a project for Acme"), and "with" names whom one works with.
		matched := false
		i := 1
		for i < len(v) && workManner[v[i].w] {
			i++
		}
		for i < len(v) {
			switch v[i].w {
			case "at", "for", "by":
				if v[i].w == "by" && v[0].w != "employed" && v[0].w != "hired" {
					return matched
				}
				org, next, ok := st.proper(v, i+1)
				if !ok || st.names[strings.ToLower(org)] != "" || membership(v, next, org) {
					return matched
				}
				st.emit(f, "works_at", org)
				matched = true
				i = next
			case "as":
				title, _, next, ok := st.nounPhrase(v, i+1)
				if !ok || v[0].w == "hired" {
					return matched
				}
				st.emit(f, "job_title", title)
				matched = true
				i = next
			default:
				return matched
			}
		}
		return matched
	case "joined", "join", "joining":
		if v[0].w != "joined" && !f.intent {
			return false
		}
		if org, next, ok := st.proper(v, 1); ok && st.names[strings.ToLower(org)] == "" {
			if membership(v, next, org) {
				return true // "joined the chess club": not an employer
			}
			st.emit(f, "works_at", org)
			return true
		}
		return false
	case "quit", "left", "resigned", "retired", "lost":
		i := 1
		if at(v, i) == "from" {
			i++
		}
		if v[0].w == "retired" || v[0].w == "resigned" {
			org, _, _ := st.proper(v, i)
			end(org)
			return true
		}
		if at(v, i) == "my" && (at(v, i+1) == "job" || at(v, i+1) == "position" || at(v, i+1) == "role") {
			org := ""
			if p := at(v, i+2); p == "at" || p == "with" || p == "in" {
				org, _, _ = st.proper(v, i+3)
			}
			end(org)
			return true
		}
		if v[0].w == "lost" {
			return false
		}
		if at(v, i) == "" && v[0].w == "quit" {
			end("") // "I quit"
			return true
		}
		if v[0].w == "quit" || v[0].w == "left" {
			if org, _, ok := st.proper(v, i); ok && v[0].w == "quit" {
				end(org)
				return true
			}
		}
		return false
	case "laid", "fired", "let":
		if v[0].w == "laid" && at(v, 1) != "off" || v[0].w == "let" && at(v, 1) != "go" {
			return false
		}
		i := 1
		if v[0].w != "fired" {
			i = 2
		}
		org := ""
		if at(v, i) == "from" || at(v, i) == "at" || at(v, i) == "by" {
			org, _, _ = st.proper(v, i+1)
		}
		end(org)
		return true
	case "got", "landed", "accepted", "took", "found", "started", "began", "have", "has", "had", "start":
		return st.pGot(f, v)
	case "get", "getting", "take", "taking", "accept", "accepting", "land", "starting",
		"considering", "contemplating":
		// Only as an intention: "I might take a job at X", "I'm considering
		// a job at X".
		return f.intent && st.pGot(f, v)
	}
	return false
}

// workManner may stand between "work" and its employer.
var workManner = set("full-time", "part-time", "fulltime", "parttime", "remotely",
	"freelance", "currently", "there", "here", "now")

// membership reports whether the organisation org, ending at v[next], is
// one that is joined rather than worked at: its last word, or the word
// after it ("the Writers' Meetup"), is a membership noun.
func membership(v []tok, next int, org string) bool {
	ws := strings.Fields(strings.ToLower(org))
	if len(ws) > 0 && membershipNouns[ws[len(ws)-1]] {
		return true
	}
	for next < len(v) && (v[next].w == "'" || v[next].w == "’" || v[next].w == "'s") {
		next++
	}
	return next < len(v) && membershipNouns[v[next].w]
}

// pGot: got/landed/started a (new) job|position at X (as Y); started at X;
// got hired at X; got promoted to Y.
func (st *state) pGot(f *frame, v []tok) bool {
	i := 1
	switch at(v, i) {
	case "laid", "fired", "let":
		if v[0].w == "got" {
			return st.pWork(f, v[1:])
		}
		return false
	case "hired":
		if p := at(v, i+1); p == "at" || p == "by" {
			if org, _, ok := st.proper(v, i+2); ok {
				st.emit(f, "works_at", org)
				return true
			}
		}
		return false
	case "promoted":
		if at(v, i+1) == "to" {
			if title, _, _, ok := st.nounPhrase(v, i+2); ok {
				st.emit(f, "job_title", title)
				return true
			}
		}
		return false
	case "working":
		if p := at(v, i+1); p == "at" || p == "for" {
			if org, _, ok := st.proper(v, i+2); ok {
				st.emit(f, "works_at", org)
				return true
			}
		}
		return false
	case "at":
		if v[0].w == "started" || v[0].w == "began" || (f.intent && (v[0].w == "start" || v[0].w == "starting")) {
			if org, _, ok := st.proper(v, i+1); ok {
				st.emit(f, "works_at", org)
				return true
			}
		}
		return false
	}
	return st.jobPhrase(f, v, i)
}

// jobPhrase reads "a (new) job|position|role (at|with|for ORG) (as
// TITLE)" from v[i]: the job the speaker got, started or moved for. It
// reports whether v[i:] names such a job; "a new job" alone records
// nothing, and a job that is someone else's ("my wife's job") is none.
func (st *state) jobPhrase(f *frame, v []tok, i int) bool {
	for i < len(v) && (determiners[v[i].w] || v[i].w == "new" || v[i].w == "dream" ||
		v[i].w == "full-time" || v[i].w == "part-time" || v[i].w == "first" || v[i].w == "great" || v[i].w == "my") {
		i++
	}
	switch at(v, i) {
	case "job", "position", "role", "internship", "gig":
	default:
		return false
	}
	// The employer and title follow within a few words of the noun.
	end := max(14, i+10)
	for i++; i < len(v) && i < end; i++ {
		switch v[i].w {
		case "at", "with", "for":
			if org, next, ok := st.proper(v, i+1); ok {
				st.emit(f, "works_at", org)
				i = next - 1
			}
		case "as":
			if title, _, next, ok := st.nounPhrase(v, i+1); ok {
				st.emit(f, "job_title", title)
				i = next - 1
			}
		default:
			return true
		}
	}
	return true
}

// pJob: (am) a|an TITLE (at|for ORG); became a TITLE; my job title is X
// arrives via possessedThing.
func (st *state) pJob(f *frame, v []tok) bool {
	i := 0
	switch v[0].w {
	case "a", "an":
		if !f.be {
			return false
		}
	case "became", "become":
		i = 1
		if at(v, i) != "a" && at(v, i) != "an" {
			return false
		}
	default:
		return false
	}
	if n, ok := yearOld(at(v, i+1)); ok && (at(v, i) == "a" || at(v, i) == "an") {
		// "a 29-year-old nurse"
		st.emit(f, "age", n)
		i += 2
		if at(v, i) == "" || !v[i].word {
			return true
		}
	}
	title, head, next, ok := st.nounPhrase(v, i)
	if !ok {
		return false
	}
	st.titleTail(f, v, next)
	org := ""
	if p := at(v, next); p == "at" || p == "for" || p == "with" || p == "in" {
		org, _, _ = st.proper(v, next+1)
	}
	words := strings.Fields(strings.ToLower(title))
	switch {
	case studentNouns[head] || (len(words) > 1 && studentNouns[words[0]] && head == "student"):
		if org != "" {
			st.emit(f, "studies_at", org)
		}
		return true
	case instrumentalists[head] != "":
		st.emit(f, "plays_instrument", instrumentalists[head])
		return true
	case diets[head] != "" && len(words) == 1:
		st.emit(f, "diet", diets[head])
		return true
	case head == "fan" && at(v, next) == "of":
		return st.likeObjects(f, v, next+1, false)
	case jobs[head] || (org != "" && at(v, next) != "in"):
		st.emit(f, "job_title", title)
		if org != "" && at(v, next) != "in" {
			st.emit(f, "works_at", org)
		}
		return true
	}
	return false
}

// pStudy: study/studying (subject) at X; enrolled at/in X; attend X;
// graduated from X (end); dropped out of X (end).
func (st *state) pStudy(f *frame, v []tok) bool {
	switch v[0].w {
	case "study", "studies", "studying", "studied", "enrolled", "attend", "attends", "attending":
		if v[0].w == "studied" && !f.perfect && f.kind != End {
			return false
		}
		if strings.HasPrefix(v[0].w, "attend") {
			if org, next, ok := st.proper(v, 1); ok && !(next < len(v) && v[next].word && !npStop[v[next].w] && !isBoundary(v[next])) {
				// not "attending the AI ethics conference", where the
				// name only qualifies what is attended
				st.emit(f, "studies_at", org)
				return true
			}
			return false
		}
		for i := 1; i < len(v) && i < 9; i++ {
			if v[0].w == "enrolled" && i > 1 {
				break // "enrolled in a workshop at X" is not a school
			}
			if v[i].w == "at" || (v[0].w == "enrolled" && v[i].w == "in") {
				if org, _, ok := st.proper(v, i+1); ok {
					st.emit(f, "studies_at", org)
					return true
				}
			}
			if !v[i].word {
				break
			}
		}
		return false
	case "graduated", "dropped":
		i := 1
		if v[0].w == "dropped" {
			if at(v, 1) != "out" || at(v, 2) != "of" {
				return false
			}
			i = 3
		} else {
			if at(v, 1) != "from" {
				return false
			}
			i = 2
		}
		if org, _, ok := st.proper(v, i); ok {
			e := *f
			e.kind = End
			st.emit(&e, "studies_at", org)
			return true
		}
		return false
	case "started", "began":
		switch at(v, 1) {
		case "college", "university", "uni", "school", "grad", "law", "med", "my":
			for i := 2; i < len(v) && i < 6; i++ {
				if v[i].w == "at" {
					if org, _, ok := st.proper(v, i+1); ok {
						st.emit(f, "studies_at", org)
						return true
					}
				}
			}
		}
	}
	return false
}

var maritalWords = map[string]string{"married": "married", "single": "single", "engaged": "engaged",
	"divorced": "divorced", "widowed": "widowed", "separated": "separated", "hitched": "married"}

// pMarital: am married/single/engaged/divorced/widowed; got married;
// married Sam; tied the knot.
func (st *state) pMarital(f *frame, v []tok) bool {
	w := v[0].w
	i := 0
	if w == "got" || w == "get" || w == "getting" {
		if w == "getting" && !f.be {
			return false
		}
		i = 1
	}
	if w == "tied" && at(v, 1) == "the" && at(v, 2) == "knot" {
		st.emit(f, "marital_status", "married")
		return true
	}
	status, ok := maritalWords[at(v, i)]
	if !ok {
		return false
	}
	if i == 0 && !f.be && !f.perfect {
		// Bare "married Sam" is the event; "divorced" likewise.
		if w != "married" && w != "divorced" {
			return false
		}
		if !(i+1 < len(v) && isNameTok(v[i+1])) {
			return false
		}
	}
	if status == "single" && i+1 < len(v) && v[i+1].word && !isBoundary(v[i+1]) {
		return false // "single-handedly", "single parent"
	}
	st.emit(f, "marital_status", status)
	return true
}

// dietWord matches a diet word at v[i], including two-word "raw vegan".
func dietWord(v []tok, i int) (string, int) {
	if i+1 < len(v) {
		if d, ok := diets[v[i].w+" "+v[i+1].w]; ok {
			return d, i + 2
		}
	}
	if d, ok := diets[at(v, i)]; ok {
		return d, i + 1
	}
	return "", i
}

var dietAdjectives = set("a", "strict", "full", "total", "committed", "proper", "full-time",
	"lifelong", "complete", "100%", "fully", "mostly")

// pDiet: am (a) vegan; went/became/turned vegan; on a keto diet; follow a
// vegan diet; only eat meat; stopped being vegan (end).
func (st *state) pDiet(f *frame, v []tok) bool {
	i := 0
	switch v[0].w {
	case "went", "became", "become", "turned", "gone", "follow", "follows", "following", "eat", "eats", "switched", "converted", "only",
		"go", "going":
		if (v[0].w == "go" || v[0].w == "going") && !f.intent {
			return false
		}
		i = 1
		if v[0].w == "switched" || v[0].w == "converted" {
			if at(v, 1) != "to" {
				return false
			}
			i = 2
		}
	case "stopped", "quit":
		if at(v, 1) == "being" {
			if d, _ := dietWord(v, 2); d != "" {
				e := *f
				e.kind = End
				st.emit(&e, "diet", d)
				return true
			}
		}
		return false
	case "on":
		i = 1
	default:
		if !f.be {
			return false
		}
	}
	// "only eat meat", "eat only meat", "eat meat only".
	if v[0].w == "only" && (at(v, 1) == "eat" || at(v, 1) == "eats") {
		i = 2
	}
	if v[0].w == "eat" || v[0].w == "eats" || v[0].w == "only" {
		only := v[0].w == "only" || at(v, i) == "only"
		if at(v, i) == "only" {
			i++
		}
		obj := at(v, i)
		if at(v, i+1) == "only" {
			only = true
		}
		if only {
			switch obj {
			case "meat":
				st.emit(f, "diet", "carnivore")
				return true
			case "plants", "plant-based", "vegan":
				st.emit(f, "diet", "vegan")
				return true
			case "fish", "seafood":
				st.emit(f, "diet", "pescatarian")
				return true
			}
			return false
		}
	}
	for i < len(v) && dietAdjectives[v[i].w] || at(v, i) == "an" {
		i++
	}
	d, next := dietWord(v, i)
	if d == "" {
		return false
	}
	if next < len(v) && v[next].word && !isBoundary(v[next]) && v[next].w != "diet" && v[next].w != "lifestyle" {
		return false // "vegan food", "a vegetarian restaurant"
	}
	if (v[0].w == "on" || strings.HasPrefix(v[0].w, "follow") || v[0].w == "eat") && at(v, next) != "diet" && at(v, next) != "lifestyle" {
		return false
	}
	st.emit(f, "diet", d)
	return true
}

// device matches a phone name at v[i] ("iPhone 13", "Samsung Galaxy S23",
// "Pixel 8 Pro", "Android").
func (st *state) device(v []tok, i int) (string, int, bool) {
	for i < len(v) && (determiners[v[i].w] || v[i].w == "new" || v[i].w == "my" || v[i].w == "old" || v[i].w == "brand") {
		i++
	}
	if i >= len(v) || !deviceBrands[v[i].w] || (v[i].w == "google" && at(v, i+1) != "pixel") {
		return "", i, false
	}
	j := i + 1
	for j < len(v) && v[j].word && (deviceModel[v[j].w] && v[j].w != "phone" || strings.ContainsAny(v[j].w, "0123456789")) &&
		strings.TrimSpace(st.gap(v[j-1], v[j])) == "" {
		if v[j].w == "a" && !v[j].cap {
			break
		}
		j++
	}
	return st.objText(v[i:j]), j, true
}

// pDevice: use/have/got/bought/switched to an iPhone 13 …
func (st *state) pDevice(f *frame, v []tok) bool {
	i := 1
	switch v[0].w {
	case "use", "uses", "using", "have", "has", "got", "bought", "own", "owns", "carry",
		"rock", "rocking", "picked", "purchased", "received", "get", "getting", "buy", "buying":
		if v[0].w == "picked" {
			if at(v, 1) != "up" {
				return false
			}
			i = 2
		}
		if strings.HasPrefix(v[0].w, "get") || strings.HasPrefix(v[0].w, "buy") {
			if !f.intent {
				return false // "getting a Pixel" is a plan
			}
		}
	case "switched", "upgraded", "moved", "changed", "switch", "switching", "upgrade", "upgrading":
		if !strings.HasSuffix(v[0].w, "ed") && !f.intent {
			return false
		}
		i = 1
		if at(v, i) == "from" {
			if _, next, ok := st.device(v, i+1); ok {
				i = next
			}
		}
		if at(v, i) != "to" {
			return false
		}
		i++
	default:
		return false
	}
	if d, _, ok := st.device(v, i); ok {
		st.emit(f, "uses_device", d)
		return true
	}
	return false
}

// instrument matches an instrument at v[i] (after an optional article).
func instrument(v []tok, i int) (string, int, bool) {
	for i < len(v) && (v[i].w == "the" || v[i].w == "a" || v[i].w == "an" || v[i].w == "some" || v[i].w == "my") {
		i++
	}
	if i+1 < len(v) && instruments[v[i].w+" "+v[i+1].w] {
		return v[i].w + " " + v[i+1].w, i + 2, true
	}
	if i < len(v) && instruments[v[i].w] {
		return v[i].w, i + 1, true
	}
	return "", i, false
}

// pInstrument: play (the) violin; started/learned to play X; took up X;
// stopped/quit/gave up (playing) X (end).
func (st *state) pInstrument(f *frame, v []tok) bool {
	i := 1
	kind := f.kind
	switch v[0].w {
	case "play", "plays", "playing", "played":
		if v[0].w == "played" && !f.perfect && kind != End {
			return false
		}
	case "started", "began", "learned", "learnt", "learning", "took", "picked":
		switch {
		case at(v, 1) == "playing":
			i = 2
		case at(v, 1) == "to" && at(v, 2) == "play":
			i = 3
		case (v[0].w == "took" || v[0].w == "picked") && at(v, 1) == "up":
			i = 2
			if at(v, 2) == "playing" {
				i = 3
			}
		default:
			return false
		}
		if v[0].w == "learning" {
			return false
		}
	case "stopped", "quit", "gave":
		if v[0].w == "gave" {
			if at(v, 1) != "up" {
				return false
			}
			i = 2
		}
		if at(v, i) == "playing" {
			i++
		}
		kind = End
	default:
		return false
	}
	objs, _ := list(v, i, func(v []tok, i int) (string, int, bool) { return instrument(v, i) })
	if len(objs) == 0 {
		return false
	}
	e := *f
	e.kind = kind
	for _, o := range objs {
		st.emit(&e, "plays_instrument", o)
	}
	return true
}

var languageQualifiers = set("a", "little", "bit", "of", "some", "basic", "fluent", "decent",
	"good", "conversational", "broken", "native", "passable", "okay", "ok", "fluently", "pretty")

func (st *state) language(v []tok, i int) (string, int, bool) {
	for i < len(v) && languageQualifiers[v[i].w] && !v[i].cap {
		i++
	}
	if i < len(v) && v[i].cap && languages[v[i].w] {
		if at(v, i+1) == "sign" && at(v, i+2) == "language" {
			return st.objText(v[i : i+3]), i + 3, true
		}
		return st.objText(v[i : i+1]), i + 1, true
	}
	return "", i, false
}

// pLanguage: speak (fluent) X and Y; fluent in X; native X speaker;
// bilingual in X and Y.
func (st *state) pLanguage(f *frame, v []tok) bool {
	i := 1
	switch v[0].w {
	case "speak", "speaks", "speaking", "spoken", "can":
		if v[0].w == "can" {
			if at(v, 1) != "speak" {
				return false
			}
			i = 2
		}
	case "fluent", "bilingual", "trilingual", "proficient", "conversational":
		if at(v, 1) != "in" {
			return false
		}
		i = 2
	case "a", "native":
		j := 0
		if v[0].w == "a" {
			j = 1
		}
		if at(v, j) == "native" {
			if lang, next, ok := st.language(v, j+1); ok && at(v, next) == "speaker" {
				st.emit(f, "speaks_language", lang)
				return true
			}
		}
		return false
	default:
		return false
	}
	objs, _ := list(v, i, st.language)
	for _, o := range objs {
		st.emit(f, "speaks_language", o)
	}
	return len(objs) > 0
}

// pet matches [number|adjective]* PET at v[i] and returns the singular kind.
func (st *state) pet(v []tok, i int) (string, int, bool) {
	for k := 0; k < 4 && i < len(v) && !v[i].cap; k++ {
		w := v[i].w
		if determiners[w] || numberWords[w] > 0 || w == "new" || w == "little" || w == "sweet" ||
			w == "old" || w == "young" || w == "adorable" || w == "cute" || w == "rescue" ||
			w == "black" || w == "white" || w == "grey" || w == "gray" || w == "brown" ||
			w == "orange" || w == "fluffy" || w == "tiny" || w == "big" || w == "senior" || w == "baby" ||
			w == "pet" || w == "two" || w == "beautiful" || w == "lovely" || strings.ContainsAny(w, "0123456789") {
			if (pets[w] || pets[w+" "+at(v, i+1)]) && w != "rescue" {
				break
			}
			i++
			continue
		}
		break
	}
	if i+2 < len(v) {
		if k := pluralToSingular(v[i+2].w); pets[v[i].w+" "+v[i+1].w+" "+k] {
			return v[i].w + " " + v[i+1].w + " " + k, i + 3, true
		}
	}
	if i+1 < len(v) {
		if k := pluralToSingular(v[i+1].w); pets[v[i].w+" "+k] && !v[i].cap {
			return v[i].w + " " + k, i + 2, true
		}
		if pets[v[i].w+" "+v[i+1].w] {
			return v[i].w + " " + v[i+1].w, i + 2, true
		}
	}
	if i < len(v) && !v[i].cap {
		if k := pluralToSingular(v[i].w); pets[k] {
			return k, i + 1, true
		}
		if pets[v[i].w] {
			return v[i].w, i + 1, true
		}
	}
	return "", i, false
}

// pPet: have/got/adopted/rescued a PET (named|called NAME) (and a PET …).
func (st *state) pPet(f *frame, v []tok) bool {
	switch v[0].w {
	case "have", "has", "had", "got", "adopted", "rescued", "bought", "own", "owns",
		"welcomed", "brought", "took", "getting":
		if v[0].w == "had" && !f.perfect && f.kind != End {
			return false
		}
		if v[0].w == "getting" {
			return false
		}
	case "lost":
		if kind, _, ok := st.pet(v, 1); ok {
			e := *f
			e.kind = End
			st.emit(&e, "has_pet", kind)
			return true
		}
		return false
	default:
		return false
	}
	i := 1
	if at(v, i) == "home" || at(v, i) == "in" {
		i++
	}
	matched := false
	for i < len(v) {
		kind, next, ok := st.pet(v, i)
		if !ok {
			break
		}
		matched = true
		st.emit(f, "has_pet", kind)
		i = next
		if at(v, i) == "," {
			i++
		}
		if at(v, i) == "named" || at(v, i) == "called" || (at(v, i) == "whose" && at(v, i+1) == "name" && at(v, i+2) == "is") {
			if at(v, i) == "whose" {
				i += 2
			}
			names, n := st.nameList(v, i+1, true)
			for _, nm := range names {
				st.emit(f, "pet_name", nm)
			}
			i = n
		}
		if at(v, i) == "," {
			i++
		}
		if at(v, i) == "and" {
			i++
			continue
		}
		break
	}
	return matched
}

func (st *state) allergen(v []tok, i int) (string, int, bool) {
	obj, _, next, ok := st.nounPhrase(v, i)
	return obj, next, ok
}

// pAllergy: allergic to X, Y and Z; have a (severe) X allergy; have an
// allergy to X.
func (st *state) pAllergy(f *frame, v []tok) bool {
	switch v[0].w {
	case "allergic", "severely", "very", "mildly", "deathly", "highly":
		i := 0
		for i < len(v) && v[i].w != "allergic" {
			i++
			if i > 1 {
				return false
			}
		}
		if at(v, i+1) != "to" || (!f.be && f.kind != End) {
			return false
		}
		objs, _ := list(v, i+2, st.allergen)
		for _, o := range objs {
			st.emit(f, "allergic_to", o)
		}
		return len(objs) > 0
	case "have", "has", "got", "diagnosed", "developed":
		i := 1
		if v[0].w == "diagnosed" {
			if at(v, 1) != "with" {
				return false
			}
			i = 2
		}
		for i < len(v) && (v[i].w == "a" || v[i].w == "an" || v[i].w == "severe" || v[i].w == "mild" ||
			v[i].w == "bad" || v[i].w == "slight" || v[i].w == "serious" || v[i].w == "life-threatening" || v[i].w == "terrible") {
			i++
		}
		if at(v, i) == "allergy" || at(v, i) == "allergies" {
			if at(v, i+1) == "to" {
				objs, _ := list(v, i+2, st.allergen)
				for _, o := range objs {
					st.emit(f, "allergic_to", o)
				}
				return len(objs) > 0
			}
			return false
		}
		j := i
		for j < len(v) && j-i < 4 && v[j].word && v[j].w != "allergy" && v[j].w != "allergies" && !npStop[v[j].w] {
			j++
		}
		if j > i && (at(v, j) == "allergy" || at(v, j) == "allergies") {
			st.emit(f, "allergic_to", st.objText(v[i:j]))
			return true
		}
	}
	return false
}

// pLike: like/love/enjoy/adore X, Y and Z; am into X; am a big fan of X;
// obsessed with / passionate about / crazy about X; love eating X.
func (st *state) pLike(f *frame, v []tok) bool {
	i := 1
	food := false
	switch v[0].w {
	case "like", "likes", "love", "loves", "enjoy", "enjoys", "adore", "adores", "dig", "liked", "loved", "enjoyed":
		if (v[0].w == "liked" || v[0].w == "loved" || v[0].w == "enjoyed") && !f.perfect && f.kind != End {
			return false
		}
		if at(v, 1) == "to" {
			if at(v, 2) == "eat" {
				i, food = 3, true
			} else {
				return false
			}
		}
		if at(v, 1) == "eating" {
			i, food = 2, true
		}
	case "into":
		if !f.be {
			return false
		}
	case "obsessed", "passionate", "crazy", "mad", "nuts":
		if !f.be || (at(v, 1) != "with" && at(v, 1) != "about") {
			return false
		}
		i = 2
	case "stopped":
		if at(v, 1) != "liking" && at(v, 1) != "loving" && at(v, 1) != "enjoying" {
			return false
		}
		e := *f
		e.kind = End
		return st.likeObjects(&e, v, 2, false)
	default:
		return false
	}
	return st.likeObjects(f, v, i, food)
}

func (st *state) likeObjects(f *frame, v []tok, i int, food bool) bool {
	if titlePair(v, i) {
		return true // "I love Pride and Prejudice": one title or two things
	}
	isFood := map[string]bool{}
	objs, _ := list(v, i, func(v []tok, i int) (string, int, bool) {
		obj, head, next, ok := st.nounPhrase(v, i)
		if !ok {
			return "", i, false
		}
		if relationalHeads[head] {
			return "", next, true // "the social aspect": a part of something unsaid
		}
		isFood[obj] = food || foods[head]
		return obj, next, true
	})
	for _, o := range objs {
		if o == "" {
			continue
		}
		pred := "likes"
		if isFood[o] {
			pred = "likes_food"
		}
		st.emit(f, pred, o)
	}
	return len(objs) > 0
}

// favorite handles "my favorite THING is|are OBJECT".
func (st *state) favorite(f *frame, v []tok) {
	k := 0
	for k < len(v) && v[k].w != "is" && v[k].w != "are" && v[k].w != "'s" && v[k].w != "=" {
		if v[k].w == "was" || v[k].w == "were" || !v[k].word || k > 4 {
			return
		}
		k++
	}
	if k == 0 || k+1 >= len(v) || negatedOrModal(v) {
		return
	}
	obj := v[k+1:]
	for n, t := range obj {
		if !t.word && t.w != "." && t.w != "&" && t.w != "-" && t.w != "'" {
			obj = obj[:n]
			break
		}
	}
	if len(obj) > 0 && obj[0].w == "the" && !obj[0].cap {
		obj = obj[1:]
	}
	if len(obj) == 0 {
		return
	}
	st.emit(f, favoritePredicate(v[:k]), st.objText(obj))
}

// possessedThing handles the possessive forms other than favorites and
// relations: "my phone is a Pixel 8", "my dog Max", "my cat's name is
// Luna", "my native language is Tamil", "my job title is X".
func (st *state) possessedThing(f *frame, v []tok) {
	if negatedOrModal(v) {
		return
	}
	i := 0
	for i < len(v) && (v[i].w == "new" || v[i].w == "current" || v[i].w == "cell" || v[i].w == "mobile") {
		i++
	}
	switch at(v, i) {
	case "phone", "cellphone", "smartphone", "mobile", "handset":
		if at(v, i+1) == "is" || at(v, i+1) == "'s" {
			if d, _, ok := st.device(v, i+2); ok {
				st.emit(f, "uses_device", d)
			} else if obj, _, ok := st.proper(v, i+2); ok && (at(v, i+2) == "a" || at(v, i+2) == "an" || v[i+2].upper) {
				st.emit(f, "uses_device", obj)
			} else if obj, _, ok := st.proper(v, i+3); ok && (at(v, i+2) == "a" || at(v, i+2) == "an") {
				st.emit(f, "uses_device", obj)
			}
		}
		return
	case "native", "first", "mother":
		j := i + 1
		if at(v, j) == "language" || at(v, j) == "tongue" {
			j++
			if at(v, j) == "is" || at(v, j) == "'s" {
				if lang, _, ok := st.language(v, j+1); ok {
					st.emit(f, "speaks_language", lang)
				}
			}
		}
		return
	case "name", "full":
		j := i + 1
		if at(v, i) == "full" {
			if at(v, j) != "name" {
				return
			}
			j++
		}
		if at(v, j) == "is" || at(v, j) == "'s" {
			if names, _ := st.nameList(v, j+1, false); len(names) > 0 && !notNames[strings.ToLower(names[0])] {
				st.emit(f, "name", names[0])
			}
		}
		return
	case "job", "title", "position", "role":
		j := i + 1
		if at(v, i) == "job" && at(v, j) == "title" {
			j++
		} else if at(v, i) == "job" {
			return // "my job is great"
		}
		if at(v, j) == "is" || at(v, j) == "'s" {
			if title, _, _, ok := st.nounPhrase(v, j+1); ok {
				st.emit(f, "job_title", title)
			}
		}
		return
	}
	kind, next, ok := st.pet(v, 0)
	if !ok {
		return
	}
	name := ""
	if names, n := st.nameList(v, next, false); len(names) > 0 {
		name, next = names[0], n
	} else if at(v, next) == "'s" && at(v, next+1) == "name" && at(v, next+2) == "is" {
		if names, n := st.nameList(v, next+3, false); len(names) > 0 {
			name, next = names[0], n
		}
	} else if (at(v, next) == "is" || at(v, next) == "'s") && (at(v, next+1) == "called" || at(v, next+1) == "named") {
		if names, n := st.nameList(v, next+2, false); len(names) > 0 {
			name, next = names[0], n
		}
	}
	rest := v[next:]
	ended := false
	for k, t := range rest {
		switch t.w {
		case "died", "passed", "ran":
			if t.w == "passed" && at(rest, k+1) != "away" || t.w == "ran" && at(rest, k+1) != "away" {
				continue
			}
			ended = true
		}
	}
	if ended {
		e := *f
		e.kind = End
		st.emit(&e, "has_pet", kind)
		if name != "" {
			st.emit(&e, "pet_name", name)
		}
		return
	}
	st.emit(f, "has_pet", kind)
	if name != "" {
		st.emit(f, "pet_name", name)
	}
}

// yearOld reads "29-year-old" as "29".
func yearOld(w string) (string, bool) {
	n, ok := strings.CutSuffix(w, "-year-old")
	if !ok {
		return "", false
	}
	return n, plausibleAge(n)
}

func plausibleAge(n string) bool {
	if n == "" || len(n) > 3 {
		return false
	}
	v := 0
	for _, r := range n {
		if r < '0' || r > '9' {
			return false
		}
		v = v*10 + int(r-'0')
	}
	return v > 0 && v < 120
}

// ageAt matches an age at v[i]: a number (with "years old") that ends the
// clause or is followed by a comma or a conjunction, so that "I'm 34" and
// "who's 59 and retired" are ages while "I'm 5 minutes away" and "I'm 100%
// sure" are not. It returns the age as written.
func ageAt(v []tok, i int) (string, int, bool) {
	if i >= len(v) || !plausibleAge(v[i].w) {
		return "", i, false
	}
	j := i + 1
	switch at(v, j) {
	case "years", "year", "yrs", "yr":
		if at(v, j+1) != "old" {
			return "", i, false
		}
		j += 2
	}
	switch at(v, j) {
	case "", ",", ";", "!", ")", "and", "but", "so", "now", "today", "this":
		return v[i].w, j, true
	}
	return "", i, false
}

// titleTail reads what may follow a job title: "… from Port Talbot"
// (origin) and "… based in Leeds" (residence).
func (st *state) titleTail(f *frame, v []tok, i int) {
	switch at(v, i) {
	case "from":
		if obj, _, ok := st.place(v, i+1); ok {
			st.emit(f, "from", obj)
		}
	case "based", "living":
		if at(v, i+1) == "in" {
			if obj, _, ok := st.place(v, i+2); ok {
				st.emit(f, "lives_in", obj)
			}
		}
	}
}

// place matches a place at v[i]: a proper noun, or a well-known place the
// text did not capitalise ("new york"), which is then capitalised.
func (st *state) place(v []tok, i int) (string, int, bool) {
	if obj, next, ok := st.proper(v, i); ok {
		return obj, next, true
	}
	if at(v, i) == "the" {
		i++
	}
	for n := 3; n >= 1; n-- {
		if i+n > len(v) {
			continue
		}
		ws := make([]string, n)
		for k := range ws {
			ws[k] = v[i+k].w
		}
		name := strings.Join(ws, " ")
		if !places[name] {
			continue
		}
		if e := i + n; e < len(v) && v[e].word && !npStop[v[e].w] && !isBoundary(v[e]) {
			return "", i, false // "moved to georgia tech": not the place alone
		}
		for k, w := range ws {
			if len(w) <= 3 && (w == "usa" || w == "uk" || w == "nyc") {
				ws[k] = strings.ToUpper(w)
				continue
			}
			ws[k] = strings.ToUpper(w[:1]) + w[1:]
		}
		return strings.Join(ws, " "), i + n, true
	}
	return "", i, false
}

// pIdentity: I'm from X; I come from X; I grew up in X; I'm 34 (years
// old); I turned 40.
func (st *state) pIdentity(f *frame, v []tok) bool {
	if f.intent {
		return false
	}
	i := -1
	switch {
	case f.be && v[0].w == "from":
		i = 1
	case (v[0].w == "come" || v[0].w == "comes") && at(v, 1) == "from" && !f.be:
		i = 2
	case v[0].w == "grew" && at(v, 1) == "up" && at(v, 2) == "in":
		i = 3
	}
	if i > 0 {
		if obj, _, ok := st.place(v, i); ok {
			st.emit(f, "from", obj)
			return true
		}
		return false
	}
	switch {
	case f.be:
		i = 0
	case v[0].w == "turned" || v[0].w == "turn":
		i = 1
	default:
		return false
	}
	if n, next, ok := ageAt(v, i); ok {
		st.emit(f, "age", n)
		if at(v, next) == "and" && (at(v, next+1) == "a" || at(v, next+1) == "an") && f.be {
			st.pJob(f, v[next+1:]) // "who's 36 and a sound engineer"
		}
		return true
	}
	return false
}

// pName: I'm Sam (, …); I am Crystal Wilson and … — a capitalised word
// that is no nationality, faith or state, ending the clause or followed by
// a comma or "and". "My name is X" arrives via possessedThing.
func (st *state) pName(f *frame, v []tok) bool {
	if !f.be || f.subj != User || f.kind != Assert || f.intent || !isNameTok(v[0]) ||
		notNames[v[0].w] || diets[v[0].w] != "" || maritalWords[v[0].w] != "" {
		return false
	}
	j := 1
	if j < len(v) && isNameTok(v[j]) && !notNames[v[j].w] && st.gap(v[0], v[j]) == " " {
		j++
	}
	switch at(v, j) {
	case "", ",", "and", "!", ";":
	default:
		return false
	}
	st.emit(f, "name", st.objText(v[:j]))
	if at(v, j) == "," && (at(v, j+1) == "a" || at(v, j+1) == "an") {
		// "I'm Craig, a software developer"
		g := *f
		g.be = true
		st.pJob(&g, v[j+1:])
	}
	return true
}

// dislikeAt matches "do not like/enjoy", "can not stand" at the start of v
// and returns the index after it, or 0.
func dislikeAt(v []tok) int {
	i := 0
	switch at(v, i) {
	case "do", "does", "can":
		i++
	default:
		return 0
	}
	if at(v, i) != "not" {
		return 0
	}
	switch w := at(v, i+1); {
	case (w == "like" || w == "enjoy") && v[0].w != "can":
		return i + 2
	case w == "stand" && v[0].w == "can":
		return i + 2
	}
	return 0
}

// pDislike: hate/dislike/detest/loathe/despise X (and Y).
func (st *state) pDislike(f *frame, v []tok) bool {
	if !dislikeVerbs[v[0].w] {
		return false
	}
	return st.objects(f, "dislikes", v, 1)
}

// objects emits pred for each noun phrase of the list at v[i] ("I hate
// cilantro and olives"). It proposes nothing for "X and Y" of two single
// capitalised words, which may be one title ("Pride and Prejudice") or two
// things.
func (st *state) objects(f *frame, pred string, v []tok, i int) bool {
	if at(v, i) == "to" || at(v, i) == "it" || at(v, i) == "when" {
		return true // "I hate to say it", "I hate it when …"
	}
	if titlePair(v, i) {
		return true
	}
	objs, _ := list(v, i, func(v []tok, i int) (string, int, bool) {
		obj, head, next, ok := st.nounPhrase(v, i)
		if relationalHeads[head] {
			obj = ""
		}
		return obj, next, ok
	})
	for _, o := range objs {
		if o != "" {
			st.emit(f, pred, o)
		}
	}
	return len(objs) > 0
}

// titlePair reports whether v[i:] is "Cap and Cap" and nothing more.
func titlePair(v []tok, i int) bool {
	if i+2 >= len(v) || !v[i].upper || v[i+1].w != "and" || !v[i+2].upper {
		return false
	}
	return i+3 == len(v) || !v[i+3].word || isBoundary(v[i+3]) || npStop[v[i+3].w]
}

// endsHabit reports whether v says something stopped ("anymore", "any
// longer"), which makes a negation an End rather than a dislike.
func endsHabit(v []tok) bool {
	for k, t := range v {
		if t.w == "anymore" || t.w == "any" && (at(v, k+1) == "more" || at(v, k+1) == "longer") {
			return true
		}
	}
	return false
}
