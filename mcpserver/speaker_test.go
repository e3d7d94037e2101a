package mcpserver

import (
	"strings"
	"testing"
)

// TestAddMemorySpeaker: add_memory's speaker is memor.Speaker: the facts
// it made are the speaker's, the query names the speaker's turn, and a bad
// name is a tool error that says what to pass.
func TestAddMemorySpeaker(t *testing.T) {
	cs, _ := connect(t)
	var out addOut
	mustCall(t, cs, "add_memory", map[string]any{"user_id": "me", "text": "I play the clarinet.", "speaker": "Melanie"}, &out)
	if len(out.Learned) != 1 || out.Learned[0].Subject != "Melanie" || out.Learned[0].Object != "clarinet" {
		t.Fatalf("learned: %+v", out.Learned)
	}
	mustCall(t, cs, "add_memory", map[string]any{"user_id": "me", "text": "I play the violin."}, &out)
	if len(out.Learned) != 1 || out.Learned[0].Subject != "user" {
		t.Fatalf("learned without speaker: %+v", out.Learned)
	}
	msg := call(t, cs, "add_memory", map[string]any{"user_id": "me", "text": "I play the drums.", "speaker": "\x00"}, nil)
	if !strings.Contains(msg, "invalid speaker") || !strings.Contains(msg, "leave it out for the user") {
		t.Fatalf("bad speaker: %q", msg)
	}
	var q queryOut
	mustCall(t, cs, "query_memory", map[string]any{"user_id": "me", "text": "What does Melanie play?"}, &q)
	if len(q.Results) == 0 || !strings.Contains(q.Results[0].Text, "Melanie") {
		t.Fatalf("query: %+v", q.Results)
	}
}
