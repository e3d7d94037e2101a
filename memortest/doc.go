// Package memortest is a conformance suite and quality benchmark for agent
// memories, in the style of testing/fstest and testing/slogtest. It
// imports only the standard library, so a backend's author need not build
// memor to run it.
//
// A memory is anything that implements [Backend]: Add what a user said at a
// known time, Query the top-k strings for a question, Reset a user. A
// backend that can list the facts it believes now may also implement
// [Stater]; the suite then checks that values a case marks as gone are no
// longer current.
//
// # Running the suite
//
//	func TestMemory(t *testing.T) {
//		memortest.Run(t, func(t *testing.T) memortest.Backend { return newMemory(t) })
//	}
//
// [Run] makes each case the subtest category/name (both kebab-case), on a
// fresh backend, so `go test -run 'TestMemory/update/'` or
// `-skip 'TestMemory/time-travel/'` select cases by their names in
// testdata. [Check] runs the same cases on one backend (Reset between cases)
// and returns every failure joined with errors.Join; each is a *[Finding]
// naming the case, the rule that was broken and what was served. [Report]
// runs several arms side by side and renders a Markdown [Table].
//
// # Grading
//
// Grading is deterministic string matching, no model involved. Both the
// served strings and the case's strings are normalised by [Normalize]
// (lowercase, every rune that is not a letter or digit becomes a space) and
// compared by [Contains] as whole-word sequences: "Denver" is found in
// "user lives_in Denver" and in "2025-06-02: I moved to Denver.", "cat" is
// not found in "vacation". A case passes when
//
//  1. some expect string is contained in some served string (skipped for an
//     abstention), and
//  2. no stale string is contained in any served string, and
//  3. if the backend is a Stater, no current triple has a gone string as its
//     object.
//
// So a backend may serve facts ("user lives_in Seattle", "Alex has_pet
// golden retriever") or raw turns; what it must not do is serve a value
// that is no longer true next to, or instead of, the one that is.
// Time-travel cases carry the instant in the question ("Where did I live in
// March 2025?"); a backend without valid time fails them, and the report
// shows it.
//
// # Case files
//
// The built-in cases are suite/testdata/*.case, embedded; [Parse]
// reads the same format, so a backend may keep its own cases beside them.
// A file is a sequence of cases; blank lines and lines starting with # are
// ignored (a # elsewhere is text: the notes below are for the reader); every
// other line is a key, a space and a value:
//
//	case update-location-moved          # starts a case; kebab-case, unique
//	category update                     # kebab-case group (subtest parent)
//	rule A newer value of a one-valued fact replaces the older one.
//	turn 2025-01-10: I live in Seattle. # time, optional user, ':', text
//	turn 2025-06-02T18:30:00Z alice: I moved to Denver.
//	ask alice: Where do I live?         # optional user, ':', question
//	expect Denver                       # acceptable answer (repeatable: any of)
//	stale Seattle                       # must not be served (repeatable)
//	gone Seattle                        # must not be current for a Stater (repeatable)
//	abstain                             # the right answer is "nothing known"
//	k 3                                 # top-k to ask for (default 5)
//
// Times are RFC 3339 or a bare date (midnight UTC). A user is a bare word
// or a Go-quoted string, so that adversarial IDs ("", "a\x00b", "a/b") can
// be written; a turn or question without one belongs to [DefaultUser]. A
// case has either expect lines or abstain, and an abstention lists the
// stale strings that would be a wrong answer. Turns are written in plain
// first-person English ("I moved to Denver.", "My brother Alex lives in
// Austin.", "I no longer play the violin.") so that a rule-based extractor
// can pass every case. The categories are update, additive, duplicate,
// multi-hop, late-history, same-time, low-confidence, coexist, end,
// time-travel, outdated-phrasing, nothing-known and leakage; the category
// leakage marks cross-user probes, which the report counts apart.
//
// # HTTP contract
//
// [HTTPBackend] measures a memory written in any language that serves three
// JSON endpoints under a base URL. Every request is a POST with a JSON body
// (Content-Type: application/json); any status but 200 is an error, and its
// body is shown in the failure.
//
//	POST {base}/add    {"user": "memortest/alice", "text": "I moved to Denver.", "at": "2025-06-02T18:30:00Z"}
//	     → 200 once the text is applied (a query right after must see it)
//	POST {base}/query  {"user": "memortest/alice", "q": "Where do I live?", "k": 5}
//	     → 200 {"results": ["user lives_in Denver"]}   (at most k, best first; [] for nothing)
//	POST {base}/reset  {"user": "memortest/alice"}
//	     → 200 once everything about memortest/alice is forgotten
//
// Every user on the wire is a case's user under [UserPrefix], so that a
// memory that also serves real users can refuse every other one and the
// suite never resets a real user; [HTTPHandler] does refuse them. "at" is
// RFC 3339 with the caller's offset (the suite sends UTC). Bodies are
// UTF-8. The body of a 200 to add and reset is ignored. [HTTPHandler]
// serves any Backend under this contract.
//
// # Scale
//
// [GenerateScale] builds a seeded workload of N users × M turns with planted
// moves and job changes at known times, and the probes whose answers those
// turns determine: the city and employer in force now and, with
// ScaleOptions.AsOf, on a past day between two changes. [Scale.Run]
// measures accuracy, stale rate and time on it.
//
// # Concurrency
//
// The suite calls a backend from one goroutine at a time. [HTTPBackend] is
// safe for concurrent use when its http.Client is; [Table], [Case] and the
// other values are plain data.
package memortest
