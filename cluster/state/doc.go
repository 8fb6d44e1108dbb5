// Package state is the one model of the cluster's committed metadata:
// nodes, indices with their shard tables and aliases, cluster settings and
// the security metadata, and the rules that read it (which copy is
// active, a shard's health). Package cluster builds a new State for every
// command its Raft log applies; the coordinator (coord), the data node
// (shard) and the HTTP layer read the same types, so nothing is copied
// field by field between layers. It imports neither Raft nor the fabric,
// so reading the state costs its readers no such dependency.
package state
