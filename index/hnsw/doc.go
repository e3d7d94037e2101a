// Package hnsw is memor's vector index: a Hierarchical Navigable Small World
// graph (Malkov & Yashunin, 2018) over float32 vectors, one per user,
// persisted through kv so that opening a store reads the graph back and
// never rebuilds it.
//
// # Two states
//
// Most users are small, and a small index is searched exactly, so an
// index starts as a plain list of vectors: Add validates, normalises and
// stores the vector, nothing more (no beam search, no neighbour lists to
// rewrite or persist). The Add that brings it to [Options.GraphAt] vectors
// (default [Options.ExactBelow], 20000) builds the graph from every stored
// vector — in ID order, levels from [Options.Seed] — and writes all of it
// to that Add's kv.Writer, so the graph commits with the batch that made
// it necessary. From then on Adds insert into the graph incrementally, and
// the graph is kept even if deletes shrink the index again. Whether the
// graph exists is persisted in the meta key; [Load] restores either state
// as stored and never builds (the next Add does, if the index is at
// GraphAt). With ExactBelow < 0 or GraphAt < 0 the graph exists from the
// start.
//
// # Searching
//
// [Index.Search] returns the k most similar vectors (cosine or dot product,
// higher is better). An allow-list (a roaring bitmap of IDs) restricts the
// results. Filtering happens inside the walk: disallowed nodes are still
// traversed, so the graph stays connected, but never enter the results,
// and the beam widens as the allowed fraction drops. When the allowed set
// is small — under [Options.ExactBelow], or small enough that the walk
// would visit more nodes than the set holds — the set is scanned exactly
// instead, so a 1 % filter costs a short exact scan and has recall 1.
// Small indexes (under ExactBelow vectors, or without a graph yet) are
// always searched exactly.
//
// Under [Cosine] vectors are normalised once on Add, so every comparison
// is one dot product. Once there is a graph, it is built and walked on an
// in-memory int8 copy of the vectors (one code per dimension and a scale
// per vector, never persisted, recomputed by Load), through an AVX-512
// VNNI kernel (AVX2 or portable Go where the CPU lacks it): about a third
// of the cost of the float32 dot product and a quarter of the memory
// traffic. Search re-scores the beam's candidates with the float32
// vectors, so the results' order and scores are exact; exact scans use
// float32 throughout, through github.com/viterin/vek (AVX2/FMA, about
// twice gonum's SSE float32 dot product at 384 dimensions). See quant.go.
// Until there is a graph, a vector with fewer than dim/2 non-zero
// components (a hashing embedder's) is held sparse, its non-zero
// components only, and scored over them (list.go).
//
// # Key layout
//
// Every key starts with the prefix handed to [New] or [Load] (the engine
// passes kv.UserKey(user, kv.SubVector)). After it, byte by byte. The tags
// and encodings are part of the file format; do not change them.
//
//	prefix 'm'                    meta, 15 bytes:
//	                                [0]     format version, 2
//	                                [1]     metric: 0 cosine, 1 dot
//	                                [2:4]   M, uint16 little-endian
//	                                [4:8]   dimension, uint32 little-endian
//	                                [8]     1 if there is an entry point, else 0
//	                                [9:13]  entry-point ID, uint32 little-endian
//	                                [13]    entry-point level (top layer)
//	                                [14]    1 if the graph is built, 0 while
//	                                        the index is a list of vectors
//	prefix 'v' id[4]              the vector (normalised under cosine) at
//	                              half precision: 0xF1, the largest
//	                              magnitude s as float32, then dim ×
//	                              binary16 of v/s, all little-endian (see
//	                              half.go); or, when fewer than dim/2 of
//	                              those halves are not +0, sparse: 0xF2,
//	                              s, then for each such half in index
//	                              order its index (uint16) and the half
//	                              (see sparse.go; store format 4); stores
//	                              written before half precision hold dim ×
//	                              float32 (4·dim bytes, no marker), read
//	                              as they are
//	prefix 'l' id[4] layer[1]     neighbour list of id on layer: n × uint32
//	                              little-endian neighbour IDs (n ≤ 2M on
//	                              layer 0, ≤ M above); only once the graph
//	                              is built
//
// IDs in keys are 4 bytes big-endian (kv.AppendUint32), so a prefix scan
// returns nodes in ID order and a node's layers in order. In the graph, a
// node of level L has exactly the link keys for layers 0..L (possibly
// empty values); that is how its level is stored. A dense 384-d vector
// costs 773 bytes of value (a default-embedder fact's sparse one about
// 120), plus about 130 bytes of links once there is a graph (in memory the
// graph adds the 388-byte int8 copy as well).
// Format version 1 (a 14-byte meta without byte 14) is read as a built
// graph and rewritten as version 2 by the next Add or Delete.
// [Index.AppendImage] serialises what a load of these keys builds, in its
// in-memory form, and [LoadImage] reads it back mostly by copying arrays
// (image.go): the engine's user images hold it.
//
// # Invariants
//
//  1. Every ID in a neighbour list has a vector key and a link key for that
//     layer (no dangling links; deletes repair the lists pointing at the
//     deleted node before removing it).
//  2. With a graph, the entry point is a node on the highest layer of any
//     node. Without one there is no entry point and no link key at all.
//  3. Add and Delete write every key they change to the kv.Writer they are
//     given, so the index commits atomically with the batch that holds it;
//     [Index.Check] verifies that memory and store agree.
//  4. Randomness (node levels) comes only from [Options.Seed]: the same
//     inserts in the same order build the same graph. The graph built at
//     GraphAt depends only on the vectors present then, not on the order
//     they came in or on reloads; inserted in ID order, an index builds
//     byte for byte the graph an always-built one (ExactBelow < 0) has.
//
// # Concurrency
//
// An [Index] is safe for concurrent use: searches run in parallel under a
// read lock; Add and Delete are serialised and take the write lock while
// they change memory. The Add that builds the graph does the build without
// it (into separate memory, swapped in at the end), so the user's searches
// go on as exact scans meanwhile. If a batch fails to commit the in-memory
// index is ahead of the store; discard it and [Load] again.
package hnsw
