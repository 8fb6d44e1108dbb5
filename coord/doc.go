// Package coord is the coordinating node, the engine the HTTP API calls on
// every node. It resolves index names, aliases and wildcards from the
// committed metadata; routes writes (murmur3 of the routing value or _id,
// mod the shard count) and realtime gets to each shard's primary, with the
// write-group retries; fans searches out to one copy of every shard, with
// global BM25 statistics, the query and fetch phases and the reduce
// through bleve's IndexAlias; orchestrates points in time and scrolls;
// gathers index statistics; and runs index administration through the
// metadata. It reaches shard copies only through shard.Copies — the
// node's own shard.Store in place, another node's through shard.Remote —
// so a local and a remote copy are called alike.
package coord
