package llmjson

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/memor-db/memor/extract"
	"github.com/memor-db/memor/internal/instant"
)

var said = time.Date(2026, 7, 11, 15, 4, 0, 0, time.UTC)

func TestDecodeOps(t *testing.T) {
	text := "I quit my job and moved to Bangalore."
	ok := `{"ops":[{"kind":"end","subject":"user","predicate":"works_at","object":"","context":"","valid_from":"","confidence":0,"additive":false,"quote":"I quit my job"},
	{"kind":"assert","subject":"user","predicate":"lives_in","object":"Bangalore","context":"","valid_from":"","confidence":1,"additive":true,"quote":"moved to Bangalore"}]}`
	ops, err := DecodeOps([]byte(ok), text, said)
	if err != nil || len(ops) != 2 || ops[0].Kind != extract.End || !ops[1].Additive || ops[1].Object != "Bangalore" {
		t.Fatalf("ops, err = %+v, %v", ops, err)
	}
	// Optional fields may be omitted; null ops are missing.
	if ops, err := DecodeOps([]byte(`{"ops":[{"kind":"end","subject":"user","predicate":"works_at","quote":"I quit"}]}`), text, said); err != nil || len(ops) != 1 {
		t.Fatalf("minimal op: %v %v", ops, err)
	}
	for _, tt := range []struct {
		in   string
		want error
	}{
		{``, ErrMalformed},
		{`null`, ErrSchema},
		{`[]`, ErrSchema},
		{`{"ops":null}`, ErrSchema},
		{`{"ops":[null]}`, ErrSchema},
		{`{"ops":[1]}`, ErrSchema},
		{`{"ops":[],"extra":1}`, ErrSchema},
		{`{"ops":[{"kind":"end","subject":"user","predicate":"works_at","quote":"I quit","mood":"happy"}]}`, ErrSchema},
		{`{"ops":[{"kind":"end","subject":" ","predicate":"works_at","quote":"I quit"}]}`, ErrSchema},
		{`{"ops":[{"kind":"end","subject":"user","predicate":"works_at","quote":"I QUIT"}]}`, ErrInvented},
		{`{"ops":[{"kind":"end","subject":"user","predicate":"works_at","confidence":NaN,"quote":"I quit"}]}`, ErrMalformed},
		{`{"ops":[{"kind":"end","subject":"user","predicate":"works_at","confidence":-0.5,"quote":"I quit"}]}`, ErrSchema},
		{`{"ops":[{"kind":"end","subject":"user","predicate":"1st","quote":"I quit"}]}`, ErrSchema},
		{`{"ops":[{"kind":"end","subject":"user","predicate":"works_at","quote":"I quit"}]}x`, ErrMalformed},
	} {
		if ops, err := DecodeOps([]byte(tt.in), text, said); !errors.Is(err, tt.want) || ops != nil {
			t.Errorf("DecodeOps(%s) = %v, %v; want %v", tt.in, ops, err, tt.want)
		}
	}
}

func TestDecodeOpsLimits(t *testing.T) {
	text := "I quit"
	op := `{"kind":"end","subject":"user","predicate":"works_at","quote":"I quit"}`
	many := `{"ops":[` + strings.TrimSuffix(strings.Repeat(op+",", maxOps+1), ",") + `]}`
	if _, err := DecodeOps([]byte(many), text, said); !errors.Is(err, ErrSchema) {
		t.Fatalf("too many ops: %v", err)
	}
	long := `{"ops":[{"kind":"assert","subject":"user","predicate":"likes","object":"` + strings.Repeat("x", maxFieldLen+1) + `","quote":"I quit"}]}`
	if _, err := DecodeOps([]byte(long), text, said); !errors.Is(err, ErrSchema) {
		t.Fatalf("long object: %v", err)
	}
}

func FuzzDecodeOps(f *testing.F) {
	f.Add([]byte(`{"ops":[{"kind":"assert","subject":"user","predicate":"lives_in","object":"Paris","quote":"I live in Paris"}]}`), "I live in Paris")
	f.Add([]byte(`{"ops":[{"kind":"end","subject":"user","predicate":"works_at","valid_from":"2026-01-02","confidence":0.5,"quote":"quit"}]}`), "I quit")
	f.Add([]byte(`{"ops":[{"kind":"x"}]}`), "")
	f.Add([]byte(`{"ops":[`), "a")
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		ops, err := DecodeOps(data, text, time.Unix(0, 0).UTC())
		if err != nil {
			if ops != nil {
				t.Fatalf("partial ops with error %v", err)
			}
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrSchema) && !errors.Is(err, ErrInvented) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for _, o := range ops {
			if o.Quote == "" || !strings.Contains(text, o.Quote) {
				t.Fatalf("accepted invented quote %q", o.Quote)
			}
			if o.Subject == "" || !isPredicate(o.Predicate) || (o.Kind != extract.Assert && o.Kind != extract.End) {
				t.Fatalf("accepted invalid op %+v", o)
			}
			if o.Kind == extract.Assert && o.Object == "" {
				t.Fatalf("assert without object %+v", o)
			}
			if o.Confidence < 0 || o.Confidence > 1 {
				t.Fatalf("confidence %v", o.Confidence)
			}
		}
		// What was accepted, written back in the wire form, decodes to
		// the same ops: the decoder loses or invents nothing.
		again, err := DecodeOps(encodeOps(t, ops), text, time.Unix(0, 0).UTC())
		if err != nil || !sameOps(ops, again) {
			t.Fatalf("round trip of %+v: %+v, %v", ops, again, err)
		}
	})
}

