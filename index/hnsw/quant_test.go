package hnsw

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
)

// TestDot8 checks the assembly kernels against the portable one for
// every length around their block sizes, and the quantised dot product
// against the float32 one.
func TestDot8(t *testing.T) {
	vnni, avx2 := useVNNI, useAVX2
	defer func() { useVNNI, useAVX2 = vnni, avx2 }()
	// Each kernel the CPU has, then the portable one.
	for _, k := range [][2]bool{{vnni, avx2}, {false, avx2}, {false, false}} {
		useVNNI, useAVX2 = k[0], k[1]
		testDot8(t)
	}
}

func testDot8(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 300; n++ {
		a := make([]float32, n)
		b := make([]float32, n)
		for i := range a {
			a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		ca, cb := make([]int8, n), make([]int8, n)
		sa, sb := quantize(ca, a), quantize(cb, b)
		// Extremes too: -128 never comes out of quantize but must work.
		if n > 3 {
			ca[0], cb[0], ca[1], cb[1], ca[2], cb[2] = -128, -128, 127, -128, -128, 127
		}
		got, want := dot8(ca, cb), dot8Go(ca, cb)
		if got != want {
			t.Fatalf("n=%d: dot8 = %d, portable %d", n, got, want)
		}
		if n > 3 {
			continue
		}
		exact := dot(a, b)
		if d := float32(got)*sa*sb - exact; max(d, -d) > 0.05*float32(n) {
			t.Fatalf("n=%d: quantised dot %v, exact %v", n, float32(got)*sa*sb, exact)
		}
	}
	for n := 4; n <= 300; n += 37 {
		a := make([]float32, n)
		b := make([]float32, n)
		for i := range a {
			a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		ca, cb := make([]int8, n), make([]int8, n)
		sa, sb := quantize(ca, a), quantize(cb, b)
		q, exact := float32(dot8(ca, cb))*sa*sb, dot(a, b)
		if d := q - exact; max(d, -d) > 0.02*float32(n) {
			t.Fatalf("n=%d: quantised dot %v, exact %v", n, q, exact)
		}
	}
}

func BenchmarkDot8(b *testing.B) {
	x := make([]int8, 384)
	y := make([]int8, 384)
	for i := range x {
		x[i], y[i] = int8(i), int8(3*i)
	}
	var s int32
	for b.Loop() {
		s += dot8(x, y)
	}
	_ = s
}

func BenchmarkDotFloat32(b *testing.B) {
	x := make([]float32, 384)
	y := make([]float32, 384)
	for i := range x {
		x[i], y[i] = float32(i), float32(3*i)
	}
	var s float32
	for b.Loop() {
		s += dot(x, y)
	}
	_ = s
}

// TestCheckFindsStaleCodes: the int8 copy is derived state; Check must
// notice when it no longer matches the vector, and Load must rebuild it.
func TestCheckFindsStaleCodes(t *testing.T) {
	ctx := context.Background()
	store := memKV{}
	ix := build(t, store, clustered(52, 200, 64, 3), Options{Seed: 1, ExactBelow: -1})
	if err := ix.Check(ctx, store); err != nil {
		t.Fatal(err)
	}
	back, err := Load(ctx, store, []byte("p/"), Options{ExactBelow: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Check(ctx, store); err != nil {
		t.Fatalf("loaded index: %v", err)
	}
	ix.code(7)[3] ^= 1
	if err := ix.Check(ctx, store); !errors.Is(err, ErrCheck) {
		t.Errorf("Check missed stale codes: %v", err)
	}
}
