// Package ctl is the logic behind searchctl, Weft's admin command line: a
// small HTTP/JSON client for the node's Elasticsearch-compatible API, a bulk
// loader for NDJSON files, and the cobra commands that print their results.
// cmd/searchctl only calls Main.
package ctl

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultAddr is the node address used when neither --addr nor WEFT_ADDR is set.
const DefaultAddr = "https://127.0.0.1:9200"

// ErrUnreachable reports that no HTTP exchange with the node happened at all
// (connection refused, DNS failure, timeout before a response).
var ErrUnreachable = errors.New("node unreachable")

// APIError is a non-2xx answer from the node, decoded from the Elasticsearch
// error shape {"error":{"type":..,"reason":..},"status":..} when present.
type APIError struct {
	Method, Path string
	Status       int
	Type         string // e.g. index_not_found_exception; empty if the body had none
	Reason       string // the node's message, or the start of the body
	Hint         string // what to do, added by searchctl (e.g. which flags authenticate); may be empty
}

func (e *APIError) Error() string {
	typ := e.Type
	if typ == "" {
		typ = http.StatusText(e.Status)
	}
	msg := fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.Path, e.Status, typ, e.Reason)
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// Client talks HTTP/JSON to one node. It is safe for concurrent use.
type Client struct {
	base  *url.URL
	hc    *http.Client
	creds Credentials
}

// Options configure a Client made by NewClientWith.
type Options struct {
	// Credentials authenticate every request; the zero value sends none.
	Credentials Credentials
	// CACertFile names a PEM file of CA certificates trusted for https
	// besides the system roots (which honour SSL_CERT_FILE and
	// SSL_CERT_DIR). Empty trusts the system roots alone.
	CACertFile string
	// Timeout limits each request; zero means no limit (bound calls with
	// their context).
	Timeout time.Duration
}

// NewClient returns a client for the node at addr ("http://host:port",
// "https://host:port", or "host:port" which means http) that sends no
// credentials. hc nil means a client with no overall timeout (bound calls
// with their context) that trusts the system roots for https.
func NewClient(addr string, hc *http.Client) (*Client, error) {
	u, err := parseAddr(addr)
	if err != nil {
		return nil, err
	}
	if hc == nil {
		hc = &http.Client{Transport: newTransport(nil)}
	}
	return &Client{base: u, hc: hc}, nil
}

// NewClientWith returns a client for the node at addr (as NewClient) that
// authenticates with opts.Credentials and trusts opts.CACertFile. A bad
// CA file, or credentials that cannot be sent, wrap ErrBadCredentials or
// ErrBadCACert; their messages never contain a secret.
func NewClientWith(addr string, opts Options) (*Client, error) {
	u, err := parseAddr(addr)
	if err != nil {
		return nil, err
	}
	if err := opts.Credentials.Validate(); err != nil {
		return nil, err
	}
	tc, err := tlsConfig(opts.CACertFile)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: newTransport(tc), Timeout: opts.Timeout}
	return &Client{base: u, hc: hc, creds: opts.Credentials}, nil
}

// parseAddr checks a node address. Its errors show the address only with
// any password in it redacted.
func parseAddr(addr string) (*url.URL, error) {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		if strings.Contains(addr, "@") {
			return nil, errors.New("the node address does not parse (not shown: it may hold credentials); use https://host:port")
		}
		return nil, fmt.Errorf("address %q: %w; use http://host:port", addr, err)
	}
	if u.User != nil {
		return nil, fmt.Errorf("address %q holds credentials; pass them with --user (and WEFT_PASSWORD) or --api-key instead", u.Redacted())
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("address %q: scheme %q is not http or https", addr, u.Scheme)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("address %q has no host; use http://host:port", addr)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	return u, nil
}

// newTransport returns searchctl's transport; tc nil uses Go's default TLS
// settings (the system roots).
func newTransport(tc *tls.Config) *http.Transport {
	return &http.Transport{
		Proxy:               nil, // a local admin tool must not go through $HTTP_PROXY
		MaxIdleConnsPerHost: 64,
		TLSClientConfig:     tc,
		ForceAttemptHTTP2:   true, // the same protocol with --cacert as without
		TLSHandshakeTimeout: 10 * time.Second,
	}
}

// Addr returns the node's base URL.
func (c *Client) Addr() string { return c.base.String() }

// Do sends one request and returns the response body of a 2xx answer. path
// is URL-escaped ("/" + url.PathEscape(index) + "/_search"). body may be
// nil; contentType is used only with a body. A non-2xx answer is an
// *APIError; a failure to exchange at all wraps ErrUnreachable.
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, body []byte, contentType string) ([]byte, error) {
	// path is already escaped (callers escape each segment); keep it so,
	// with Path as its decoded form, so String() does not escape it twice.
	u := *c.base
	u.RawPath = c.base.EscapedPath() + path
	decoded, err := url.PathUnescape(u.RawPath)
	if err != nil {
		return nil, fmt.Errorf("%s %s: bad path: %w", method, path, err)
	}
	u.Path = decoded
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	c.creds.apply(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, ctx.Err())
		}
		return nil, fmt.Errorf("%w at %s: %v; %s", ErrUnreachable, c.base, err, unreachableHint(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read response: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := decodeAPIError(method, path, resp.StatusCode, data)
		e.Hint = c.hint(e, data)
		return data, e
	}
	return data, nil
}

