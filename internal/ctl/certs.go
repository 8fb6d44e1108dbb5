package ctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/weftsearch/weft/security/certs"
)

// certsReport is what certs create and certs add print with -o json.
type certsReport struct {
	Dir           string   `json:"dir"`
	Files         []string `json:"files"`
	Replaced      []string `json:"replaced,omitempty"`
	CAFingerprint string   `json:"ca_fingerprint"`
	// nodes are the nodes certs add issued for, named in its hint.
	nodes []string
}

func certsCommand(g *globals, stdio IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "certs",
		Short: "Create the cluster's certificates, or add nodes to its CA (works offline, without a node)",
		RunE: func(_ *cobra.Command, args []string) error {
			return usagef("certs wants a subcommand: create or add (got %q)", args)
		},
	}
	var out string
	var nodes, ips, dnsNames []string
	create := &cobra.Command{
		Use:   "create --out DIR --nodes n1,n2,n3 [--ip IP]... [--dns NAME]...",
		Short: "Write a cluster CA, a certificate and key per node, and a gossip key",
		Long: "Write a new cluster CA (ca.crt, ca.key), for each node NAME.crt and NAME.key (the node\n" +
			"name in the certificate, usable as server and client), and gossip.key into DIR. Every\n" +
			"node certificate also names localhost, 127.0.0.1, ::1 and the --ip and --dns values.\n" +
			"Keys are written 0600. Existing files are never overwritten. Give each node ca.crt,\n" +
			"its NAME.crt and NAME.key and gossip.key (searchnode --certs DIR); keep ca.key apart.",
		Args: exactArgs(0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			asJSON, err := g.json()
			if err != nil {
				return err
			}
			rep, err := createCerts(out, nodes, ips, dnsNames)
			if err != nil {
				return err
			}
			return writeCerts(stdio.Stdout, rep, asJSON)
		},
	}
	create.Flags().StringVar(&out, "out", "", "directory to write (created 0700 if missing)")
	nameFlags(create, &nodes, &ips, &dnsNames)
	cmd.AddCommand(create, certsAddCommand(g, stdio))
	return cmd
}

// nameFlags are the node-name flags of certs create and certs add.
func nameFlags(cmd *cobra.Command, nodes, ips, dnsNames *[]string) {
	cmd.Flags().StringSliceVar(nodes, "nodes", nil, "node names, comma-separated (as each node's --node-name)")
	cmd.Flags().StringSliceVar(ips, "ip", nil, "extra IP address for every node certificate (repeatable, or comma-separated)")
	cmd.Flags().StringSliceVar(dnsNames, "dns", nil, "extra DNS name for every node certificate (repeatable, or comma-separated)")
}

func certsAddCommand(g *globals, stdio IO) *cobra.Command {
	var dir string
	var nodes, ips, dnsNames []string
	var force bool
	add := &cobra.Command{
		Use:   "add --certs DIR --nodes n4[,n5] [--ip IP]... [--dns NAME]... [--force]",
		Short: "Issue certificates for new nodes (or replace one node's) with the cluster CA in DIR",
		Long: "Issue NAME.crt and NAME.key (0600) for each --nodes name with the cluster CA that certs\n" +
			"create wrote into DIR (ca.crt and ca.key), so that new nodes join a running cluster: the\n" +
			"nodes already running trust the CA, not single certificates. ca.crt, ca.key, gossip.key and\n" +
			"the other nodes' files are not touched. A node that has a certificate in DIR already is\n" +
			"refused unless --force, which replaces its certificate and key (rotation; the old\n" +
			"certificate's extra IPs and DNS names are kept); restart that node to use them. Give a\n" +
			"new node ca.crt, gossip.key, its NAME.crt and NAME.key (searchnode --certs).",
		Args: exactArgs(0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			asJSON, err := g.json()
			if err != nil {
				return err
			}
			rep, err := addCerts(dir, nodes, ips, dnsNames, force)
			if err != nil {
				return err
			}
			return writeCerts(stdio.Stdout, rep, asJSON)
		},
	}
	add.Flags().StringVar(&dir, "certs", "", "the certificate directory certs create wrote (with ca.crt and ca.key)")
	nameFlags(add, &nodes, &ips, &dnsNames)
	add.Flags().BoolVar(&force, "force", false, "replace the certificate and key of a node that has them already (rotation)")
	return add
}

