package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
)

// FabricDiagnostics is what the /_weft/fabric/ endpoints need from the node.
// Both methods are called concurrently, once per request, and return a
// report that the API encodes with encoding/json (so `omitzero` tags hold).
type FabricDiagnostics interface {
	// FabricDevices describes the host's network interfaces and RDMA devices.
	FabricDevices(ctx context.Context) (any, error)
	// FabricConns describes the fabric's peers, paths and counters; it
	// succeeds (with an empty list) when the fabric is off.
	FabricConns(ctx context.Context) (any, error)
}

// errNoFabric answers the fabric endpoints on an API built without
// Config.Fabric.
var errNoFabric = &apiError{Status: http.StatusNotFound, Type: "resource_not_found_exception",
	Reason: "this node has no fabric diagnostics (httpapi.Config.Fabric is nil)"}

// handleFabricDevices serves GET /_weft/fabric/devices.
func (s *Server) handleFabricDevices(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Fabric == nil {
		return errNoFabric
	}
	rep, err := s.cfg.Fabric.FabricDevices(r.Context())
	if err != nil {
		return err
	}
	return s.writeReport(w, r, rep)
}

// handleFabricConns serves GET /_weft/fabric/conns.
func (s *Server) handleFabricConns(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Fabric == nil {
		return errNoFabric
	}
	rep, err := s.cfg.Fabric.FabricConns(r.Context())
	if err != nil {
		return err
	}
	return s.writeReport(w, r, rep)
}

// writeReport encodes a diagnostics report with encoding/json, which knows
// the `omitzero` tags the reply encoder ignores, and writes it.
func (s *Server) writeReport(w http.ResponseWriter, r *http.Request, rep any) error {
	b, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("httpapi: encoding fabric report: %w", err)
	}
	s.writeJSON(w, r, http.StatusOK, json.RawMessage(b))
	return nil
}
