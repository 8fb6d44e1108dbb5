// Package shardapi is the vocabulary of the data node's API, shared by its
// server (package shard) and its callers (package coord, and httpapi,
// which parses requests into it and renders replies from it): document
// operations and their results (Op, OpResult), the errors a request to a
// shard copy can end with, a scroll's cursor, copy statistics and
// recovery reports, and the field types of a node's mappings. It holds no
// behaviour beyond small methods on these types, so that the HTTP layer
// speaks this vocabulary without depending on the data node (as
// CockroachDB's kvpb does between kvclient and kvserver).
package shardapi
