// Package memoreino makes a memor engine the memory of a CloudWeGo Eino
// agent: a [retriever.Retriever] that answers from what is true at an
// instant, and an [indexer.Indexer] that stores documents as episodes, or
// as asserted facts when their metadata names a subject, predicate and
// object.
//
// # Time travel
//
// Eino's common retriever options carry top-k and a score threshold; the
// two instants of a bitemporal read are memor's own ([WithValidAt],
// [WithKnownAt]), passed to Retrieve like any implementation-specific
// option. Without them a Retrieve asks what is true now, as memor
// believes it now: a superseded value is never served as current.
//
// # Metadata
//
// Retrieved documents name what they are in their metadata: [MetaKind] is
// "fact" or "episode"; a fact carries [MetaSubject], [MetaPredicate],
// [MetaObject], [MetaContext], [MetaValidFrom], [MetaValidTo],
// [MetaRecordedAt], [MetaRule] and, when the graph walk reached it,
// [MetaPath]; an episode carries [MetaAt], [MetaEpisode] and [MetaSpeaker].
// The indexer reads the same keys, so a retrieved fact can be stored again
// as it is.
//
// # Callbacks
//
// Both components report to Eino's callbacks themselves (they implement
// components.Checker), with the retriever's and the indexer's callback
// input and output types, so a graph's handlers see a memor read as any
// retriever's.
//
// The package is named memoreino, not eino, so that it can be imported next
// to github.com/cloudwego/eino without renaming either.
package memoreino
