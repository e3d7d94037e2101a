package jsontext

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestLossy: Lossy refuses exactly the JSON strings encoding/json decodes
// with a replacement character that was not written.
func TestLossy(t *testing.T) {
	for _, tc := range []struct {
		json  string
		lossy bool
	}{
		{`"plain"`, false},
		{`"\u00e9\ud83d\ude42\ufffd�"`, false}, // U+FFFD written, escaped or not
		{`"\\ud800"`, false},                   // an escaped backslash, then text
		{`"\"\\\/\b\f\n\r\t"`, false},
		{`{"\ud83d\ude42":["\u0041"]}`, false},
		{"\"\xff\"", true},
		{"\"\xfe\"", true},
		{"\"caf\xc3\"", true},
		{"\"\xed\xa0\x80\"", true}, // a surrogate encoded as UTF-8
		{`"\ud800"`, true},
		{`"\udfff"`, true},
		{`"\ud800\u0041"`, true},
		{`"\ud83d\ud83d"`, true},
		{`"\udc00\ud800"`, true},
		{`"\ud800\n"`, true},
		{`{"\ud800":1}`, true},
		{`["ok","\udbff"]`, true},
	} {
		err := Lossy([]byte(tc.json))
		if (err != nil) != tc.lossy {
			t.Errorf("Lossy(%s) = %v, want lossy %v", tc.json, err, tc.lossy)
		}
		// The claim: encoding/json alters the strings exactly when Lossy
		// says so (a written U+FFFD aside).
		var s any
		if json.Unmarshal([]byte(tc.json), &s) != nil {
			t.Fatalf("%s is not JSON", tc.json)
		}
		back, _ := json.Marshal(s)
		altered := strings.Count(string(back), "\ufffd") > strings.Count(tc.json, "\ufffd")+strings.Count(tc.json, `\ufffd`)
		if altered != tc.lossy {
			t.Errorf("%s: encoding/json altered it: %v, want %v", tc.json, altered, tc.lossy)
		}
	}
}
