// Package bm25 is memor's full-text index: a Unicode-aware English
// tokenizer, an inverted index with roaring-bitmap postings and term
// frequencies, persisted in Pebble in the same batch as the facts, and
// Okapi BM25 top-k search with an allow-list applied inside scoring.
//
// # Model
//
// One [Index] per user holds that user's documents (facts and episodes,
// named by engine-chosen uint32 IDs) in memory. [Index.Add] and
// [Index.Delete] change memory and write through the [kv.Writer] they are
// given, which the engine commits with the fact versions, so the index never
// disagrees with the facts on disk. If that commit fails the engine drops
// the Index and calls [Load] again: nothing is rolled back here.
//
// # Scoring
//
// For a query with distinct terms q (after [Tokenize]) and a document D:
//
//	score(D) = Σ_{t ∈ q, tf(t,D) > 0}  idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·|D|/avgdl))
//	idf(t)   = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
//
// N is the number of documents, df(t) the number containing t, |D| the
// number of terms of D after analysis (stop words excluded) and avgdl the
// mean of |D|. This is Robertson & Zaragoza's BM25 with Lucene's
// non-negative idf, the variant Lucene, Elasticsearch and bleve compute;
// k1 = 1.2 and b = 0.75 are its customary defaults (see [DefaultK1]).
//
// Search scores block-at-a-time: document IDs are cut into blocks of 4096;
// each query term's roaring posting iterator writes its contributions for
// the block into a dense accumulator, and the block's touched slots go
// through the allow filter into a k-sized heap. Once the heap is full,
// MaxScore pruning stops walking the postings of the terms whose score
// bounds (idf, the term's largest tf, its shortest document) together
// cannot beat the k-th score; they are looked up in the term lists of the
// candidates the other terms produce. Block-max pruning skips a block whose
// terms' bounds within it (a posting of 512 documents or more keeps them
// per block) sum to no more than the k-th score: both prunings are exact,
// returning the documents, scores and tie order of full scoring, and a
// one-word query over facts that tie by the thousand stops after the first
// blocks instead of scoring the whole posting. With a small allow-list Search
// instead scores each allowed document from its own term list. Every path
// sums a document's terms in the same order, so a score is bit-identical
// whichever path computed it, and equals [Index.Explain]'s.
//
// # Key layout
//
// The engine hands the index a prefix (kv.UserKey(user, kv.SubBM25)); every
// key of the index starts with it. After the prefix one tag byte names the
// record kind. Tags are part of the file format; do not change or reuse
// them.
//
//	prefix 'd' doc                     document record
//	        │   └─ 4 bytes, big-endian uint32 document ID (keys sort by doc)
//	        └───── 0x64
//
// The value of a document record:
//
//	0x01                               record version (part of the format)
//	uvarint length                     |D|: number of terms, repeats included
//	uvarint n                          number of distinct terms
//	n × {                              sorted by term bytes, no duplicates
//	    uvarint len, len bytes term    the term as Tokenize returns it
//	    uvarint tf                     occurrences in the document, ≥ 1
//	}
//
// Σ tf equals length. Nothing else is stored: postings, document
// frequencies, N and avgdl are derived from the records when [Load] scans
// them (in document order, so every posting is built by appending).
//
// One key per document keeps writes cheap: an Add is one Set (about 10 to
// 100 bytes for a fact) and a Delete one point deletion, where a
// term-keyed layout (prefix 'p' term doc → tf) would cost one key per
// distinct term plus the document key needed to find them again on delete.
// The price is that Load reads every record of the user, which it must do
// anyway since the index is held in memory.
//
// # Invariants
//
// [Index.Check] verifies these against a [kv.Reader] and in memory:
//
//  1. A document is in memory if and only if its record is stored, with
//     equal length and equal term frequencies.
//  2. A term's posting bitmap and its frequency slice have equal length;
//     frequencies are ≥ 1, aligned with the bitmap in ascending order.
//  3. Postings and per-document term lists describe the same (term, doc,
//     tf) triples; the dictionary holds exactly the terms with postings.
//  4. The total length equals the sum of document lengths.
//  5. A term's pruning bounds hold: no posting has a larger tf or a shorter
//     document than its term's (and, if kept, its block's) bounds say.
//
// # Concurrency
//
// An Index is safe for concurrent use. Search, Explain, Len and Check take
// a read lock; Add and Delete take the write lock for their in-memory
// change only. Bytes takes no lock: it reads an account the writers keep.
// Results never alias index memory.
package bm25
