package server

import (
	"context"
	"testing"
)

// TestEpisodeSpeaker: "speaker" in the episode body is memor.Speaker: the
// episode keeps it, its first person is the speaker's, and a bad name is
// 400 invalid_speaker.
func TestEpisodeSpeaker(t *testing.T) {
	a := newAPI(t, Options{})
	code, body := a.do("POST", "/v1/users/me/episodes", map[string]any{"text": "I live in Boston.", "speaker": "Caroline", "wait": true})
	if code != 201 {
		t.Fatalf("add: %d %v", code, body)
	}
	if ep, _ := body["episode"].(map[string]any); ep["speaker"] != "Caroline" {
		t.Fatalf("episode: %v", body)
	}
	code, body = a.do("POST", "/v1/users/me/episodes", map[string]any{"text": "I live in Seattle.", "wait": true})
	if code != 201 {
		t.Fatalf("add without speaker: %d %v", code, body)
	}
	if ep, _ := body["episode"].(map[string]any); ep["speaker"] != nil {
		t.Fatalf("an owner's episode has a speaker: %v", body)
	}
	code, body = a.do("POST", "/v1/users/me/episodes", map[string]any{"text": "I live in Oslo.", "speaker": "\t"})
	if code != 400 || body["code"] != "invalid_speaker" {
		t.Fatalf("bad speaker: %d %v", code, body)
	}
	st, err := a.e.State(context.Background(), "me")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range st {
		got[f.Subject] = f.Object
	}
	if len(got) != 2 || got["Caroline"] != "Boston" || got["user"] != "Seattle" {
		t.Fatalf("state: %v", st)
	}
}
