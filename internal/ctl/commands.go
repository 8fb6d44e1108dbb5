package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/weftsearch/weft/security/auth"
)

// Exit codes of searchctl.
const (
	ExitOK          = 0
	ExitFailed      = 1 // the node answered with an error, or documents failed
	ExitUsage       = 2 // bad flags, arguments or input file
	ExitUnreachable = 3 // no answer from the node at all
)

// IO is what a searchctl run reads and writes; Main's caller owns all of it.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string // os.Getenv in production
	// Prompt reads a password without echo, showing prompt. Nil (the
	// production value) asks on Stdin when it is a terminal, with the
	// prompt on Stderr, and refuses otherwise. Tests set it.
	Prompt func(prompt string) (auth.Secret, error)
}

// usageError marks errors in the command line itself (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// Main runs searchctl with args (without the program name) and returns the
// process exit code. It blocks until the command finishes or ctx is done.
func Main(ctx context.Context, args []string, stdio IO) int {
	root := NewCommand(stdio)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(stdio.Stderr, "searchctl:", err)
	var ue usageError
	var ae *APIError
	switch {
	case errors.As(err, &ue), errors.Is(err, ErrBadInput), errors.Is(err, ErrBadCredentials), errors.Is(err, ErrBadCACert):
		return ExitUsage
	case errors.Is(err, ErrUnreachable):
		return ExitUnreachable
	case errors.As(err, &ae), errors.Is(err, ErrItemsFailed):
		return ExitFailed
	case strings.HasPrefix(err.Error(), "unknown command"):
		// cobra's unknown-command error has no type to test.
		return ExitUsage
	}
	return ExitFailed
}

// globals are the flags shared by every command.
type globals struct {
	addr    string
	timeout time.Duration
	output  string
	auth    authFlags
	stdio   IO
}

// client builds the client every command uses: the address, the
// credentials from flags and environment (asking for a missing password
// on a terminal), and the trusted CA.
func (g *globals) client() (*Client, error) {
	creds, cacert, needPassword, err := resolveCredentials(g.auth, g.stdio.Getenv)
	if err != nil {
		return nil, err
	}
	if needPassword {
		pw, err := promptPassword(g.stdio, fmt.Sprintf("Password for user %s: ", creds.Username))
		if errors.Is(err, errNoTerminal) {
			return nil, fmt.Errorf("%w: user %q has no password and standard input is not a terminal to ask on; set WEFT_PASSWORD (or --password, which other users of this machine can see)", ErrBadCredentials, creds.Username)
		}
		if err != nil {
			return nil, err
		}
		if pw == "" {
			return nil, fmt.Errorf("%w: empty password for user %q", ErrBadCredentials, creds.Username)
		}
		creds.Password = pw
	}
	c, err := NewClientWith(g.addr, Options{Credentials: creds, CACertFile: cacert, Timeout: g.timeout})
	if err != nil {
		if errors.Is(err, ErrBadCredentials) || errors.Is(err, ErrBadCACert) {
			return nil, err
		}
		return nil, usageError{err}
	}
	if !creds.IsZero() && c.base.Scheme == "http" && !isLoopback(c.base.Host) {
		fmt.Fprintf(g.stdio.Stderr, "searchctl: warning: sending credentials in clear text to %s; use an https:// address\n", c.base.Host)
	}
	return c, nil
}

func (g *globals) json() (bool, error) {
	switch g.output {
	case "table", "":
		return false, nil
	case "json":
		return true, nil
	}
	return false, usagef("--output %q is not table or json", g.output)
}

