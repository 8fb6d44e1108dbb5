package node

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// Config is everything a node needs to start. Flags and WEFT_* environment
// variables (cmd/searchnode) map onto it; DefaultConfig gives the values a
// node started with no flags uses.
type Config struct {
	// DataDir holds every index of this node. Created if missing.
	DataDir string
	// HTTPAddr is the host:port the REST API listens on; port 0 picks a free
	// port, reported by Node.HTTPAddr once started.
	HTTPAddr string
	// NodeName names this node in API responses. Default: the host name.
	NodeName string
	// ClusterName names the cluster in API responses.
	ClusterName string
	// MaxBodyBytes is the largest request body accepted (larger: 413), like
	// Elasticsearch's http.max_content_length.
	MaxBodyBytes int64
	// EnablePprof serves net/http/pprof under /debug/pprof/.
	EnablePprof bool
	// ShutdownTimeout bounds how long Run waits for in-flight requests and
	// for the shards to flush when its context ends.
	ShutdownTimeout time.Duration
	// FabricAddr is the host:port where the node serves the node-to-node
	// fabric (TCP path; an RDMA path, when on, listens on the same host with
	// a port the kernel picks). "" (the default) leaves the fabric off.
	FabricAddr string
	// FabricRDMA is FabricRDMAAuto (the default), FabricRDMAOn or
	// FabricRDMAOff; it matters only when FabricAddr is set.
	FabricRDMA string
}

// Defaults shared by DefaultConfig and the searchnode flags.
const (
	DefaultDataDir         = "./data"
	DefaultHTTPAddr        = "127.0.0.1:9200"
	DefaultClusterName     = "weft"
	DefaultMaxBodyBytes    = 100 << 20
	DefaultShutdownTimeout = 30 * time.Second
)

// DefaultConfig is the configuration of a node started with no flags: a
// single-node cluster with its data in ./data, serving 127.0.0.1:9200.
func DefaultConfig() Config {
	name, err := os.Hostname()
	if err != nil || name == "" {
		name = "weft-node"
	}
	return Config{
		DataDir:         DefaultDataDir,
		HTTPAddr:        DefaultHTTPAddr,
		NodeName:        name,
		ClusterName:     DefaultClusterName,
		MaxBodyBytes:    DefaultMaxBodyBytes,
		ShutdownTimeout: DefaultShutdownTimeout,
		FabricRDMA:      FabricRDMAAuto,
	}
}

// Validate reports every field that is out of bounds, naming it and the bound.
func (c Config) Validate() error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("node: DataDir is empty; set --data-dir (WEFT_DATA_DIR) to the directory holding this node's indexes"))
	}
	if _, port, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		errs = append(errs, fmt.Errorf("node: HTTPAddr %q is not host:port (e.g. 127.0.0.1:9200, :9200, 127.0.0.1:0): %v", c.HTTPAddr, err))
	} else if port == "" {
		errs = append(errs, fmt.Errorf("node: HTTPAddr %q has no port; use port 0 to pick a free one", c.HTTPAddr))
	}
	if c.NodeName == "" {
		errs = append(errs, errors.New("node: NodeName is empty; set --node-name (WEFT_NODE_NAME)"))
	}
	if c.ClusterName == "" {
		errs = append(errs, errors.New("node: ClusterName is empty; set --cluster-name (WEFT_CLUSTER_NAME)"))
	}
	if c.MaxBodyBytes < 1024 {
		errs = append(errs, fmt.Errorf("node: MaxBodyBytes %d is below the minimum of 1024 bytes; set --max-body-bytes (WEFT_MAX_BODY_BYTES)", c.MaxBodyBytes))
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("node: ShutdownTimeout %v must be positive", c.ShutdownTimeout))
	}
	if c.FabricAddr != "" {
		if _, port, err := net.SplitHostPort(c.FabricAddr); err != nil {
			errs = append(errs, fmt.Errorf("node: FabricAddr %q is not host:port (e.g. 127.0.0.1:9300, or port 0 to pick one): %v; set --fabric-addr (WEFT_FABRIC_ADDR)", c.FabricAddr, err))
		} else if port == "" {
			errs = append(errs, fmt.Errorf("node: FabricAddr %q has no port; use port 0 to pick a free one", c.FabricAddr))
		}
	}
	switch c.FabricRDMA {
	case FabricRDMAAuto, FabricRDMAOn, FabricRDMAOff:
	default:
		errs = append(errs, fmt.Errorf("node: FabricRDMA %q is not auto, on or off; set --fabric-rdma (WEFT_FABRIC_RDMA)", c.FabricRDMA))
	}
	return errors.Join(errs...)
}
