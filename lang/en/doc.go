// Package en is memor's English language layer: every English word the
// engine and its rule extractor share lives here, so the engine itself
// holds none.
//
// # What it owns
//
//   - The predicate catalogue ([Predicates], [NewCatalogue]): the default
//     predicates with their cardinality, aliases, gloss, topic words and
//     the notes an LLM extractor is told.
//   - The word splitter for questions ([Words]): lower case, apostrophes
//     kept inside words ("i'm"), possessives dropped ("mother's" →
//     "mother"), straight and curly apostrophes alike.
//   - The lexicon: first-person words ([FirstPerson]), nouns for relatives
//     and friends and the relation predicate each names ([Relation]), the
//     contexts a value holds in ([Context], [ContextPhrases]), number and
//     month words.
//   - Time expressions in text, one parser for episodes and questions
//     ([Parse], [Match], [InText]): relative ("three weeks ago", "last
//     March") and absolute ("27 March, 2022", "March 27th, 2022",
//     "27/03/2022" when the order is unambiguous), each with the extent it
//     names ([Grain], [Time.Span]): a named day is the whole day, a month
//     the month, a year the year. [AsksWhen] tells a question about the
//     time of an event from one about what held at a time.
//
// What it does not own: the BM25 analyzer (index/bm25: the index's terms
// are part of its stored format, and its stop list and stemming serve
// ranking, not the lexicon), the graph's entity matching (graph: runs of
// letters and digits, with no language rule) and the rule extractor's
// grammar and its word classes (extract: pets, instruments, jobs … are the
// patterns' vocabulary, not shared).
//
// # Another language
//
// A language is a package like this one that provides the same parts: a
// catalogue of its defaults (its own glosses and topic words for the same
// predicate names, so facts stay comparable across languages), a word
// splitter, the lexicon and a time parser with the same [Time] semantics.
// The engine reads them through the functions above; plugging another
// language in means choosing that package where memor today calls en
// (memor's predicates, focus and query code, extract's lexicon and time
// adapters), and giving the rule extractor its patterns, which are
// English grammar. An LLM extractor needs only the catalogue.
//
// # Concurrency
//
// Every function is safe for concurrent use; values returned are fresh
// copies the caller may change.
package en
