// Package imagetest checks the decoders of the indexes' images (an index
// laid out as it is held in memory, which a load uses where it lies):
// whatever damage an image meets, its decoder refuses it with the
// package's corruption error or loads an index that serves, never panics.
// The image tests of bm25, hnsw, temporal, graph and the engine's document
// map share it.
package imagetest

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// Cuts checks that img cut anywhere, and img with a byte more, are
// refused by load with an error wrapping corrupt.
func Cuts[T any](t testing.TB, img []byte, corrupt error, load func([]byte) (T, error)) {
	t.Helper()
	for n := range len(img) {
		if _, err := load(bytes.Clone(img[:n])); !errors.Is(err, corrupt) {
			t.Fatalf("image cut at %d of %d: %v, want %v", n, len(img), err, corrupt)
		}
	}
	if _, err := load(append(bytes.Clone(img), 0)); !errors.Is(err, corrupt) {
		t.Fatalf("image with a byte more: %v, want %v", err, corrupt)
	}
}

// Damage loads tries copies of img with one to three random bytes changed
// (r decides which): each must be refused with an error wrapping corrupt,
// or load an index that use exercises. It returns how many were refused.
func Damage[T any](t testing.TB, r *rand.Rand, img []byte, tries int, corrupt error, load func([]byte) (T, error), use func(T)) (refused int) {
	t.Helper()
	for range tries {
		bad := bytes.Clone(img)
		for range 1 + r.IntN(3) {
			bad[r.IntN(len(bad))] ^= byte(1 + r.IntN(255))
		}
		ix, err := load(bad)
		if err != nil {
			if !errors.Is(err, corrupt) {
				t.Fatalf("damaged image: %v, not %v", err, corrupt)
			}
			refused++
			continue
		}
		use(ix)
	}
	return refused
}
