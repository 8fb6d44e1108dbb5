package ctl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/weftsearch/weft/fabric/fabricdiag"
	"github.com/weftsearch/weft/fabric/rdma"
)

// FabricDevices returns GET /_weft/fabric/devices and the raw JSON body.
func (c *Client) FabricDevices(ctx context.Context) (*fabricdiag.DevicesReport, []byte, error) {
	var rep fabricdiag.DevicesReport
	raw, err := c.getRaw(ctx, "/_weft/fabric/devices", nil, &rep)
	return &rep, raw, err
}

// FabricConns returns GET /_weft/fabric/conns and the raw JSON body.
func (c *Client) FabricConns(ctx context.Context) (*fabricdiag.ConnsReport, []byte, error) {
	var rep fabricdiag.ConnsReport
	raw, err := c.getRaw(ctx, "/_weft/fabric/conns", nil, &rep)
	return &rep, raw, err
}

// getRaw GETs path (with the query q, may be nil), decodes the 2xx body
// into v and returns the body too.
func (c *Client) getRaw(ctx context.Context, path string, q url.Values, v any) ([]byte, error) {
	data, err := c.Do(ctx, http.MethodGet, path, q, nil, "")
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return data, fmt.Errorf("GET %s: decode response: %w", path, err)
	}
	return data, nil
}

func fabricCommand(g *globals, stdio IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fabric",
		Short: "Show the node's fabric: network and RDMA devices, peer connections",
		RunE: func(_ *cobra.Command, args []string) error {
			return usagef("fabric wants a subcommand: devices or conns (got %q)", args)
		},
	}
	devices := &cobra.Command{
		Use:   "devices",
		Short: "List the node's RDMA devices (ports, state, active MTU, GIDs) and network interfaces",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(cmd.Context(), g, stdio.Stdout, (*Client).FabricDevices, printDevices)
		},
	}
	conns := &cobra.Command{
		Use:   "conns",
		Short: "List the node's fabric peers: paths, counters, RDMA queue pairs and the adaptive decision table",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(cmd.Context(), g, stdio.Stdout, (*Client).FabricConns, printConns)
		},
	}
	cmd.AddCommand(devices, conns)
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func printDevices(w io.Writer, rep *fabricdiag.DevicesReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "RDMA: %s\n", rep.RDMA)
	if len(rep.RDMADevices) > 0 {
		fmt.Fprintln(tw, "DEVICE\tPORT\tSTATE\tPHYS\tLINK\tACTIVE MTU\tGID INDEX\tGID\tTYPE\tNETDEV")
		for _, d := range rep.RDMADevices {
			if len(d.Ports) == 0 {
				fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\n", d.Name)
			}
			for _, p := range d.Ports {
				mtu := "-"
				if p.ActiveMTU > 0 {
					mtu = strconv.Itoa(p.ActiveMTU)
				}
				if len(p.GIDs) == 0 {
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t-\t-\t-\t-\n", d.Name, p.Num, p.State, dash(p.PhysState), dash(p.LinkLayer), mtu)
				}
				for _, gid := range p.GIDs {
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", d.Name, p.Num, p.State, dash(p.PhysState), dash(p.LinkLayer), mtu,
						gid.Index, gid.GID, dash(gid.Type), dash(gid.NetDev))
				}
			}
		}
	}
	if rep.VerbsError != "" {
		fmt.Fprintf(tw, "verbs: %s\n", rep.VerbsError)
	} else {
		fmt.Fprintf(tw, "verbs: %d device(s)\n", len(rep.VerbsDevices))
	}
	fmt.Fprintln(tw, rdmaPathLine(rep.RDMAPath, rep.RDMATransport))
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "INTERFACE\tDRIVER\tMTU\tSPEED\tSTATE\tADDRESSES")
	for _, ifc := range rep.Interfaces {
		driver := ifc.Driver
		if driver == "" && ifc.Virtual {
			driver = "(virtual)"
		}
		speed := "-"
		if ifc.SpeedMbps > 0 {
			speed = strconv.Itoa(ifc.SpeedMbps) + " Mb/s"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", ifc.Name, dash(driver), ifc.MTU, speed, dash(ifc.OperState), dash(strings.Join(ifc.Addrs, ",")))
	}
	return tw.Flush()
}

