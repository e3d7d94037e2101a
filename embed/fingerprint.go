package embed

import "fmt"

// Fingerprint names the vectors an embedder makes: two embedders with the
// same fingerprint put texts in the same space, so a store whose vectors
// one of them built can be searched with the other. Name is the kind of
// embedder ("hash", "http", or a Go type for others), Model the model it
// serves (empty for Hash), Dim the vector length (0 while unknown).
type Fingerprint struct {
	Name  string `json:"name"`
	Model string `json:"model,omitempty"`
	Dim   int    `json:"dim"`
}

func (f Fingerprint) String() string {
	s := f.Name
	if f.Model != "" {
		s += " " + f.Model
	}
	if f.Dim > 0 {
		s += fmt.Sprintf(" (%d dimensions)", f.Dim)
	}
	return s
}

// Same reports whether f and g name the same vector space. A dimension
// not yet known (0) matches any.
func (f Fingerprint) Same(g Fingerprint) bool {
	return f.Name == g.Name && f.Model == g.Model && (f.Dim == 0 || g.Dim == 0 || f.Dim == g.Dim)
}

// Fingerprinter is an Embedder that says which vectors it makes. Hash and
// remote.Embedder are; for another embedder the engine uses its Go type and Dim.
type Fingerprinter interface {
	Embedder
	Fingerprint() Fingerprint
}

// FingerprintOf returns e's fingerprint: its own if it is a Fingerprinter,
// else its Go type and dimension.
func FingerprintOf(e Embedder) Fingerprint {
	if f, ok := e.(Fingerprinter); ok {
		return f.Fingerprint()
	}
	return Fingerprint{Name: fmt.Sprintf("%T", e), Dim: e.Dim()}
}

// Fingerprint returns {hash, "", dimension}.
func (h *Hash) Fingerprint() Fingerprint { return Fingerprint{Name: "hash", Dim: h.dim} }