// NewCommand builds the searchctl command tree.
func NewCommand(stdio IO) *cobra.Command {
	g := &globals{stdio: stdio}
	root := &cobra.Command{
		Use:   "searchctl",
		Short: "Administer a Weft node over its Elasticsearch-compatible HTTP API",
		Long: "searchctl administers a Weft cluster over a node's HTTP API: cluster health, indexes,\n" +
			"bulk loading of NDJSON files, query-string searches, the node-to-node fabric (devices and\n" +
			"peer connections), the cluster (status, nodes, shards, Raft, node drains, shard moves), and\n" +
			"security users and roles; certs create writes the cluster's certificates and certs add\n" +
			"issues more from its CA, offline.\n\n" +
			"A node with security on serves https and wants credentials: --user with WEFT_PASSWORD (or a\n" +
			"prompt on a terminal), or --api-key; --cacert trusts the cluster's CA (DATA_DIR/certs/ca.crt).\n\n" +
			"Exit codes: 0 ok, 1 the node reported an error or documents failed, 2 bad usage or input,\n" +
			"3 the node could not be reached.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdio.Stdin)
	root.SetOut(stdio.Stdout)
	root.SetErr(stdio.Stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	addr := stdio.Getenv("WEFT_ADDR")
	if addr == "" {
		addr = DefaultAddr
	}
	root.PersistentFlags().StringVar(&g.addr, "addr", addr, "node URL (env WEFT_ADDR)")
	root.PersistentFlags().DurationVar(&g.timeout, "timeout", time.Minute, "limit for each HTTP request")
	root.PersistentFlags().StringVarP(&g.output, "output", "o", "table", "output format: table or json")
	// The defaults of the credential flags stay empty, never the
	// environment's value: --help must not print a password.
	root.PersistentFlags().StringVar(&g.auth.user, "user", "", "authenticate as this user (env WEFT_USER); the password comes from --password, WEFT_PASSWORD or a prompt")
	root.PersistentFlags().StringVar(&g.auth.password, "password", "", "the password of --user (env WEFT_PASSWORD; prefer the variable or the prompt: a command line is visible to other users)")
	root.PersistentFlags().StringVar(&g.auth.apiKey, "api-key", "", "authenticate with an API key: the \"encoded\" value it was created with (env WEFT_API_KEY)")
	root.PersistentFlags().StringVar(&g.auth.cacert, "cacert", "", "PEM file of CA certificates to trust for https besides the system's, e.g. DATA_DIR/certs/ca.crt (env WEFT_CACERT)")

	root.AddCommand(healthCommand(g, stdio), indexCommand(g, stdio), bulkCommand(g, stdio), searchCommand(g, stdio), countCommand(g, stdio),
		fabricCommand(g, stdio), clusterCommand(g, stdio), shardCommand(g, stdio), certsCommand(g, stdio),
		usersCommand(g, stdio), rolesCommand(g, stdio))
	return root
}

func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("want %s, got %d argument(s)", names, len(args))
		}
		return nil
	}
}

// show runs a read-only command: fetch (a Client method expression) asks the
// node, and the answer is printed as the node sent it with -o json, or by
// table otherwise.
func show[T any](ctx context.Context, g *globals, w io.Writer,
	fetch func(*Client, context.Context) (T, []byte, error), table func(io.Writer, T) error) error {
	asJSON, err := g.json()
	if err != nil {
		return err
	}
	c, err := g.client()
	if err != nil {
		return err
	}
	v, raw, err := fetch(c, ctx)
	if err != nil {
		return err
	}
	if asJSON {
		return writePrettyJSON(w, raw)
	}
	return table(w, v)
}

func writePrettyJSON(w io.Writer, data []byte) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, data, "", "  "); err != nil {
		_, err = w.Write(data) // not JSON after all: show it as it came
		return err
	}
	buf.WriteByte('\n')
	_, err := buf.WriteTo(w)
	return err
}

func healthCommand(g *globals, stdio IO) *cobra.Command {
	return &cobra.Command{
		Use:   "health",
		Short: "Show cluster health (green, yellow or red)",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(cmd.Context(), g, stdio.Stdout, (*Client).Health, func(w io.Writer, h Health) error {
				_, err := fmt.Fprintf(w, "%s: %s (%d node(s), %d primary shard(s), %d active shard(s), %d unassigned)\n",
					h.ClusterName, h.Status, h.NumberOfNodes, h.ActivePrimaryShards, h.ActiveShards, h.UnassignedShards)
				return err
			})
		},
	}
}

