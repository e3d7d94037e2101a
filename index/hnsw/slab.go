package hnsw

import (
	"slices"
	"unsafe"
)

// slabBits sets the slots per chunk of a slab (1024: 1.5 MB of 384-d
// float32 vectors).
const (
	slabBits  = 10
	slabSlots = 1 << slabBits
)

// slab holds a fixed-width record per slot in chunks of slabSlots slots,
// so that growing a large index allocates one more chunk instead of
// copying (and first touching twice the memory of) every vector: a flat
// array grown by doubling was a sixth of the build's CPU time at 20k
// 384-d vectors. The first chunk grows by half its size at a time, so a
// small index costs little more than its vectors.
type slab[T any] struct {
	chunks [][]T
	width  int // elements per slot
	n      int // slots
}

func newSlab[T any](width int) slab[T] { return slab[T]{width: width} }

// slabIn returns the slab of n slots whose records are v's (n × width
// elements, used where they lie), in chunks of slabSlots, each capped at
// its length: an add copies the last one out.
func slabIn[T any](width, n int, v []T) slab[T] {
	b := slab[T]{width: width, n: n}
	for s := 0; s < n; s += slabSlots {
		k := min(n-s, slabSlots)
		b.chunks = append(b.chunks, v[s*width:(s+k)*width:(s+k)*width])
	}
	return b
}

// own copies every chunk that lies in img out of it.
func (b *slab[T]) own(img []byte) {
	for i, c := range b.chunks {
		if inside(c, img) {
			b.chunks[i] = slices.Clone(c)
		}
	}
}

// bytesOutside is what the slab's chunks hold outside img (those in it
// are img's).
func (b *slab[T]) bytesOutside(img []byte) int {
	var zero T
	n := 0
	for _, c := range b.chunks {
		if !inside(c, img) {
			n += cap(c) * int(unsafe.Sizeof(zero))
		}
	}
	return n
}

// at returns slot s's record (a view; s < n).
func (b *slab[T]) at(s uint32) []T {
	c := b.chunks[s>>slabBits]
	o := int(s&(slabSlots-1)) * b.width
	return c[o : o+b.width : o+b.width]
}

// add appends a slot (its record is whatever the memory held: callers
// overwrite it) and returns its record.
func (b *slab[T]) add() []T {
	ci := b.n >> slabBits
	if ci == len(b.chunks) {
		var c []T
		if ci > 0 {
			c = make([]T, 0, slabSlots*b.width)
		}
		b.chunks = append(b.chunks, c)
	}
	c := b.chunks[ci]
	if cap(c)-len(c) < b.width {
		// Grow by half: thousands of users' small indexes stay loaded,
		// and doubling left a third of their vector memory unused.
		c = slices.Grow(c, max(b.width, min(len(c)/2, slabSlots*b.width-len(c))))
	}
	b.chunks[ci] = c[:len(c)+b.width]
	b.n++
	return b.at(uint32(b.n - 1))
}
