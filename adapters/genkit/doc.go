// Package memorgenkit makes a memor engine a Firebase Genkit retriever:
// [DefineRetriever] defines one with genkit.DefineRetriever, named
// "memor/<name>", so that genkit.Retrieve, flows and the developer UI read
// what a user's memory holds at an instant.
//
// # Time travel
//
// Genkit passes a retriever's per-call configuration in
// ai.RetrieverRequest.Options (ai.WithConfig): here a [RetrieverOptions],
// whose ValidAt and KnownAt are the two instants of a bitemporal read
// (zero: now) and whose User and K override the defaults given to
// DefineRetriever. Options arriving as JSON (the developer UI, a flow's
// input) are decoded into the same type; the retriever publishes its JSON
// schema.
//
// # Documents
//
// Each result is a text document (memor.Result.Text) whose metadata names
// what it is: [MetaKind] "fact" or "episode", the fact's subject,
// predicate, object, context, valid_from, valid_to (absent while true),
// recorded_at, rule and path, or the episode's at, episode and speaker,
// and the score.
//
// # Errors
//
// A request Genkit's caller got wrong (options that do not decode, a
// query with no text, a user ID or instant memor refuses) is a
// *core.GenkitError with status INVALID_ARGUMENT, so Genkit's servers
// answer 400; memor's sentinel errors stay matchable with errors.Is.
//
// The package is named memorgenkit, not genkit, so that it can be imported
// next to github.com/firebase/genkit/go/genkit without renaming either.
package memorgenkit
