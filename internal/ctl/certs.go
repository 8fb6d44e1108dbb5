package ctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/weftsearch/weft/security/certs"
)

// certsReport is what certs create prints with -o json.
type certsReport struct {
	Dir           string   `json:"dir"`
	Files         []string `json:"files"`
	CAFingerprint string   `json:"ca_fingerprint"`
}

func certsCommand(g *globals, stdio IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "certs",
		Short: "Create the cluster's certificates (works offline, without a node)",
		RunE: func(_ *cobra.Command, args []string) error {
			return usagef("certs wants a subcommand: create (got %q)", args)
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
			if asJSON {
				enc := json.NewEncoder(stdio.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			return printCerts(stdio.Stdout, rep)
		},
	}
	create.Flags().StringVar(&out, "out", "", "directory to write (created 0700 if missing)")
	create.Flags().StringSliceVar(&nodes, "nodes", nil, "node names, comma-separated (as each node's --node-name)")
	create.Flags().StringSliceVar(&ips, "ip", nil, "extra IP address for every node certificate (repeatable, or comma-separated)")
	create.Flags().StringSliceVar(&dnsNames, "dns", nil, "extra DNS name for every node certificate (repeatable, or comma-separated)")
	cmd.AddCommand(create)
	return cmd
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
	ips := make([]net.IP, 0, len(ipFlags))
	for _, s := range ipFlags {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, usagef("--ip %q is not an IP address", s)
		}
		ips = append(ips, ip)
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

func printCerts(w io.Writer, rep *certsReport) error {
	fmt.Fprintf(w, "wrote %d files in %s:\n", len(rep.Files), rep.Dir)
	for _, f := range rep.Files {
		mode := "?"
		if fi, err := os.Stat(f); err == nil {
			mode = fmt.Sprintf("%04o", fi.Mode().Perm())
		}
		fmt.Fprintf(w, "  %s  %s\n", mode, filepath.Base(f))
	}
	_, err := fmt.Fprintf(w, "CA certificate SHA-256 fingerprint: %s\n", rep.CAFingerprint)
	return err
}
