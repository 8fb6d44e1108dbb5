package index

import "github.com/blevesearch/bleve/v2"

// SearchRequest and SearchResult name bleve's request and result types for
// the layers above the engine (httpapi), which pass them between the query
// translator (index/esdsl) and the shard manager without importing bleve:
// only index and shard configure or build bleve values.
type (
	SearchRequest = bleve.SearchRequest
	SearchResult  = bleve.SearchResult
)
