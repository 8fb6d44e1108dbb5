// Package httpapi serves Weft's REST API: the subset of Elasticsearch's HTTP
// API that the official clients and common tools need, with Elasticsearch's
// response shapes, status codes and error bodies, plus /metrics and optional
// pprof. It owns the Engine interface it needs from the shard layer; the node
// package wires a *shard.Manager into it. Search bodies are translated by
// index/esdsl.
package httpapi