func indexCommand(g *globals, stdio IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "index",
		Short: "Create, delete, list and show indexes",
		RunE: func(_ *cobra.Command, args []string) error {
			return usagef("index wants a subcommand: create, delete, list or get (got %q)", args)
		},
	}
	var shards, replicas int
	var mappingFile string
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create an index",
		Long: "Create an index. --mapping names a JSON file holding either a mappings object\n" +
			"({\"properties\":{...}}) or a whole create-index body ({\"settings\":..,\"mappings\":..});\n" +
			"--shards and --replicas, when given, override the file's settings.",
		Args: exactArgs(1, "the index NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			body, err := createBody(mappingFile, cmd.Flags().Changed("shards"), shards, cmd.Flags().Changed("replicas"), replicas)
			if err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			if err := c.CreateIndex(cmd.Context(), args[0], body); err != nil {
				return err
			}
			_, err = fmt.Fprintf(stdio.Stdout, "created index %s\n", args[0])
			return err
		},
	}
	create.Flags().IntVar(&shards, "shards", 1, "number_of_shards (fixed once created)")
	create.Flags().IntVar(&replicas, "replicas", 1, "number_of_replicas")
	create.Flags().StringVar(&mappingFile, "mapping", "", "JSON file with the mappings (or a whole create body)")

	del := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete an index and all its documents",
		Args:  exactArgs(1, "the index NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			if err := c.DeleteIndex(cmd.Context(), args[0]); err != nil {
				return err
			}
			_, err = fmt.Fprintf(stdio.Stdout, "deleted index %s\n", args[0])
			return err
		},
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List indexes with health, shards, document counts and sizes",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(cmd.Context(), g, stdio.Stdout, (*Client).ListIndices, func(w io.Writer, rows []IndexSummary) error {
				sort.Slice(rows, func(i, j int) bool { return rows[i].Index < rows[j].Index })
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "INDEX\tHEALTH\tSTATUS\tPRI\tREP\tDOCS\tSIZE")
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Index, r.Health, r.Status, r.Pri, r.Rep, r.DocsCount, r.StoreSize)
				}
				return tw.Flush()
			})
		},
	}
	get := &cobra.Command{
		Use:   "get NAME",
		Short: "Show an index's settings and mappings as JSON",
		Args:  exactArgs(1, "the index NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			raw, err := c.GetIndex(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return writePrettyJSON(stdio.Stdout, raw)
		},
	}
	cmd.AddCommand(create, del, list, get)
	return cmd
}

