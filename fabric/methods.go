package fabric

// Method numbers of Weft's own services, one range per package, written
// down here once so that no two packages ever share a number. A package
// declares its methods as offsets from its base and never outside its
// range; numbers are part of the wire format and never reused for another
// meaning.
//
//	  1 –  255  the fabric itself (MethodPing, MethodStream, the adaptive envelope)
//	256 –  271  package cluster: proposals forwarded to the Raft leader
//	272 –  383  package shard: writes, realtime gets, search phases, replication, recovery
//	384 –       free
//
// Tests and benchmarks that serve their own listeners (the conformance
// suite, fabricbench's echo) number from MethodUserBase too; they never
// share a listener with a node's services.
const (
	// MethodClusterBase is the first of package cluster's methods.
	MethodClusterBase Method = 256
	// MethodShardBase is the first of package shard's methods.
	MethodShardBase Method = 272
	// MethodShardEnd is one past package shard's last method.
	MethodShardEnd Method = 384
)
