// Package memorlangchaingo makes a memor engine the memory of a LangChainGo
// agent: a [schema.Retriever] over what is true at an instant, and a
// [schema.Memory] whose LoadMemoryVariables recalls what the engine knows
// about the chain's input as memor's fenced context block, and whose
// SaveContext adds each human turn to the user's episode log.
//
// # Time travel
//
// GetRelevantDocuments takes no options, so a retriever's instants are set
// when it is made ([WithValidAt], [WithKnownAt]); a Retriever is a small
// value, and one per instant costs nothing. Without them it asks what is
// true now: a superseded value is never served as current.
//
// # Metadata
//
// A document's Metadata names what it is: [MetaKind] is "fact" or
// "episode"; a fact carries subject, predicate, object, context,
// valid_from, valid_to (absent while true), recorded_at, rule and path; an
// episode carries at, episode (its sequence number) and speaker.
//
// The package is named memorlangchaingo, not langchaingo, so that it can be
// imported next to LangChainGo's packages without renaming.
package memorlangchaingo
