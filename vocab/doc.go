// Package vocab is the one vocabulary of requests that the rooms of a node
// share: document operations and their results (Op, OpResult), the errors
// a request can end with, a scroll's cursor, copy statistics, recovery
// reports and the field types of a node's mappings. The HTTP layer parses
// requests into it and renders replies from it, the coordinator routes it,
// the data node (package shard) carries it out and encodes it on the
// fabric. It holds no behaviour beyond small methods on these types and
// imports only index, so that no room depends on another's implementation
// to speak it (as Vitess's vtgate and vttablet share one query
// vocabulary, and CockroachDB's kvclient and kvserver share kvpb).
package vocab