// unreachableHint says what to do about a failed exchange: TLS trust and
// name problems get their own advice.
func unreachableHint(err error) string {
	var unknownCA x509.UnknownAuthorityError
	var badName x509.HostnameError
	var notTLS tls.RecordHeaderError
	switch {
	case errors.As(err, &unknownCA):
		return "the node's certificate is not signed by a trusted CA: pass --cacert (WEFT_CACERT) with the cluster's ca.crt (DATA_DIR/certs/ca.crt on a lone node)"
	case errors.As(err, &badName):
		return "the node's certificate does not name this host: use an address it names (localhost or 127.0.0.1 on the node's own machine)"
	case errors.As(err, &notTLS),
		// net/http turns a plain HTTP answer to a TLS hello into an
		// error with no type to test: only its text says so.
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return "the node does not speak TLS there: use an http:// address"
	}
	return "is searchnode running there? (set --addr or WEFT_ADDR)"
}

// hint says what to do about an error answer the node gave to this
// client: 401 names the flags that authenticate, and an http request to
// an https node says to use https. It never contains a secret.
func (c *Client) hint(e *APIError, body []byte) string {
	switch {
	case e.Status == http.StatusUnauthorized && c.creds.IsZero():
		return "the node requires authentication: pass --user with --password (or WEFT_USER and WEFT_PASSWORD), or --api-key (WEFT_API_KEY)"
	case e.Status == http.StatusUnauthorized && c.creds.APIKey != "":
		return "the node refused the API key: check --api-key (WEFT_API_KEY); it takes the \"encoded\" value the key was created with, and the key may be expired or invalidated"
	case e.Status == http.StatusUnauthorized:
		return fmt.Sprintf("the node refused user %q: check --user and --password (WEFT_USER, WEFT_PASSWORD), and that the user exists and is enabled", c.creds.Username)
	case e.Status == http.StatusBadRequest && bytes.Contains(body, []byte("HTTP request to an HTTPS server")):
		return "the node serves HTTPS: use an https:// address (--addr, WEFT_ADDR)"
	}
	return ""
}

func decodeAPIError(method, path string, status int, body []byte) *APIError {
	e := &APIError{Method: method, Path: path, Status: status}
	var shaped struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &shaped) == nil && len(shaped.Error) > 0 {
		var obj struct {
			Type   string `json:"type"`
			Reason string `json:"reason"`
		}
		if json.Unmarshal(shaped.Error, &obj) == nil {
			e.Type, e.Reason = obj.Type, obj.Reason
			return e
		}
		var s string
		if json.Unmarshal(shaped.Error, &s) == nil {
			e.Reason = s
			return e
		}
	}
	e.Reason = strings.TrimSpace(string(body))
	if len(e.Reason) > 300 {
		e.Reason = e.Reason[:300] + "…"
	}
	return e
}

// getJSON GETs path and decodes the 2xx body into v.
func (c *Client) getJSON(ctx context.Context, path string, q url.Values, v any) error {
	data, err := c.Do(ctx, http.MethodGet, path, q, nil, "")
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("GET %s: decode response: %w", path, err)
	}
	return nil
}

// Health is the part of GET /_cluster/health that searchctl shows.
type Health struct {
	ClusterName         string `json:"cluster_name"`
	Status              string `json:"status"`
	NumberOfNodes       int    `json:"number_of_nodes"`
	ActivePrimaryShards int    `json:"active_primary_shards"`
	ActiveShards        int    `json:"active_shards"`
	InitializingShards  int    `json:"initializing_shards"`
	RelocatingShards    int    `json:"relocating_shards"`
	UnassignedShards    int    `json:"unassigned_shards"`
}

// Health returns the cluster's health and the raw JSON body.
func (c *Client) Health(ctx context.Context) (Health, []byte, error) {
	data, err := c.Do(ctx, http.MethodGet, "/_cluster/health", nil, nil, "")
	if err != nil {
		return Health{}, nil, err
	}
	var h Health
	if err := json.Unmarshal(data, &h); err != nil {
		return Health{}, data, fmt.Errorf("GET /_cluster/health: decode response: %w", err)
	}
	return h, data, nil
}

// IndexSummary is one row of GET /_cat/indices?format=json. The cat API
// returns numbers as strings, as Elasticsearch does.
type IndexSummary struct {
	Health    string `json:"health"`
	Status    string `json:"status"`
	Index     string `json:"index"`
	UUID      string `json:"uuid"`
	Pri       string `json:"pri"`
	Rep       string `json:"rep"`
	DocsCount string `json:"docs.count"`
	StoreSize string `json:"store.size"`
}

