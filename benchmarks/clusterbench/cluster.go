package clusterbench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/weftsearch/weft/benchmarks/internal/nodeproc"
	"github.com/weftsearch/weft/internal/ctl"
	"github.com/weftsearch/weft/internal/freeport"
)

// clusterTimeout bounds how long a cluster may take to form and turn green.
const clusterTimeout = 3 * time.Minute

// cluster is a set of searchnode processes on 127.0.0.1: one node on its
// own (no cluster flags, no fabric), or several that form one cluster with
// a fabric of the given transport.
type cluster struct {
	bin       string
	transport string // "" for a lone node
	throttle  int64  // --recovery-max-bytes-per-sec
	procs     int    // --processors; 0: not given
	nodes     []*member
}

// member is one node of a cluster.
type member struct {
	name, dir, log             string
	http, fabric, gossip, raft string
	p                          *nodeproc.Proc
	c                          *ctl.Client
}

// newCluster lays out n nodes under dir with free loopback ports, each
// with --processors procs when there are several (0: not given); start
// runs them.
func newCluster(bin, dir string, n int, transport string, throttle int64, procs int) (*cluster, error) {
	cl := &cluster{bin: bin, transport: transport, throttle: throttle, procs: procs}
	if n == 1 {
		cl.transport, cl.procs = "", 0
	}
	for i := range n {
		m := &member{name: fmt.Sprintf("n%d", i+1)}
		m.dir = filepath.Join(dir, m.name)
		m.log = filepath.Join(dir, m.name+".log")
		cl.nodes = append(cl.nodes, m)
	}
	if err := cl.pickPorts(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return cl, nil
}

// name is how reports call the cluster: "1 node" or "3 nodes tcp".
func (cl *cluster) name() string {
	if len(cl.nodes) == 1 {
		return "1 node"
	}
	return fmt.Sprintf("%d nodes %s", len(cl.nodes), cl.transport)
}

// args are node m's flags.
func (cl *cluster) args(m *member) []string {
	a := []string{"--node-name", m.name, "--data-dir", m.dir, "--http-addr", m.http, "--log-level", "warn",
		"--recovery-max-bytes-per-sec", strconv.FormatInt(cl.throttle, 10),
		"--security=false"} // plain transports until the benchmark measures security on and off side by side
	if cl.procs > 0 {
		a = append(a, "--processors", strconv.Itoa(cl.procs))
	}
	if len(cl.nodes) == 1 {
		return a
	}
	var seeds, names []string
	for _, o := range cl.nodes {
		seeds = append(seeds, o.gossip)
		names = append(names, o.name)
	}
	return append(a, "--fabric-addr", m.fabric, "--gossip-addr", m.gossip, "--raft-addr", m.raft,
		"--seeds", strings.Join(seeds, ","), "--initial-nodes", strings.Join(names, ","),
		"--fabric-transport", cl.transport, "--fabric-rdma", "off")
}

// pickPorts gives every node free loopback ports (and a client of its
// HTTP port).
func (cl *cluster) pickPorts() error {
	var err error
	for _, m := range cl.nodes {
		if m.http, err = freeport.Pick(false); err != nil {
			return err
		}
		if len(cl.nodes) > 1 {
			if m.fabric, err = freeport.Pick(false); err != nil {
				return err
			}
			if m.gossip, err = freeport.Pick(true); err != nil {
				return err
			}
			if m.raft, err = freeport.Pick(false); err != nil {
				return err
			}
		}
		if m.c, err = ctl.NewClient("http://"+m.http, nil); err != nil {
			return err
		}
	}
	return nil
}

// startTries bounds start's attempts.
const startTries = 3

// start runs every node and waits until the cluster is green with all of
// them. A port freeport picked can be taken by another process before the
// node binds it (other test packages pick from the same range at the same
// time); the node then exits at start saying so, and start stops the
// nodes, wipes their directories (Raft would remember the old addresses),
// picks new ports and tries again, startTries times in all. On error the
// nodes already started keep running; call stop.
func (cl *cluster) start(ctx context.Context) error {
	for try := 1; ; try++ {
		err := cl.startOnce(ctx)
		// The node's own words, in its log: net's "address already in use".
		if err == nil || try == startTries || !strings.Contains(err.Error(), "address already in use") {
			return err
		}
		if err := cl.stop(); err != nil {
			return err
		}
		for _, m := range cl.nodes {
			if err := os.RemoveAll(m.dir); err != nil {
				return err
			}
		}
		if err := cl.pickPorts(); err != nil {
			return err
		}
	}
}

// startOnce is one attempt of start.
func (cl *cluster) startOnce(ctx context.Context) error {
	for _, m := range cl.nodes {
		p, err := nodeproc.Start(cl.bin, m.log, nil, cl.args(m)...)
		if err != nil {
			return err
		}
		m.p = p
	}
	return cl.waitGreen(ctx, "", clusterTimeout)
}

// waitGreen waits until the cluster (or one index of it) is green with all
// its nodes, asking the first node; a node that exits meanwhile is an
// error carrying its log.
func (cl *cluster) waitGreen(ctx context.Context, index string, timeout time.Duration) error {
	path := "/_cluster/health"
	if index != "" {
		path += "/" + url.PathEscape(index)
	}
	q := url.Values{"wait_for_status": {"green"}, "wait_for_nodes": {strconv.Itoa(len(cl.nodes))}, "timeout": {"5s"}}
	deadline := time.Now().Add(timeout)
	var last error
	for {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := cl.nodes[0].c.Do(cctx, http.MethodGet, path, q, nil, "")
		cancel()
		if err == nil {
			return nil
		}
		last = err
		if ctx.Err() != nil {
			return ctx.Err()
		}
		for _, m := range cl.nodes {
			if m.p.Exited() {
				return fmt.Errorf("%s: node %s exited; its log:\n%s", cl.name(), m.name, m.p.Tail())
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s not green with %d nodes within %v (last: %v); logs under %s",
				cl.name(), strings.TrimPrefix(path, "/"), len(cl.nodes), timeout, last, filepath.Dir(cl.nodes[0].log))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop stops every running node (SIGTERM, concurrently) and waits.
func (cl *cluster) stop() error {
	var wg sync.WaitGroup
	errs := make([]error, len(cl.nodes))
	for i, m := range cl.nodes {
		if m.p == nil {
			continue
		}
		wg.Go(func() {
			if err := m.p.Stop(); err != nil {
				errs[i] = fmt.Errorf("%s: node %s: %w", cl.name(), m.name, err)
			}
			m.p = nil
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// node returns the member named name, or nil.
func (cl *cluster) node(name string) *member {
	for _, m := range cl.nodes {
		if m.name == name {
			return m
		}
	}
	return nil
}
