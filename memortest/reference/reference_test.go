package reference_test

import (
	"testing"

	"github.com/memor-db/memor/memortest"
	"github.com/memor-db/memor/memortest/reference"
)

// The reference memory must pass every built-in case.
func TestConformance(t *testing.T) {
	memortest.Run(t, func(*testing.T) memortest.Backend { return reference.New(reference.Options{}) })
}

// Check on one shared backend agrees with Run on fresh ones.
func TestCheck(t *testing.T) {
	if err := memortest.Check(reference.New(reference.Options{})); err != nil {
		t.Fatal(err)
	}
}
