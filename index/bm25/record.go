package bm25

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/memor-db/memor/kv"
)

// Key tags after the index prefix. Part of the file format; do not change or
// reuse them.
const (
	tagDoc byte = 'd' // prefix 'd' doc(4, big-endian) → document record
)

// recordVersion is the first byte of every document record. Part of the file
// format: bump it (and teach decodeRecord the old one) when the encoding
// changes.
const recordVersion byte = 1

// termCount is one distinct term of a document and its frequency.
type termCount struct {
	term string
	tf   uint32
}

func appendDocKey(dst, prefix []byte, doc uint32) []byte {
	dst = append(dst, prefix...)
	dst = append(dst, tagDoc)
	return kv.AppendUint32(dst, doc)
}

// appendRecord encodes a document record (see doc.go). terms must be sorted
// by term and distinct.
func appendRecord(dst []byte, length uint32, terms []termCount) []byte {
	dst = append(dst, recordVersion)
	dst = binary.AppendUvarint(dst, uint64(length))
	dst = binary.AppendUvarint(dst, uint64(len(terms)))
	for _, t := range terms {
		dst = binary.AppendUvarint(dst, uint64(len(t.term)))
		dst = append(dst, t.term...)
		dst = binary.AppendUvarint(dst, uint64(t.tf))
	}
	return dst
}

// decodeRecord is the inverse of appendRecord. It checks every invariant a
// record must hold, so a corrupt value is reported rather than loaded.
func decodeRecord(v []byte) (length uint32, terms []termCount, err error) {
	length, tb, err := decodeRecordBytes(nil, v)
	if err != nil {
		return 0, nil, err
	}
	terms = make([]termCount, len(tb))
	for i, t := range tb {
		terms[i] = termCount{string(t.term), t.tf}
	}
	return length, terms, nil
}

// termBytes is a termCount whose term is a view of the record's bytes.
type termBytes struct {
	term []byte
	tf   uint32
}

// decodeRecordBytes is decodeRecord with the terms as views of v,
// appended to dst[:0]: Load reuses one slice for every record and copies
// a term only when it is new to the index.
func decodeRecordBytes(dst []termBytes, v []byte) (length uint32, terms []termBytes, err error) {
	if len(v) == 0 || v[0] != recordVersion {
		return 0, nil, fmt.Errorf("%w: record version %v", ErrCorrupt, v[:min(len(v), 1)])
	}
	v = v[1:]
	uv := func(what string, max uint64) (uint64, error) {
		x, n := binary.Uvarint(v)
		if n <= 0 || x > max {
			return 0, fmt.Errorf("%w: bad %s in record", ErrCorrupt, what)
		}
		v = v[n:]
		return x, nil
	}
	l, err := uv("length", math.MaxUint32)
	if err != nil {
		return 0, nil, err
	}
	n, err := uv("term count", uint64(len(v)))
	if err != nil {
		return 0, nil, err
	}
	terms = slices.Grow(dst[:0], int(n))
	var sum uint64
	for i := uint64(0); i < n; i++ {
		tl, err := uv("term length", uint64(len(v)))
		if err != nil {
			return 0, nil, err
		}
		if tl > uint64(len(v)) {
			return 0, nil, fmt.Errorf("%w: term overruns record", ErrCorrupt)
		}
		term := v[:tl:tl]
		v = v[tl:]
		tf, err := uv("term frequency", math.MaxUint32)
		if err != nil {
			return 0, nil, err
		}
		if tf == 0 || tl == 0 {
			return 0, nil, fmt.Errorf("%w: empty term or zero frequency in record", ErrCorrupt)
		}
		if i > 0 && bytes.Compare(terms[i-1].term, term) >= 0 {
			return 0, nil, fmt.Errorf("%w: record terms not sorted", ErrCorrupt)
		}
		sum += tf
		terms = append(terms, termBytes{term, uint32(tf)})
	}
	if len(v) != 0 {
		return 0, nil, fmt.Errorf("%w: %d trailing bytes in record", ErrCorrupt, len(v))
	}
	if sum != l {
		return 0, nil, fmt.Errorf("%w: record length %d but frequencies sum to %d", ErrCorrupt, l, sum)
	}
	return uint32(l), terms, nil
}
