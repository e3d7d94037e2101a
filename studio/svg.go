package studio

import (
	"fmt"
	"html"
	"strings"
)

// svgWriter builds an SVG document as text. Every string it is given that
// comes from the store goes through esc, so the document is well-formed
// XML whatever a user said (it is tested with encoding/xml).
type svgWriter struct{ strings.Builder }

func esc(s string) string { return html.EscapeString(s) }

func (w *svgWriter) f(format string, args ...any) { fmt.Fprintf(&w.Builder, format, args...) }

// text writes a <text> element.
func (w *svgWriter) text(x, y float64, class, s string) {
	w.f(`<text x="%.1f" y="%.1f" class="%s">%s</text>`, x, y, class, esc(s))
}
