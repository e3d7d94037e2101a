// Package lang holds what memor knows about predicates in a form that does
// not depend on a language: the [Catalogue] of [Predicate] declarations
// (name, cardinality, aliases, the words people use for it, the words that
// name its topic) that every part of the engine reads. A language package
// (lang/en) fills it with its defaults; an application adds its own
// predicates through memor.Options.Predicates.
//
// # Who reads the catalogue
//
//  1. The resolver: a predicate's cardinality (One or Many) and its aliases.
//  2. The text indexes: each fact is indexed as "subject gloss object", so
//     a question in words finds a fact whose predicate name is not a word.
//  3. The graph walk: a path scores by the question's words its hops
//     explain, labels read with their glosses.
//  4. The extractors: the rule extractor proposes a hedged intention only
//     on a single-valued predicate; an LLM extractor is told the
//     predicates, grouped by cardinality, with their notes.
//
// # Concurrency
//
// A Catalogue is safe for concurrent use; Register may run while others
// read (memor.Engine.RegisterPredicate after Open).
package lang
