package cli

import "strings"

// packagePrefixes are the "pkg: " prefixes memor's packages put on their
// errors. Wrapped into one another they would repeat ("memor: --at:
// memor: invalid time"); the line a user reads names memor once.
var packagePrefixes = []string{"memor: ", "cli: ", "server: ", "kv: ", "mcpserver: ", "memortest: "}

// errorLine renders err as the one line Run prints: "memor: " once, then
// the message without the packages' own prefixes.
func errorLine(err error) string {
	parts := strings.Split(err.Error(), ": ")
	out := parts[:0]
	for _, p := range parts {
		for trimmed := true; trimmed; {
			trimmed = false
			for _, pre := range packagePrefixes {
				if name := strings.TrimSuffix(pre, ": "); p == name {
					p, trimmed = "", true
				}
			}
		}
		if p != "" {
			out = append(out, p)
		}
	}
	return "memor: " + strings.Join(out, ": ")
}