func printConns(w io.Writer, rep *fabricdiag.ConnsReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if rep.Fabric != "on" {
		fmt.Fprintf(tw, "fabric: %s (start the node with --fabric-addr to serve it); rdma: %s\n", dash(rep.Fabric), dash(rep.RDMA))
	} else {
		fmt.Fprintf(tw, "fabric: on, listening on %s; rdma: %s\n", rep.ListenAddr, dash(rep.RDMA))
		if rep.RDMATransport != nil {
			fmt.Fprintln(tw, rdmaPathLine(rep.RDMA, rep.RDMATransport))
		}
	}
	if len(rep.Conns) == 0 {
		fmt.Fprintln(tw, "peers: none")
	} else {
		fmt.Fprintln(tw, "PEER\tDIRECTION\tTRANSPORT\tREMOTE\tMESSAGES\tBYTES IN\tBYTES OUT\tERRORS\tQP")
		for _, c := range rep.Conns {
			if len(c.Paths) == 0 {
				fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-\t-\n", c.Peer, c.Direction)
			}
			for _, p := range c.Paths {
				qp := "-"
				if p.QP != nil {
					qp = fmt.Sprintf("%d->%d %s credits %d", p.QP.LocalQPN, p.QP.RemoteQPN, p.QP.QPState, p.QP.SendCredits)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", c.Peer, c.Direction, p.Transport, p.Remote, p.Messages, p.BytesReceived, p.BytesSent, p.Errors, qp)
			}
		}
	}
	for _, c := range rep.Conns {
		if len(c.DecisionTable) == 0 {
			continue
		}
		fmt.Fprintf(tw, "\ndecision table, peer %s", c.Peer)
		if c.Totals != nil {
			fmt.Fprintf(tw, " (calls %d, call errors %d, sends %d, in flight %d)", c.Totals.Calls, c.Totals.CallErrors, c.Totals.Sends, c.Totals.InFlight)
		}
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "PATH\tHEALTHY\tSIZE<=\tRTT\tMB/S\tSAMPLES\tCHOSEN\tSWITCHES")
		for _, p := range c.DecisionTable {
			healthy := "yes"
			if !p.Healthy {
				healthy = "no: " + dash(p.LastError)
			}
			for _, b := range p.Buckets {
				rtt, mbps := "-", "-"
				if b.RTTns > 0 {
					rtt = time.Duration(b.RTTns).String()
					if b.Estimated {
						rtt += " (model)"
					}
					mbps = strconv.FormatFloat(b.MBps, 'f', 1, 64)
				}
				chosen := ""
				if b.Chosen {
					chosen = "*"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%d\n", p.Path, healthy, sizeLabel(b.MaxSize), rtt, mbps, b.Samples, chosen, b.Switches)
			}
		}
	}
	if len(rep.RDMAQPs) > 0 {
		fmt.Fprintln(tw, "\nRDMA QUEUE PAIRS")
		fmt.Fprintln(tw, "PEER\tDIALED\tLOCAL QPN\tREMOTE QPN\tSTATE\tCREDITS\tOWED\tMSGS OUT\tMSGS IN\tBYTES OUT\tBYTES IN\tERRORS\tKEY SCOPE\tWINDOWS BOUND/REVOKED\tFAILURE")
		for _, q := range rep.RDMAQPs {
			fmt.Fprintf(tw, "%s\t%t\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d/%d\t%s\n", q.Peer, q.Dialed, q.LocalQPN, q.RemoteQPN, q.QPState,
				q.SendCredits, q.CreditsOwed, q.MessagesSent, q.MessagesRecv, q.BytesSent, q.BytesRecv, q.Errors,
				dash(q.KeyScope), q.WindowsBound, q.WindowsRevoked, dash(q.FailureReason))
		}
	}
	return tw.Flush()
}

// rdmaPathLine describes the node's RDMA path in one line: "rdma path:
// off: reason", or the transport's device, port state, key scope and
// asynchronous events, ending in whether it accepts new connections or
// why it refuses them.
func rdmaPathLine(path string, ti *rdma.TransportInfo) string {
	if ti == nil {
		return "rdma path: " + dash(path)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "rdma path: %s: %s port %d, port state %s, GID index %d, key scope %s, async events %d",
		dash(path), dash(ti.Device), ti.Port, dash(ti.PortState), ti.GIDIndex, dash(ti.KeyScope), ti.AsyncEvents)
	if ti.LastAsyncEvent != "" {
		fmt.Fprintf(&b, " (last %s)", ti.LastAsyncEvent)
	}
	if ti.ConnsFailedByEvents > 0 {
		fmt.Fprintf(&b, ", %d connection(s) failed by events", ti.ConnsFailedByEvents)
	}
	if ti.Refusing != "" {
		b.WriteString("; refusing new connections: " + ti.Refusing)
	} else {
		b.WriteString("; accepting connections")
	}
	return b.String()
}

// sizeLabel writes a bucket bound in B, KiB or MiB.
func sizeLabel(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " B"
}
