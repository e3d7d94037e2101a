package memor

import (
	"context"
	"fmt"
	"sort"

	"github.com/memor-db/memor/extract"
)

// rerank reorders the top candidatesPerSignal of list by rr's scores of
// their text against the question, in one batched call; the rest keep
// their place after them.
func rerank(ctx context.Context, rr extract.Reranker, text string, list []*candidate) error {
	top := list[:min(len(list), candidatesPerSignal)]
	docs := make([]string, len(top))
	for i, c := range top {
		docs[i] = c.result().Text()
	}
	scores, err := rr.Rerank(ctx, text, docs)
	if err != nil {
		return fmt.Errorf("memor: rerank: %w", err)
	}
	if len(scores) != len(top) {
		return fmt.Errorf("memor: rerank: %d scores for %d candidates", len(scores), len(top))
	}
	for i, c := range top {
		c.signals.Rerank = scores[i]
	}
	sort.SliceStable(top, func(i, j int) bool { return top[i].signals.Rerank > top[j].signals.Rerank })
	return nil
}
