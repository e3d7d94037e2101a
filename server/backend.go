package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/memor-db/memor"
	"github.com/memor-db/memor/memortest/backend"
)

// Backend adapts an engine to memortest's Backend (and Stater) interface,
// so that the conformance suite can measure it in process or, through
// backend.HTTPHandler, over HTTP. Add returns once the episode is
// applied; Query serves the result texts (facts as "subject predicate
// object", episodes with their date); Reset is Forget. Safe for concurrent
// use.
func Backend(e *memor.Engine) backend.Backend { return engineBackend{e} }

type engineBackend struct{ e *memor.Engine }

func (b engineBackend) Add(ctx context.Context, user, text string, at time.Time) error {
	_, err := b.e.Add(ctx, user, text, memor.At(at), memor.Sync())
	return invalid(err)
}

// invalid marks memor's input errors for memortest, which answers them
// with 400.
func invalid(err error) error {
	for _, s := range []error{memor.ErrInvalidUser, memor.ErrInvalidText, memor.ErrInvalidTime, memor.ErrInvalidFact, memor.ErrInvalidSpeaker, memor.ErrTooLarge} {
		if errors.Is(err, s) {
			return fmt.Errorf("%w: %w", backend.ErrInvalidInput, err)
		}
	}
	return err
}

func (b engineBackend) Query(ctx context.Context, user, q string, k int) ([]string, error) {
	res, err := b.e.Query(ctx, user, q, memor.QueryOptions{K: k, TimeFromText: true})
	if err != nil {
		return nil, invalid(err)
	}
	out := make([]string, 0, len(res))
	for _, r := range res {
		out = append(out, r.Text())
	}
	return out, nil
}

func (b engineBackend) Reset(ctx context.Context, user string) error {
	return invalid(b.e.Forget(ctx, user))
}

// Current lists the facts believed true now (backend.Stater).
func (b engineBackend) Current(ctx context.Context, user string) ([]backend.Triple, error) {
	fs, err := b.e.State(ctx, user)
	if err != nil {
		return nil, err
	}
	out := make([]backend.Triple, 0, len(fs))
	for _, f := range fs {
		out = append(out, backend.Triple{Subject: f.Subject, Predicate: f.Predicate, Object: f.Object})
	}
	return out, nil
}
