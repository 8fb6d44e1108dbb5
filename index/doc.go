// Package index is the only place in Weft that configures bleve: it turns
// Elasticsearch-style mappings into bleve documents and mappings, and wraps
// one scorch index directory (one shard copy's search index) with batch apply,
// realtime get by id, per-shard statistics for global BM25, and stats.
//
// Documents are built by this package (bleve's Batch.IndexAdvanced), not by
// bleve's mapping: that is where Elasticsearch's dynamic mapping, coercion and
// strict mode are applied, and it lets the mapping change while the index is
// live. The bleve mapping of a live index is used only at query time (query
// analyzers, date parsers); it is replaced under Index's lock, never mutated
// while a search runs.
package index
