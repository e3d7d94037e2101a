package instant

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestRange(t *testing.T) {
	if !Min().Equal(time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC)) || !Max().Equal(time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("range [%v, %v)", Min(), Max())
	}
	for _, ok := range []time.Time{Min(), time.Unix(0, -1), time.Unix(0, 0), time.Unix(0, 1), Max().Add(-1)} {
		if err := Check(ok, "t"); err != nil || Nanos(ok) == None || !FromNanos(Nanos(ok)).Equal(ok) || FromNanos(Nanos(ok)).IsZero() {
			t.Errorf("%v: %v, nanos %d", ok, err, Nanos(ok))
		}
	}
	for _, bad := range []time.Time{{}, Min().Add(-1), Max(), time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64)} {
		if err := Check(bad, "t"); !errors.Is(err, ErrInvalid) {
			t.Errorf("%v: %v, want ErrInvalid", bad, err)
		}
	}
	if Nanos(time.Time{}) != None || !FromNanos(None).IsZero() {
		t.Error("the zero time is not None")
	}
}
