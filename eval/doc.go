// Package eval measures memor's retrieval on conversations with known
// evidence: it loads a data set, builds one store per conversation through
// the public API, asks every question with evidence through Query, and
// scores recall@5/10/20 per question type beside baselines computed in the
// same run.
//
// # Data sets
//
// A directory holding N/chat.json and N/probing_questions.json is read as
// BEAM (arXiv 2510.27246): messages {role, id, content, time_anchor?};
// a time_anchor ("March-15-2024") holds until the next one; the trailing
// "->-> 1,1" marker of user messages is stripped. source_chat_ids is a list
// (nested lists are flattened) or, for knowledge_update, contradiction
// and temporal questions, an object of lists; for knowledge_update its
// original_info / updated_info are kept apart. Questions without evidence
// (abstention) are run but not scored for recall.
//
// Any other path is read as JSON Lines, one object a line, either a message
//
//	{"conversation":"c1","id":"m1","role":"user","at":"2024-03-15T09:00:00Z","text":"I uploaded 25 documents."}
//
// or a question (it has "question" instead of "text")
//
//	{"conversation":"c1","question":"How many documents did I upload?","type":"knowledge_update","evidence":["m1","m4"],"original":["m1"],"updated":["m4"]}
//
// Messages are in conversation order. "at" (RFC 3339 or YYYY-MM-DD) is
// required on a conversation's first message and holds until the next
// message that has one. "evidence" defaults to original ∪ updated. Unknown
// fields, unknown evidence IDs and malformed lines are errors naming the
// line.
//
// # Stores and times
//
// Every message (both roles) is added with memor.At(t), t = its anchor plus
// one minute per message since the anchor, so order within a day is kept.
// A message of role "user" (or no role) is the memory owner's, added
// without a speaker; any other role is added with memor.Speaker(role)
// ("assistant"), so that its first person is about that speaker, not the
// owner. A role memor refuses as a speaker name (ErrInvalidSpeaker: a
// control character, no letter or digit) fails the run.
// Messages memor refuses (ErrTooLarge) are counted and stay evidence.
//
// # Scoring
//
// Each method returns a ranked list of results; each result maps to one
// message: an Episode by its sequence number, a Fact by Fact.Episode (the
// episode it came from). A question's recall@k is the fraction of its
// distinct evidence message IDs among the messages of the first k results.
// For the methods that go through Query, the k results are what Query
// serves when asked for k (K=5, 10 and 20 are three queries): Query orders
// within the list it serves (the newest statement of a matter first), so
// its top 10 need not be the first 10 of its top 20. A fact and its
// episode in the top k take two slots but count once.
// "all" is the mean over every question with evidence.
//
// Methods: memor (Query, default options, K=20); memor-bm25, memor-vector,
// memor-graph (Query with Weights of only that signal; results whose fused
// score is 0 — candidates other signals brought in — are dropped); bm25
// (memor's index/bm25 over the raw turns, one document a message); recent
// (the last k messages).
//
// For knowledge_update questions with original and updated messages, the
// update "ranks above" the original when its best rank in the method's top
// 20 is better than the original's (per question in
// QuestionResult.UpdateAbove; absent = below everything); "neither
// retrieved" counts as a miss. A message named as both original and
// update is left out of both sides (UpdatePair); a question left with no
// original or no update (the two sets are the same) has no order to test:
// it is not counted in the rate, and the report says how many there were
// (Report.UpdateUnordered, and UpdateUnpaired for those naming one side
// only). Its recall is scored as any question's.
//
// Abstention: for questions without evidence, the share for which memor
// returns nothing and the mean number of results it returns; for
// questions with evidence, the share for which it wrongly returns
// nothing. Options.MinSupport sets memor's threshold; the signal-alone
// methods never abstain, so they measure their signal.
package eval
