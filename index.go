package memor

import (
	"context"
	"time"

	"github.com/memor-db/memor/extract"
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

func defaultExtractor() extract.Extractor {
	return extract.ExtractorFunc(func(context.Context, string, time.Time) ([]extract.Op, error) { return nil, nil })
}
