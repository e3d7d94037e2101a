package bench

import (
	_ "github.com/blevesearch/bleve/v2"
	_ "github.com/coder/hnsw"
	_ "modernc.org/sqlite"
)
