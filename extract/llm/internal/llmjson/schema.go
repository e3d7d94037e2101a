package llmjson

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// The JSON schemas of the three answers, generated from the types the
// answers decode into, so that what the model is asked for and what memor
// accepts cannot drift apart. They are in the form OpenAI's strict
// structured outputs take: every property required, no additional
// properties, no null (the decoders' pointers only tell a missing field
// from an empty one). The decoders keep the checks a schema cannot state
// (verbatim quotes, lower snake case predicates, time ranges, lengths).

// OpsSchema is the schema of an extraction answer, {"ops":[…]}.
func OpsSchema() map[string]any {
	return mustSchema[opsAnswer](map[string][]any{"kind": {"assert", "end"}})
}

// VerdictSchema is the schema of a judge's answer.
func VerdictSchema() map[string]any {
	return mustSchema[wireVerdict](map[string][]any{"verdict": {"replace", "append"}})
}

// ScoresSchema is the schema of a reranker's answer.
func ScoresSchema() map[string]any { return mustSchema[wireScores](nil) }

// mustSchema infers T's schema, gives the named properties their allowed
// values, drops null from every type and returns it as the generic map
// the SDK sends. The types are this package's own, so a failure is a
// programming error, caught by the tests.
func mustSchema[T any](enums map[string][]any) map[string]any {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("llmjson: schema of %v: %v", reflect.TypeFor[T](), err))
	}
	walk(s, func(sub *jsonschema.Schema) {
		if len(sub.Types) > 0 {
			var keep []string
			for _, t := range sub.Types {
				if t != "null" {
					keep = append(keep, t)
				}
			}
			if len(keep) == 1 {
				sub.Type, sub.Types = keep[0], nil
			} else {
				sub.Types = keep
			}
		}
		for name, values := range enums {
			if p, ok := sub.Properties[name]; ok {
				p.Enum = values
			}
		}
	})
	raw, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("llmjson: schema of %v: %v", reflect.TypeFor[T](), err))
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		panic(fmt.Sprintf("llmjson: schema of %v: %v", reflect.TypeFor[T](), err))
	}
	return m
}

// walk calls f on s and every schema inside it that the inferred answer
// types can produce (properties and array items).
func walk(s *jsonschema.Schema, f func(*jsonschema.Schema)) {
	if s == nil {
		return
	}
	f(s)
	for _, p := range s.Properties {
		walk(p, f)
	}
	walk(s.Items, f)
}
