package hnsw

import (
	"encoding/binary"
	"math"
	"slices"
)

// maxAbsRef and encodeHalfRef are maxAbs and encodeHalf as they were
// before the session-6 speed work, kept verbatim: the persisted format.
// The tests hold the current implementation to them bit for bit.
func maxAbsRef(v []float32) float32 {
	var m uint32
	for _, x := range v {
		m = max(m, math.Float32bits(x)&0x7fffffff)
	}
	return math.Float32frombits(m)
}

func encodeHalfRef(b []byte, v []float32, round bool) []byte {
	scale := maxAbsRef(v)
	b = append(b, halfMarker)
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(scale))
	n := len(b)
	b = slices.Grow(b, 2*len(v))[:n+2*len(v)]
	out := b[n:]
	if scale == 0 {
		clear(out)
		return b
	}
	inv := 1 / scale
	for i, x := range v {
		bits := math.Float32bits(x * inv)
		abs := bits & 0x7fffffff
		if abs-0x38800000 < 0x47000000-0x38800000 {
			m := abs - (127-15)<<23
			m += 0xfff + (m>>13)&1
			m >>= 13
			binary.LittleEndian.PutUint16(out[2*i:], uint16(bits>>16)&0x8000|uint16(m))
			if round {
				v[i] = math.Float32frombits(bits&0x80000000|(m<<13+(127-15)<<23)) * scale
			}
			continue
		}
		if abs == 0 {
			binary.LittleEndian.PutUint16(out[2*i:], uint16(bits>>16))
			if round {
				v[i] = math.Float32frombits(bits) * scale
			}
			continue
		}
		h := toHalf(x * inv)
		binary.LittleEndian.PutUint16(out[2*i:], h)
		if round {
			v[i] = fromHalf(h) * scale
		}
	}
	return b
}

// halfRef is encodeHalfRef's conversion of one scaled component y
// (x·inv): its stored bits and the rounded value before the scale.
func halfRef(y float32) (uint16, float32) {
	bits := math.Float32bits(y)
	abs := bits & 0x7fffffff
	if abs-0x38800000 < 0x47000000-0x38800000 {
		m := abs - (127-15)<<23
		m += 0xfff + (m>>13)&1
		m >>= 13
		return uint16(bits>>16)&0x8000 | uint16(m), math.Float32frombits(bits&0x80000000 | (m<<13 + (127-15)<<23))
	}
	if abs == 0 {
		return uint16(bits >> 16), math.Float32frombits(bits)
	}
	h := toHalf(y)
	return h, fromHalf(h)
}
