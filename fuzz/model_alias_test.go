package fuzz

import "github.com/memor-db/memor/fuzz/internal/model"

// The reference model lives in internal/model (it is the harness's, not
// an API); the tests name its types as if they were this package's.
type (
	Model  = model.Model
	Config = model.Config
	Op     = model.Op
	Fact   = model.Fact
	Claim  = model.Claim
	Status = model.Status
)

const (
	Active    = model.Active
	Contested = model.Contested
	Retracted = model.Retracted
)

// NewModel returns an empty model (model.NewModel).
func NewModel(cfg Config) *Model { return model.NewModel(cfg) }

// NormKey is the model's key normalisation (model.NormKey).
func NormKey(s string) string { return model.NormKey(s) }

// ErrNotContested is the model's answer to accepting a fact it does not
// contest (model.ErrNotContested).
var ErrNotContested = model.ErrNotContested