// encodeOps writes ops in the wire form the model answers in.
func encodeOps(t *testing.T, ops []extract.Op) []byte {
	w := make([]map[string]any, len(ops))
	for i, o := range ops {
		kind := "assert"
		if o.Kind == extract.End {
			kind = "end"
		}
		m := map[string]any{"kind": kind, "subject": o.Subject, "predicate": o.Predicate, "object": o.Object,
			"context": o.Context, "confidence": o.Confidence, "additive": o.Additive, "quote": o.Quote}
		if !o.ValidFrom.IsZero() {
			m["valid_from"] = o.ValidFrom.Format(time.RFC3339Nano)
		}
		w[i] = m
	}
	b, err := json.Marshal(map[string]any{"ops": w})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sameOps(a, b []extract.Op) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if !x.ValidFrom.Equal(y.ValidFrom) {
			return false
		}
		x.ValidFrom, y.ValidFrom = time.Time{}, time.Time{}
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// FuzzDecodeAnswers: the judge's and the reranker's decoders never panic,
// fail only with the typed errors, and return only what they promise.
func FuzzDecodeAnswers(f *testing.F) {
	f.Add([]byte(`{"verdict":"replace","reason":"a job changes"}`), 0)
	f.Add([]byte(`{"verdict":"append"}`), 0)
	f.Add([]byte(`{"scores":[0.5,1,-2]}`), 3)
	f.Add([]byte(`{"scores":[1e999]}`), 1)
	f.Add([]byte(`{"scores":null}`), 0)
	f.Fuzz(func(t *testing.T, data []byte, n int) {
		typed := func(err error) bool {
			return errors.Is(err, ErrMalformed) || errors.Is(err, ErrSchema)
		}
		v, err := DecodeVerdict(data)
		if err != nil && !typed(err) {
			t.Fatalf("verdict: untyped error %v", err)
		}
		if err == nil && v != extract.Replace && v != extract.Append {
			t.Fatalf("verdict %v", v)
		}
		s, err := DecodeScores(data, n)
		if err != nil {
			if !typed(err) || s != nil {
				t.Fatalf("scores: %v, %v", s, err)
			}
			return
		}
		if len(s) != n {
			t.Fatalf("%d scores for %d docs", len(s), n)
		}
		for _, x := range s {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				t.Fatalf("score %v accepted", x)
			}
		}
	})
}

// TestDecodeOpsTimeRange: a valid_from memor cannot store is refused
// (ErrSchema, matching memor's ErrInvalidTime): 0001-01-01 would read as
// "unset", the time the text was said. The epoch and earlier instants in
// range decode exactly.
func TestDecodeOpsTimeRange(t *testing.T) {
	op := func(vf string) string {
		return `{"ops":[{"kind":"assert","subject":"user","predicate":"lives_in","object":"Rome","valid_from":"` + vf + `","quote":"Rome"}]}`
	}
	for _, vf := range []string{"0001-01-01", "0001-01-01T00:00:00Z", "1500-06-01", "1677-12-31T23:59:59.999999999Z", "2262-01-01", "9999-12-31T23:59:59Z"} {
		ops, err := DecodeOps([]byte(op(vf)), "Rome", said)
		if !errors.Is(err, ErrSchema) || !errors.Is(err, instant.ErrInvalid) || ops != nil {
			t.Errorf("valid_from %s: %v, %v; want ErrSchema and ErrInvalidTime", vf, ops, err)
		}
	}
	for vf, want := range map[string]time.Time{
		"1970-01-01":                     time.Unix(0, 0),
		"1969-12-31T23:59:59.999999999Z": time.Unix(0, -1),
		"1678-01-01":                     instant.Min(),
		"2261-12-31T23:59:59.999999999Z": instant.Max().Add(-1),
	} {
		ops, err := DecodeOps([]byte(op(vf)), "Rome", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		if err != nil || len(ops) != 1 || !ops[0].ValidFrom.Equal(want) || ops[0].ValidFrom.IsZero() {
			t.Errorf("valid_from %s: %+v, %v; want %v", vf, ops, err, want)
		}
	}
}
