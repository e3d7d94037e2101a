package llmjson

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// strictProblems lists where s breaks what OpenAI's strict structured
// outputs require: every object lists all its properties as required and
// forbids others, and no type admits null (memor's decoders refuse it).
func strictProblems(path string, s map[string]any) []string {
	var out []string
	if t, _ := s["type"].(string); t == "" || t == "null" {
		out = append(out, path+": no single non-null type")
	}
	if _, ok := s["type"].([]any); ok {
		out = append(out, path+": a union type")
	}
	if s["type"] == "object" {
		props, _ := s["properties"].(map[string]any)
		var req []string
		for _, r := range s["required"].([]any) {
			req = append(req, r.(string))
		}
		for name := range props {
			if !slices.Contains(req, name) {
				out = append(out, path+"."+name+": not required")
			}
		}
		if ap, ok := s["additionalProperties"]; !ok || !isFalseSchema(ap) {
			out = append(out, path+": additional properties allowed")
		}
		for name, p := range props {
			out = append(out, strictProblems(path+"."+name, p.(map[string]any))...)
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		out = append(out, strictProblems(path+"[]", items)...)
	}
	return out
}

// isFalseSchema: false, or {"not": {}} as jsonschema-go writes it.
func isFalseSchema(v any) bool {
	if b, ok := v.(bool); ok {
		return !b
	}
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return false
	}
	not, ok := m["not"].(map[string]any)
	return ok && len(not) == 0
}

func TestSchemasAreStrict(t *testing.T) {
	for name, s := range map[string]map[string]any{"ops": OpsSchema(), "verdict": VerdictSchema(), "scores": ScoresSchema()} {
		if p := strictProblems(name, s); len(p) > 0 {
			raw, _ := json.MarshalIndent(s, "", "  ")
			t.Errorf("%s schema is not strict:\n%s\n%s", name, strings.Join(p, "\n"), raw)
		}
	}
}

// TestSchemaMatchesDecoder: every property the schema asks for is one the
// decoder reads, and the reverse, with the allowed values the decoder
// accepts: an answer built from the schema's own enums decodes.
func TestSchemaMatchesDecoder(t *testing.T) {
	ops := OpsSchema()["properties"].(map[string]any)["ops"].(map[string]any)["items"].(map[string]any)
	props := ops["properties"].(map[string]any)
	var names []string
	for n := range props {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{"additive", "confidence", "context", "kind", "object", "predicate", "quote", "subject", "valid_from"}
	if !slices.Equal(names, want) {
		t.Fatalf("op properties %v, want %v", names, want)
	}
	if d, _ := props["subject"].(map[string]any)["description"].(string); !strings.Contains(d, "speaker") {
		t.Errorf("subject's description %q: the model is not told who \"user\" is", d)
	}
	for _, kind := range props["kind"].(map[string]any)["enum"].([]any) {
		op := map[string]any{"kind": kind, "subject": "user", "predicate": "lives_in", "object": "Lisbon",
			"context": "", "valid_from": "", "confidence": 0.9, "additive": false, "quote": "I live in Lisbon"}
		raw, _ := json.Marshal(map[string]any{"ops": []any{op}})
		if _, err := DecodeOps(raw, "I live in Lisbon.", said); err != nil {
			t.Errorf("kind %v from the schema's enum: %v", kind, err)
		}
	}
	for _, v := range VerdictSchema()["properties"].(map[string]any)["verdict"].(map[string]any)["enum"].([]any) {
		raw, _ := json.Marshal(map[string]any{"verdict": v, "reason": "r"})
		if _, err := DecodeVerdict(raw); err != nil {
			t.Errorf("verdict %v from the schema's enum: %v", v, err)
		}
	}
	if _, err := DecodeScores([]byte(`{"scores":[0.5]}`), 1); err != nil {
		t.Error(err)
	}
}
