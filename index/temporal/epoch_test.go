package temporal

import (
	"context"
	"testing"
	"time"

	"github.com/memor-db/memor/kv/kvtest"
)

// TestBoundaryInstantsRoundTrip: every accepted instant where an int64
// encoding can go wrong (the range's ends, before the epoch, the epoch
// itself) is stored and loaded back exactly in each of the four fields,
// never read as open, and is visible exactly from (or until) itself.
func TestBoundaryInstantsRoundTrip(t *testing.T) {
	ctx := context.Background()
	for _, b := range []time.Time{
		time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(0, -1).UTC(),
		time.Unix(0, 0).UTC(),
		time.Unix(0, 1).UTC(),
		time.Date(2261, 12, 31, 23, 59, 59, 999999999, time.UTC),
	} {
		w := kvtest.Map{}
		ix := New([]byte("p/"))
		from := Interval{ValidFrom: b, RecordedAt: b}
		until := Interval{ValidFrom: b.Add(-1), ValidTo: b, RecordedAt: b.Add(-1), ExpiredAt: b}
		if b.Equal(time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC)) {
			until = Interval{ValidFrom: b, ValidTo: b.Add(1), RecordedAt: b, ExpiredAt: b.Add(1)}
		}
		if err := ix.Put(w, 1, from); err != nil {
			t.Fatal(err)
		}
		if err := ix.Put(w, 2, until); err != nil {
			t.Fatal(err)
		}
		re, err := Load(ctx, w, []byte("p/"))
		if err != nil {
			t.Fatal(err)
		}
		for doc, want := range map[uint32]Interval{1: from, 2: until} {
			got, ok := re.Get(doc)
			if !ok || !got.ValidFrom.Equal(want.ValidFrom) || !got.ValidTo.Equal(want.ValidTo) ||
				!got.RecordedAt.Equal(want.RecordedAt) || !got.ExpiredAt.Equal(want.ExpiredAt) ||
				got.ValidTo.IsZero() != want.ValidTo.IsZero() || got.ExpiredAt.IsZero() != want.ExpiredAt.IsZero() {
				t.Errorf("%v: doc %d loads as %+v, want %+v", b, doc, got, want)
			}
		}
		if !re.Visible(b, b).Contains(1) || re.Visible(b.Add(-1), b).Contains(1) || re.Visible(b, b.Add(-1)).Contains(1) {
			t.Errorf("%v: an interval from it is not visible exactly from it", b)
		}
		end := until.ValidTo
		if re.Visible(end, end.Add(-1)).Contains(2) || re.Visible(end.Add(-1), end).Contains(2) || !re.Visible(end.Add(-1), end.Add(-1)).Contains(2) {
			t.Errorf("%v: an interval until it is not visible exactly until it", b)
		}
	}
}
