package extract

import "strings"

// Fence markers wrap text that memor itself produced (Context output), so
// that when an agent feeds a prompt containing recalled memories back into
// Add, the recalled text is not learned a second time (self-echo).
const (
	FenceOpen  = "<memor-recall>"
	FenceClose = "</memor-recall>"
)

// Fence wraps body in the recall markers. Markers already inside body are
// neutralised first so that a body cannot close its own fence early and
// smuggle text out of it.
func Fence(body string) string {
	body = neutralise(body)
	return FenceOpen + "\n" + body + "\n" + FenceClose
}

// neutralise breaks any marker inside s by removing its leading '<'.
func neutralise(s string) string {
	if !strings.Contains(s, "<memor-recall>") && !strings.Contains(s, "</memor-recall>") {
		return s
	}
	s = strings.ReplaceAll(s, FenceClose, FenceClose[1:])
	return strings.ReplaceAll(s, FenceOpen, FenceOpen[1:])
}

// StripFenced removes every fenced span from text, markers included. An
// open marker without a matching close removes everything after it (a
// truncated recall block is still recall), and a stray close marker is
// removed on its own. Fences do not nest: the first close ends the span.
// Where a removed span sat between two non-space characters a single space
// takes its place, so that the words on either side do not fuse.
func StripFenced(text string) string {
	if !strings.Contains(text, FenceOpen) && !strings.Contains(text, FenceClose) {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	rest := text
	for rest != "" {
		i := strings.Index(rest, FenceOpen)
		k := strings.Index(rest, FenceClose)
		var next string
		switch {
		case k >= 0 && (i < 0 || k < i): // stray close marker
			b.WriteString(rest[:k])
			next = rest[k+len(FenceClose):]
		case i >= 0:
			b.WriteString(rest[:i])
			after := rest[i+len(FenceOpen):]
			j := strings.Index(after, FenceClose)
			if j < 0 {
				return b.String() // unclosed: drop to end of text
			}
			next = after[j+len(FenceClose):]
		default:
			b.WriteString(rest)
			return b.String()
		}
		if b.Len() > 0 && next != "" {
			cur := b.String()
			if !isSpaceByte(cur[len(cur)-1]) && !isSpaceByte(next[0]) {
				b.WriteByte(' ')
			}
		}
		rest = next
	}
	return b.String()
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