// ListIndices returns every index, as the node's _cat/indices lists them.
func (c *Client) ListIndices(ctx context.Context) ([]IndexSummary, []byte, error) {
	data, err := c.Do(ctx, http.MethodGet, "/_cat/indices", url.Values{"format": {"json"}}, nil, "")
	if err != nil {
		return nil, nil, err
	}
	var rows []IndexSummary
	if err := json.Unmarshal(data, &rows); err != nil {
		return nil, data, fmt.Errorf("GET /_cat/indices: decode response: %w", err)
	}
	return rows, data, nil
}

// GetIndex returns GET /{name}: the index's aliases, mappings and settings.
func (c *Client) GetIndex(ctx context.Context, name string) ([]byte, error) {
	return c.Do(ctx, http.MethodGet, "/"+url.PathEscape(name), nil, nil, "")
}

// CreateIndex sends PUT /{name} with body (nil for the node's defaults).
func (c *Client) CreateIndex(ctx context.Context, name string, body []byte) error {
	_, err := c.Do(ctx, http.MethodPut, "/"+url.PathEscape(name), nil, body, "application/json")
	return err
}

// DeleteIndex sends DELETE /{name}.
func (c *Client) DeleteIndex(ctx context.Context, name string) error {
	_, err := c.Do(ctx, http.MethodDelete, "/"+url.PathEscape(name), nil, nil, "")
	return err
}

// Refresh makes everything indexed so far in name searchable.
func (c *Client) Refresh(ctx context.Context, name string) error {
	_, err := c.Do(ctx, http.MethodPost, "/"+url.PathEscape(name)+"/_refresh", nil, nil, "")
	return err
}

// Count returns the number of documents in name, or of those matching the
// query string q when q is not empty.
func (c *Client) Count(ctx context.Context, name, q string) (int64, error) {
	var r struct {
		Count int64 `json:"count"`
	}
	var params url.Values
	if q != "" {
		params = url.Values{"q": {q}}
	}
	if err := c.getJSON(ctx, "/"+url.PathEscape(name)+"/_count", params, &r); err != nil {
		return 0, err
	}
	return r.Count, nil
}

// BulkItem is one item of a _bulk response.
type BulkItem struct {
	Action string // index, create, update or delete
	Index  string `json:"_index"`
	ID     string `json:"_id"`
	Status int    `json:"status"`
	Result string `json:"result"`
	Error  *struct {
		Type   string `json:"type"`
		Reason string `json:"reason"`
	} `json:"error"`
}

// BulkResponse is a decoded _bulk response.
type BulkResponse struct {
	Took   int64      `json:"took"`
	Errors bool       `json:"errors"`
	Items  []BulkItem `json:"-"`
}

// Bulk posts an NDJSON _bulk body (each line ending in "\n"). index, when
// not empty, is the default index of the request (POST /{index}/_bulk).
// The body is only read during the call.
func (c *Client) Bulk(ctx context.Context, index string, body []byte) (*BulkResponse, error) {
	path := "/_bulk"
	if index != "" {
		path = "/" + url.PathEscape(index) + "/_bulk"
	}
	data, err := c.Do(ctx, http.MethodPost, path, nil, body, "application/x-ndjson")
	if err != nil {
		return nil, err
	}
	var raw struct {
		Took   int64                        `json:"took"`
		Errors bool                         `json:"errors"`
		Items  []map[string]json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("POST %s: decode response: %w", path, err)
	}
	r := &BulkResponse{Took: raw.Took, Errors: raw.Errors, Items: make([]BulkItem, 0, len(raw.Items))}
	for i, it := range raw.Items {
		if len(it) != 1 {
			return nil, fmt.Errorf("POST %s: response item %d has %d keys, want one action", path, i, len(it))
		}
		for action, v := range it {
			var bi BulkItem
			if err := json.Unmarshal(v, &bi); err != nil {
				return nil, fmt.Errorf("POST %s: decode response item %d: %w", path, i, err)
			}
			bi.Action = action
			r.Items = append(r.Items, bi)
		}
	}
	return r, nil
}

// SearchHit is one hit of a search response.
type SearchHit struct {
	Index  string          `json:"_index"`
	ID     string          `json:"_id"`
	Score  *float64        `json:"_score"`
	Source json.RawMessage `json:"_source"`
}

// SearchResponse is the part of a search response that searchctl shows.
type SearchResponse struct {
	Took int64 `json:"took"`
	Hits struct {
		Total struct {
			Value    int64  `json:"value"`
			Relation string `json:"relation"`
		} `json:"total"`
		Hits []SearchHit `json:"hits"`
	} `json:"hits"`
}

// Search posts body to /{index}/_search and returns the decoded response and
// the raw JSON.
func (c *Client) Search(ctx context.Context, index string, body []byte) (*SearchResponse, []byte, error) {
	path := "/" + url.PathEscape(index) + "/_search"
	data, err := c.Do(ctx, http.MethodPost, path, nil, body, "application/json")
	if err != nil {
		return nil, nil, err
	}
	var r SearchResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, data, fmt.Errorf("POST %s: decode response: %w", path, err)
	}
	return &r, data, nil
}
