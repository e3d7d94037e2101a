package memor

import (
	"context"
)

// indexer keeps the retrieval indexes in step with the fact versions,
// writing into the same batch so that an index never disagrees with the
// facts.
type indexer interface {
	putVersion(t *txn, f *Fact) error
	expireVersion(t *txn, f *Fact) error
	dropUser(user string)
	check(ctx context.Context, user string) error
}
