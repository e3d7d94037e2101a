package cli

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

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

// TestWriteErr: a write the log refused or could not take is a 503 the
// client retries; any other error passes through.
func TestWriteErr(t *testing.T) {
	other := errors.New("memor: invalid text")
	for _, c := range []struct {
		err, want error
	}{
		{nil, nil},
		{fmt.Errorf("memor: episode log: %w", cluster.ErrBehind), server.ErrBehind},
		{&cluster.NotOwnerError{Shard: 1, Node: "m2", Addr: "http://127.0.0.1:1"}, server.ErrNoOwner},
		{cluster.ErrStopped, server.ErrDraining},
		{fmt.Errorf("memor: episode log: jslog: append: %w", nats.ErrTimeout), server.ErrLogUnavailable},
		{fmt.Errorf("memor: episode log: jslog: append: %w", jetstream.ErrNoStreamResponse), server.ErrLogUnavailable},
		{other, other},
	} {
		err := writeErr(c.err)
		if !errors.Is(err, c.want) || (c.want == nil && err != nil) {
			t.Errorf("writeErr(%v) = %v; want %v", c.err, err, c.want)
		}
	}
}
