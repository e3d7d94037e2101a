package cli

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/memor-db/memor/cluster"
	"github.com/memor-db/memor/server"
)

// TestRouteErr: a node's routing errors become the server's: its own
// user is "", another node's its address, and the rest the 503s the
// server answers with Retry-After.
func TestRouteErr(t *testing.T) {
	for _, c := range []struct {
		err  error
		addr string
		want error
	}{
		{nil, "", nil},
		{&cluster.NotOwnerError{Shard: 3, Node: "m2", Addr: "http://127.0.0.1:7422"}, "http://127.0.0.1:7422", nil},
		{&cluster.NotOwnerError{Shard: 3, Node: "m2"}, "", server.ErrNoOwner},
		{fmt.Errorf("%w: shard 3", cluster.ErrNoOwner), "", server.ErrNoOwner},
		{context.DeadlineExceeded, "", server.ErrNoOwner},
		{cluster.ErrStopped, "", server.ErrDraining},
	} {
		addr, err := routeErr(c.err)
		if addr != c.addr || !errors.Is(err, c.want) || (c.want == nil && err != nil) {
			t.Errorf("routeErr(%v) = %q, %v; want %q, %v", c.err, addr, err, c.addr, c.want)
		}
		if c.want != nil {
			if st, _ := server.Status(err); st != 503 {
				t.Errorf("routeErr(%v) answers %d, want 503", c.err, st)
			}
		}
	}
}
