// Package memor is an embedded, bitemporal memory engine for LLM agents.
//
// An agent hands memor what a user said ([Engine.Add]) or facts it already
// has ([Engine.Assert]); memor turns them into typed facts that know when
// they were true in the world and when memor learned them, resolves
// contradictions with named, logged, deterministic rules, and answers
// "what is true now" ([Engine.State]), "what was true then" and "what did
// we believe then" ([Engine.AsOf]) exactly.
//
// # Model
//
// Two clocks. Every fact version carries four instants: ValidFrom and
// ValidTo on valid time (when the proposition held in the world: from the
// text, "since March", resolved against the episode's At, which the caller
// supplies), and RecordedAt and ExpiredAt on transaction time (when memor
// held the belief: the engine's clock, [Options.Clock], never the
// caller's). A zero ValidTo or ExpiredAt is open.
//
// Episodes are the log of truth. Every write appends an [Episode] to the
// user's log: a text episode (Add), a facts episode (Assert, AssertBatch,
// End) or a correction ([Engine.Correct]). Everything else the store holds
// for the user is derived from the log (and the judge's cached verdicts).
//
// Facts are a projection. An extractor ([Options.Extractor]) turns a text
// episode into proposed operations (assert, end); each accepted one is
// stored as a claim in its slot, (user, subject, predicate, context) and
// for a Many predicate the object too. The resolver (internal/resolve) folds
// a slot's claims, sorted by valid time, into its timeline, and the
// differences from what was stored are written as fact versions.
// Versions are immutable in their four instants: a change of belief expires
// the version in force (it moves to history with ExpiredAt set) and
// records a new one, so [Engine.History] shows every belief memor ever
// held. Retrieval indexes (index/bm25, index/hnsw, index/temporal, graph)
// index the versions and the episodes' text for [Engine.Query].
//
// Rules. Every change is made by a named rule ([Rule]: add, dup,
// supersede, coexist, end, contest, late, correct, judge) and logged as a
// [Decision] ([Engine.Log]). A predicate's cardinality decides which apply:
// One (at most one value at any instant) or Many; see [Options.Predicates]
// and, for predicates no one declared, [Options.Judge].
//
// Where each record lives, byte by byte, is in layout.go; which stage
// writes it is named there too.
//
// # Invariants
//
//  1. One batch per write. A write's episode, claims, versions, decisions,
//     document map entries, index entries and the user's counters commit
//     in one kv.Batch: no reader ever sees an index that disagrees with
//     the facts, and after a crash a write is there whole or not at all.
//     An Add without [Sync] is two writes: the episode commits first (Add
//     returns), and applying it commits the derived records, and
//     userMeta.Applied, in a second batch. A new user's large first
//     AssertBatch, or first Add with [Sync], is built by the bulk loader
//     (bulk.go) into one kv.Table, committed as one ingested table or one
//     batch, and leaves the same bytes the online path would
//     ([Options.BulkMinFacts]).
//  2. The log is the truth. Every key under the user's claim, fact index,
//     live, history, archive, document, log, episode state and index
//     sub-tags is derived from the episodes and the judge verdicts:
//     [Engine.Rebuild] deletes it all and replays the log, in one batch.
//  3. Rebuild is byte-identical. With the same extractor, predicates and
//     embedder, replaying the log writes the same keys and values as the
//     first pass did: each episode is applied at its own RecordedAt, and
//     fact IDs are hash(user, subject, predicate, object, context,
//     ValidFrom), so replaying an episode twice changes nothing.
//  4. Visibility. A version is visible at (validAt, knownAt) iff it is
//     Active and RecordedAt ≤ knownAt < ExpiredAt and ValidFrom ≤ validAt
//     < ValidTo ([Fact.VisibleAt]). State is validAt = knownAt = now; time
//     travel is AsOf(t, now); audit is AsOf(t, t).
//  5. One value at a time. No slot of a One predicate (nor any object of
//     a Many predicate) has two versions visible at one (validAt, knownAt),
//     past beliefs included; a contested claim is stored and shown in
//     [Engine.Conflicts], never served as state.
//  6. Order independence. A slot's valid-time state depends only on the
//     set of its claims, ends and corrections, never on their arrival
//     order (a property test shuffles histories).
//  7. Transaction time only increases: every write of a store gets an
//     instant after every earlier one, across restarts and after a Forget
//     (the user's and the store's clock floor), even when the clock steps
//     back.
//  8. Tenancy. Every key of a user lies under one prefix that is never a
//     prefix of another user's, for any user ID bytes (kv/doc.go); nothing
//     derived from a user's words lives outside it, so [Engine.Forget] is
//     one range deletion (then compacted out of the files).
//  9. Every read is one snapshot. State, AsOf, History, Conflicts, Log,
//     Episodes, Query and Check each read one committed state of the store
//     (Query its indexes at the same commit): a concurrent write or Prune
//     is seen whole or not at all.
//  10. [Engine.Check] verifies 2, 4 and 5 and the agreement of the fact
//     index and the document map with the claims and versions; the tests
//     run it after every crash and at the end of every test engine.
//
// # Caveats
//
//   - Add is asynchronous. It returns once the episode is durable; its
//     facts appear when a worker has applied it. Use [Sync] to apply it
//     inline, [Engine.Flush] or [Engine.WaitFor] to wait, and
//     [Engine.Freshness] to see how far behind reads are. A read issued
//     meanwhile (State, Query) does not see the pending episode.
//   - AsOf and History are final only for applied episodes. An applied
//     episode's versions are recorded at the episode's own RecordedAt (its
//     commit), not at the moment a worker applied it (invariant 3). So an
//     audit read, AsOf(t, knownAt) with knownAt at or after a pending
//     episode's commit, or a History read, answers differently once the
//     episode is applied: the past of transaction time changes while
//     Freshness reports Pending. Flush first for an answer that stays.
//   - Two reads are two snapshots. Each read is consistent (invariant 9),
//     but a State followed by a History may straddle a write; compare
//     results of one call, or hold writes off.
//   - RegisterPredicate after Open applies only to what is resolved from
//     then on. Open already schedules the episodes a crash left pending,
//     and workers may apply them before RegisterPredicate runs; Rebuild
//     resolves with the predicates registered at the time it runs. Declare
//     predicates in [Options.Predicates] so that every process resolves
//     alike.
//   - Rebuild needs the same extractor for invariant 3: text episodes are
//     extracted again (facts episodes hold their ops). Rebuild also undoes
//     Prune: archived versions are derived, and the replay writes them back
//     to history.
//   - [Options.NoSync] acknowledges writes before they are durable: a
//     crash may lose the last ones. Call [Engine.Sync] at the points that
//     must survive.
//   - Instants run from 1678-01-01 to before 2262-01-01 (int64 Unix
//     nanoseconds); others are refused with [ErrInvalidTime]. A zero
//     time.Time means "now" for At and "open" for ValidTo and ExpiredAt.
//   - Forget removes a user's bytes from the table files and logs at once,
//     but Pebble's MANIFEST names the first and last keys of tables that
//     held them until [Engine.Close] (or, after a crash, the next Open)
//     rewrites it.
//
// # Concurrency
//
// An Engine is safe for concurrent use. Writes of one user are serialised;
// different users proceed in parallel, and concurrent durable commits
// share fsyncs.
package memor