// writeCerts prints rep as JSON or as text.
func writeCerts(w io.Writer, rep *certsReport, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return printCerts(w, rep)
}

// createCerts checks the flags and calls certs.CreateCluster; errors in
// the flags, or a directory holding files already, are usage errors.
func createCerts(out string, nodes, ipFlags, dnsNames []string) (*certsReport, error) {
	if out == "" {
		return nil, usagef("certs create needs --out DIR")
	}
	if len(nodes) == 0 {
		return nil, usagef("certs create needs --nodes n1,n2,...")
	}
	ips, err := parseIPs(ipFlags)
	if err != nil {
		return nil, err
	}
	created, err := certs.CreateCluster(out, nodes, ips, dnsNames)
	if errors.Is(err, certs.ErrBadNodeName) || errors.Is(err, certs.ErrExists) {
		return nil, usageError{err}
	}
	if err != nil {
		return nil, err
	}
	return &certsReport{Dir: created.Dir, Files: created.Files, CAFingerprint: created.Fingerprint}, nil
}

// addCerts checks the flags and calls certs.AddNodes; errors in the flags,
// a node that has a certificate already (without --force) and a directory
// without the CA are usage errors.
func addCerts(dir string, nodes, ipFlags, dnsNames []string, force bool) (*certsReport, error) {
	if dir == "" {
		return nil, usagef("certs add needs --certs DIR, the directory certs create wrote")
	}
	if len(nodes) == 0 {
		return nil, usagef("certs add needs --nodes n4,...")
	}
	ips, err := parseIPs(ipFlags)
	if err != nil {
		return nil, err
	}
	added, err := certs.AddNodes(dir, nodes, ips, dnsNames, force)
	if errors.Is(err, certs.ErrBadNodeName) || errors.Is(err, certs.ErrExists) || errors.Is(err, certs.ErrNoCA) {
		return nil, usageError{err}
	}
	if err != nil {
		return nil, err
	}
	return &certsReport{Dir: added.Dir, Files: added.Files, Replaced: added.Replaced, CAFingerprint: added.Fingerprint, nodes: nodes}, nil
}

// parseIPs parses the --ip values.
func parseIPs(flags []string) ([]net.IP, error) {
	ips := make([]net.IP, 0, len(flags))
	for _, s := range flags {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, usagef("--ip %q is not an IP address", s)
		}
		ips = append(ips, ip)
	}
	return ips, nil
}

func printCerts(w io.Writer, rep *certsReport) error {
	fmt.Fprintf(w, "wrote %d files in %s:\n", len(rep.Files), rep.Dir)
	for _, f := range rep.Files {
		mode := "?"
		if fi, err := os.Stat(f); err == nil {
			mode = fmt.Sprintf("%04o", fi.Mode().Perm())
		}
		note := ""
		if slices.Contains(rep.Replaced, f) {
			note = "  (replaced)"
		}
		fmt.Fprintf(w, "  %s  %s%s\n", mode, filepath.Base(f), note)
	}
	if _, err := fmt.Fprintf(w, "CA certificate SHA-256 fingerprint: %s\n", rep.CAFingerprint); err != nil {
		return err
	}
	for _, n := range rep.nodes {
		fmt.Fprintf(w, "node %s needs %s, %s, %s and %s (searchnode --node-name %s --certs DIR); restart it if it runs already\n",
			n, certs.CACertFile, certs.GossipKeyFile, certs.CertFile(n), certs.KeyFile(n), n)
	}
	return nil
}
