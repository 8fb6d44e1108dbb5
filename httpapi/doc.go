// Package httpapi serves Weft's REST API: the subset of Elasticsearch's HTTP
// API that the official clients and common tools need, with Elasticsearch's
// response shapes, status codes and error bodies, plus /metrics and optional
// pprof, and the cluster's endpoints (health, _cat, _nodes, _cluster/state,
// settings, reroute, /_weft/raft). It owns the Engine interface it needs from
// the shard layer and the ClusterAdmin interface it needs from the cluster;
// the node package wires a *coord.Coordinator and the node's cluster into
// it. Search bodies are translated by index/esdsl.
package httpapi