// createBody builds the PUT /{index} body from an optional mapping file and
// the shard/replica flags that were set.
func createBody(mappingFile string, setShards bool, shards int, setReplicas bool, replicas int) ([]byte, error) {
	body := map[string]json.RawMessage{}
	if mappingFile != "" {
		data, err := os.ReadFile(mappingFile)
		if err != nil {
			return nil, usageError{fmt.Errorf("--mapping: %w", err)}
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(data, &top); err != nil {
			return nil, usagef("--mapping %s is not a JSON object: %v", mappingFile, err)
		}
		_, hasSettings := top["settings"]
		_, hasMappings := top["mappings"]
		if hasSettings || hasMappings {
			body = top
		} else {
			body["mappings"] = data
		}
	}
	if setShards || setReplicas {
		if setShards && shards < 1 {
			return nil, usagef("--shards %d: an index needs at least one shard", shards)
		}
		if setReplicas && replicas < 0 {
			return nil, usagef("--replicas %d is negative", replicas)
		}
		settings := map[string]json.RawMessage{}
		if s, ok := body["settings"]; ok {
			if err := json.Unmarshal(s, &settings); err != nil {
				return nil, usagef("--mapping %s: settings is not an object: %v", mappingFile, err)
			}
		}
		if setShards {
			settings["number_of_shards"] = json.RawMessage(strconv.Itoa(shards))
		}
		if setReplicas {
			settings["number_of_replicas"] = json.RawMessage(strconv.Itoa(replicas))
		}
		b, _ := json.Marshal(settings) // raw messages from valid JSON always marshal
		body["settings"] = b
	}
	if len(body) == 0 {
		return nil, nil
	}
	return json.Marshal(body)
}

func bulkCommand(g *globals, stdio IO) *cobra.Command {
	var (
		opts     LoadOptions
		format   string
		refresh  bool
		quiet    bool
		interval time.Duration
	)
	cmd := &cobra.Command{
		Use:   "bulk FILE",
		Short: "Load an NDJSON file (bulk format or JSON lines) into an index",
		Long: "Load FILE (- for standard input) through the _bulk API in batches, several at a time.\n" +
			"FILE is either Elasticsearch bulk NDJSON (action lines, each but delete followed by a\n" +
			"source line) or JSON lines (one document per line, id from --id-field). Shows progress\n" +
			"(a bar on a terminal, a line every --progress-interval otherwise) and docs/s at the end;\n" +
			"exits 1 and shows the first failed documents if any failed.",
		Args: exactArgs(1, "the input FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := ParseFormat(format)
			if err != nil {
				return usageError{err}
			}
			opts.Format = f
			c, err := g.client()
			if err != nil {
				return err
			}
			var in io.Reader = stdio.Stdin
			var size int64
			if args[0] != "-" {
				file, err := os.Open(args[0])
				if err != nil {
					return usageError{err}
				}
				defer file.Close()
				if st, err := file.Stat(); err == nil {
					size = st.Size()
				}
				in = file
			}
			pp := &progressPrinter{w: stdio.Stderr, terminal: isTerminal(stdio.Stderr), total: size, interval: interval}
			if !quiet {
				opts.Progress = pp.update
			}
			res, err := Load(cmd.Context(), c, in, opts)
			pp.done()
			if err != nil && res.Requests == 0 {
				return err // nothing reached the node: the error says it all
			}
			fmt.Fprintf(stdio.Stdout, "indexed %d documents in %s (%.0f docs/s, %d requests), %d failed\n",
				res.Docs, res.Elapsed.Round(time.Millisecond), res.DocsPerSecond(), res.Requests, res.Failed)
			for _, fi := range res.Failures {
				fmt.Fprintf(stdio.Stdout, "  line %d: %s %q: %d %s: %s\n", fi.Line, fi.Action, fi.ID, fi.Status, fi.Type, fi.Reason)
			}
			if res.Failed > int64(len(res.Failures)) {
				fmt.Fprintf(stdio.Stdout, "  … and %d more\n", res.Failed-int64(len(res.Failures)))
			}
			if err != nil && !errors.Is(err, ErrItemsFailed) {
				return err
			}
			if refresh && opts.Index != "" && res.Docs > 0 {
				if rerr := c.Refresh(cmd.Context(), opts.Index); rerr != nil {
					return errors.Join(err, rerr)
				}
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Index, "index", "", "target index (required for JSON lines and for action lines without _index)")
	fl.StringVar(&format, "format", "auto", "input format: auto, bulk or lines")
	fl.StringVar(&opts.IDField, "id-field", "id", `JSON lines: field holding each document's id ("" lets the node generate ids)`)
	fl.IntVar(&opts.BatchDocs, "batch-docs", 1000, "documents per request")
	fl.IntVar(&opts.BatchBytes, "batch-bytes", 5<<20, "send a request once its body reaches this many bytes")
	fl.IntVar(&opts.Concurrency, "concurrency", 2, "requests in flight")
	fl.BoolVar(&refresh, "refresh", true, "refresh --index at the end so the documents are searchable")
	fl.BoolVarP(&quiet, "quiet", "q", false, "no progress output")
	fl.DurationVar(&interval, "progress-interval", 2*time.Second, "time between progress lines when not on a terminal")
	return cmd
}

func searchCommand(g *globals, stdio IO) *cobra.Command {
	var (
		size   int
		fields []string
		width  int
	)
	cmd := &cobra.Command{
		Use:   "search INDEX QUERY",
		Short: "Search with a query string (Lucene syntax, e.g. 'subject:linux AND body:\"kernel panic\"')",
		Args:  exactArgs(2, "INDEX and QUERY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := g.json()
			if err != nil {
				return err
			}
			if size < 0 {
				return usagef("--size %d is negative", size)
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			body, _ := json.Marshal(map[string]any{ // plain maps of strings and ints always marshal
				"query": map[string]any{"query_string": map[string]any{"query": args[1]}},
				"size":  size,
			})
			res, raw, err := c.Search(cmd.Context(), args[0], body)
			if err != nil {
				return err
			}
			if asJSON {
				return writePrettyJSON(stdio.Stdout, raw)
			}
			return printHits(stdio.Stdout, res, fields, width)
		},
	}
	cmd.Flags().IntVar(&size, "size", 10, "number of hits to show")
	cmd.Flags().StringSliceVar(&fields, "fields", nil, "source fields to show (default: the first four of the first hit)")
	cmd.Flags().IntVar(&width, "width", 40, "cut each shown field value to this many characters")
	return cmd
}

func countCommand(g *globals, stdio IO) *cobra.Command {
	return &cobra.Command{
		Use:   "count INDEX [QUERY]",
		Short: "Print the number of documents in INDEX, or of those matching a query string",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usagef("want INDEX and an optional QUERY, got %d argument(s)", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			q := ""
			if len(args) == 2 {
				q = args[1]
			}
			n, err := c.Count(cmd.Context(), args[0], q)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(stdio.Stdout, n)
			return err
		},
	}
}

// printHits writes a table of id, score and the chosen source fields.
func printHits(w io.Writer, res *SearchResponse, fields []string, width int) error {
	rel := ""
	if res.Hits.Total.Relation == "gte" {
		rel = "≥"
	}
	fmt.Fprintf(w, "%s%d hits in %d ms\n", rel, res.Hits.Total.Value, res.Took)
	if len(res.Hits.Hits) == 0 {
		return nil
	}
	sources := make([]map[string]any, len(res.Hits.Hits))
	for i, h := range res.Hits.Hits {
		var m map[string]any
		if len(h.Source) > 0 && json.Unmarshal(h.Source, &m) != nil {
			m = nil
		}
		sources[i] = m
	}
	if len(fields) == 0 {
		fields = defaultFields(res.Hits.Hits[0].Source, res.Hits.Hits[0].ID)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := append([]string{"ID", "SCORE"}, upper(fields)...)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for i, h := range res.Hits.Hits {
		score := "-"
		if h.Score != nil {
			score = strconv.FormatFloat(*h.Score, 'f', 4, 64)
		}
		row := []string{h.ID, score}
		for _, f := range fields {
			row = append(row, cell(lookup(sources[i], f), width))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// defaultFields returns the first four top-level fields of a source, in
// document order, leaving out a field that only repeats the hit's id.
func defaultFields(src json.RawMessage, id string) []string {
	dec := json.NewDecoder(bytes.NewReader(src))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var out []string
	for dec.More() && len(out) < 4 {
		t, err := dec.Token()
		if err != nil {
			break
		}
		k, _ := t.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			break
		}
		var s string
		if json.Unmarshal(v, &s) == nil && s == id {
			continue
		}
		out = append(out, k)
	}
	return out
}

func upper(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.ToUpper(s)
	}
	return out
}

// lookup returns the value at a dotted path of a decoded source.
func lookup(m map[string]any, path string) any {
	var v any = m
	for part := range strings.SplitSeq(path, ".") {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = obj[part]
	}
	return v
}

// cell renders a value on one line of at most width runes.
func cell(v any, width int) string {
	var s string
	switch x := v.(type) {
	case nil:
		s = ""
	case string:
		s = x
	default:
		b, _ := json.Marshal(x) // decoded JSON values always marshal
		s = string(b)
	}
	s = strings.Join(strings.Fields(s), " ")
	if width > 0 && utf8.RuneCountInString(s) > width {
		r := []rune(s)
		s = string(r[:max(width-1, 0)]) + "…"
	}
	return s
}
