// Package graph is memor's fact graph for one user: an entity dictionary
// (name → dense uint32 ID), one labelled edge per fact version
// (subject -predicate-> object), and a depth-bounded breadth-first walk from
// the entities a query names, which returns the path to every fact it
// reaches, e.g. "user → brother → Alex → has_pet → golden retriever".
//
// # Identity and matching
//
// Entity identity is the name with surrounding space trimmed, inner runs of
// space collapsed, and letters lower-cased: "Alex", "alex" and " ALEX " are
// one entity. The first display form seen is kept. [Graph.Entities] finds
// known entities in free text on word boundaries (a word is a run of letters
// and digits), case-insensitively, preferring the longest name at each
// position ("golden retriever" over "retriever") and never overlapping
// matches.
//
// # Time
//
// The graph holds the edges of every version, current or not. A walk is
// made as-of a point in time by the allow bitmap the engine passes to
// [Graph.BFS]: the doc IDs visible at (validAt, knownAt), from the temporal
// index. An edge whose doc is not allowed is not walked, so a superseded
// fact cannot lead a current query anywhere.
//
// # Walks
//
// Edges are walked in both directions: a query naming "Alex" reaches the
// user through "user -brother-> Alex" (a [Hop] with Inverse set, rendered
// "Alex ← brother ← user") and Alex's pet through "Alex -has_pet-> …".
// The walk visits each entity once (a visited bitmap over entity IDs, so
// cycles end) and each edge once (a bitmap over edge slots). Every walked
// edge yields one [Path]: the shortest path from a seed to the entity it
// was walked from, plus the edge. Paths come out in breadth-first order
// (shorter first); the walk stops after depth hops or the path limit.
// [Graph.Reach] walks the same way without a limit and builds no paths:
// the caller builds the paths of the edges it serves.
//
// Walks read the adjacency in compressed sparse row form (offsets into
// flat neighbour, doc, slot and label arrays over the dense entity IDs),
// built when the graph loads. A write marks the entities whose edges
// changed; a walk reads those from their own edge lists, and once an
// eighth of the entities are marked the write rebuilds the arrays. When a
// hop is large enough, the allow bitmap is copied once into a dense
// bitmap over docs, so each edge's time check is a word test.
//
// # Images
//
// [Graph.AppendImage] serialises a graph in the form memory holds it, and
// [LoadImage] loads it back at a fraction of a load from the records,
// leaving the names where they lie in the image and the maps only writes
// need to the first write. The records stay the truth: an image is the
// graph a load of them makes, and one that fails to load is rebuilt.
//
// # Key layout
//
// All keys start with the prefix given to [New] or [Load]
// (kv.UserKey(user, kv.SubGraph) in the engine). Tag bytes are part of the
// file format; do not change them.
//
//	prefix 'd' uint32(doc)  →  uint32(from ID) uint32(to ID) label   one edge per fact version
//	prefix 'e' uint32(ID)   →  display name                          entity dictionary
//
// # Invariants
//
//  1. Every entity in the dictionary is the endpoint of at least one edge;
//     an entity whose last edge is removed is removed with it.
//  2. No two entities share an identity.
//  3. Memory and store hold the same entities and edges ([Graph.Check]).
//
// # Memory
//
// [Graph.Bytes] accounts for the heap the graph holds, for the engine's
// cache of users' indexes: a walk over the graph at every load and CSR
// rebuild, kept current by each write's change and walked again once the
// changes add up to a quarter of the walk. Entities dropped by writes
// leave their words' slots in the slab they were carved from; once those
// outnumber the live ones, the live words move to new slabs, so that a
// graph whose entities come and go does not hold every name it had.
//
// # Concurrency
//
// A [Graph] is safe for concurrent use. Writes take an exclusive lock; walks
// and lookups share a read lock; Bytes takes neither (an atomic load).
package graph
