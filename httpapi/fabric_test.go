package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeFabric answers the fabric endpoints with fixed reports or an error.
type fakeFabric struct {
	devices, conns any
	err            error
}

func (f fakeFabric) FabricDevices(context.Context) (any, error) { return f.devices, f.err }
func (f fakeFabric) FabricConns(context.Context) (any, error)   { return f.conns, f.err }

func TestFabricEndpoints(t *testing.T) {
	report := fakeFabric{
		devices: map[string]any{"interfaces": []map[string]any{{"name": "lo"}}, "rdma_devices": []any{}, "rdma": "none: no devices"},
		conns:   map[string]any{"fabric": "off", "conns": []any{}},
	}
	tests := []struct {
		name   string
		fabric any // nil: Config.Fabric left nil
		method string
		path   string
		status int
		want   map[string]any // top-level fields required in the reply
		errTyp string
	}{
		{"devices", report, "GET", "/_weft/fabric/devices", http.StatusOK, map[string]any{"rdma": "none: no devices"}, ""},
		{"conns", report, "GET", "/_weft/fabric/conns", http.StatusOK, map[string]any{"fabric": "off"}, ""},
		{"no fabric configured", nil, "GET", "/_weft/fabric/conns", http.StatusNotFound, nil, "resource_not_found_exception"},
		{"provider error is a 500", fakeFabric{err: errors.New("sysfs unreadable")}, "GET", "/_weft/fabric/devices", http.StatusInternalServerError, nil, "internal_server_error"},
		{"unknown parameter", report, "GET", "/_weft/fabric/devices?addr=10.0.0.1:9300", http.StatusBadRequest, nil, "illegal_argument_exception"},
		{"no ping over HTTP", report, "POST", "/_weft/fabric/ping", http.StatusBadRequest, nil, "no_handler_found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := apiConfig()
			if f, ok := tc.fabric.(fakeFabric); ok {
				cfg.Fabric = f
			}
			a := newTestAPI(t, cfg)
			r := a.do(tc.method, tc.path, "")
			require.Equal(t, tc.status, r.Status, "%s", r.Body)
			if tc.errTyp != "" {
				require.Equal(t, tc.errTyp, errorType(t, r))
			}
			got := map[string]any{}
			if tc.want != nil {
				got = r.JSON(t)
			}
			for k, v := range tc.want {
				require.Equal(t, v, got[k], "%s", r.Body)
			}
		})
	}
}
