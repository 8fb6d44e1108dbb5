package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"net/url"
	"reflect"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	jsoniter "github.com/json-iterator/go"
	"github.com/modern-go/reflect2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/coord"
	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/esdsl"
	"github.com/weftsearch/weft/internal/membudget"
	"github.com/weftsearch/weft/vocab"
)

// Engine is the coordinator's API as httpapi calls it, method for method:
// *coord.Coordinator implements it (the node package checks that at
// compile time), and httpapi's tests wrap one to inject failures. Its
// types are the coordinator's (coord), the cluster state's (cluster/state)
// and the data node's vocabulary (vocab), never package shard. Every
// method may be called concurrently.
type Engine interface {
	CreateIndex(ctx context.Context, name string, s coord.IndexSettings, mp *index.Mapping) error
	DeleteIndex(ctx context.Context, name string) error
	Index(name string) (coord.IndexInfo, error)
	Indices() []coord.IndexInfo
	// Resolve expands an index expression (names, aliases, wildcards)
	// under a request's indices options.
	Resolve(expr string, o coord.ResolveOptions) (coord.Resolved, error)
	// Scope is what resolved indices add to a request (alias filter and
	// routing, limits).
	Scope(res coord.Resolved, params map[string][]string) (esdsl.Scope, error)
	PutMapping(ctx context.Context, name string, mp *index.Mapping) error
	UpdateSettings(ctx context.Context, name string, u coord.SettingsUpdate) error
	// UpdateAliases applies alias actions atomically.
	UpdateAliases(ctx context.Context, actions []state.AliasAction) error
	// SetClosed closes indices or opens them again.
	SetClosed(ctx context.Context, names []string, closed bool) error
	Bulk(ctx context.Context, ops []vocab.Op, opts coord.WriteOptions) ([]vocab.OpResult, error)
	// IndexingPressure is the node's accounting of the bytes of writes in
	// flight; a handler holds a write's bytes at its coordinating stage.
	IndexingPressure() *membudget.IndexingPressure
	Get(ctx context.Context, indexName, id, routing string) (index.Doc, error)
	// IndexStats gathers the named indices' statistics from the nodes
	// that answer before ctx ends.
	IndexStats(ctx context.Context, names []string) map[string]coord.IndexStats
	// OpenPIT pins one copy of every shard of the indices for keepAlive;
	// ClosePIT releases them (reporting how many were open).
	OpenPIT(ctx context.Context, names []string, keepAlive time.Duration) (coord.PIT, error)
	ClosePIT(ctx context.Context, pit coord.PIT) (int, error)
	// RunSearch runs a search request, a scroll's first page included;
	// ScrollPage serves a scroll's next page.
	RunSearch(ctx context.Context, req coord.SearchRequest) (*coord.SearchReply, error)
	ScrollPage(ctx context.Context, pit coord.PIT, indices []string, page func(vocab.ScrollCursor) (*esdsl.Search, error)) (*coord.SearchReply, error)
	// ByQuery runs a by-query request (delete, update, reindex).
	ByQuery(ctx context.Context, req coord.ByQuery) (coord.ByQueryResult, error)
	// Mget reads many documents (realtime), grouped by shard.
	Mget(ctx context.Context, items []coord.MgetItem) ([]coord.MgetResult, error)
	Refresh(ctx context.Context, names []string) error
	// SearchFields is the merged mapping of the named indices, with each
	// index's _source policy, that requests over them are translated with.
	SearchFields(names []string) coord.IndexFields
	Search(ctx context.Context, names []string, srch *esdsl.Search) (*coord.SearchResult, error)
	Stats() coord.NodeStats
	// Health summarises the copies of the named indices (coord.Health).
	Health(names []string, level string) (coord.Health, error)
	// ClusterView is the committed cluster metadata as this node sees it
	// (nodes, indices, shard copies), the last while it knows no leader;
	// ErrClusterBlocked while the node has not joined a cluster.
	ClusterView() (*state.State, error)
	// CopyStats counts the documents and bytes of every copy that answers,
	// by allocation ID (asking the nodes that hold them until ctx ends).
	CopyStats(ctx context.Context) map[string]vocab.CopyStats
	// Recoveries lists the shard recoveries of the nodes that answer
	// before ctx ends, newest first.
	Recoveries(ctx context.Context) []vocab.RecoveryInfo
}

// Config describes the node the API speaks for.
type Config struct {
	ClusterName string
	NodeName    string
	NodeID      string
	// MaxBodyBytes is the largest request body read; larger bodies get 413.
	MaxBodyBytes int64
	// BodyTimeout and BodyMinRate pace request bodies (see pacedBody): a
	// body may not stall for BodyTimeout, and must average BodyMinRate
	// bytes a second after a head start of BodyTimeout (0: no rate rule);
	// one that falls behind gets 408 and its connection is closed.
	// BodyTimeout 0 leaves bodies unpaced.
	BodyTimeout time.Duration
	BodyMinRate int64
	// InFlight is the in_flight_requests breaker: every request body is
	// counted against it while the request is served (its declared length
	// before it is read, or its bytes as they arrive), and a body that
	// would pass its limit gets 429 circuit_breaking_exception. Nil counts
	// nothing.
	InFlight *membudget.Breaker
	// EnablePprof serves net/http/pprof under /debug/pprof/.
	EnablePprof bool
	// Fabric serves GET /_weft/fabric/devices and /_weft/fabric/conns;
	// nil answers them with 404.
	Fabric FabricDiagnostics
	// Cluster serves the Raft status, cluster settings and shard moves;
	// nil answers those endpoints with 404.
	Cluster ClusterAdmin
	// Security, when set, authenticates every request (before its body
	// is read) and authorizes it by the rules of routeRules, audits the
	// outcomes, and serves the /_security APIs. Nil serves every request
	// unauthenticated, and the /_security APIs answer 501.
	Security *Security
	// CORS is cross-origin resource sharing; the zero value is off.
	CORS CORS
	// SecurityInfo is what GET / reports of the node's security (its
	// "security" object): whether it is on, and the CA clients trust, or
	// the warning with it off. Any JSON value; nil reports nothing.
	SecurityInfo any
}

// Version is the Elasticsearch version Weft reports in GET /: the 8.x REST
// API is what it implements, and the official 8.x clients require an 8.x
// version (and the X-Elastic-Product header) before they send anything else.
const Version = "8.19.0"

// Server is the REST API as an http.Handler. Create it with New; it holds no
// goroutines and needs no Close.
type Server struct {
	cfg     Config
	eng     Engine
	log     *slog.Logger
	metrics *metrics
	mux     *http.ServeMux
	gather  prometheus.Gatherer
	now     func() time.Time
	// sec is nil with security off.
	sec *securityState
	// serve is the handler chain below ServeHTTP (see New).
	serve http.Handler
	// unruled lists routes registered without an authorization rule.
	unruled []string
	// onUndecided, when set (tests), is told of a request served 2xx
	// without an authorization decision.
	onUndecided func(pattern string)
}

var _ http.Handler = (*Server)(nil)

// New builds the API over eng. Its metrics are registered on reg, which
// /metrics also serves (the caller may register more collectors on it).
func New(cfg Config, eng Engine, logger *slog.Logger, reg *prometheus.Registry) (*Server, error) {
	if eng == nil || logger == nil || reg == nil {
		return nil, errors.New("httpapi: New needs an engine, a logger and a registry")
	}
	if cfg.MaxBodyBytes <= 0 {
		return nil, fmt.Errorf("httpapi: MaxBodyBytes %d must be positive", cfg.MaxBodyBytes)
	}
	if cfg.BodyTimeout < 0 || cfg.BodyMinRate < 0 {
		return nil, fmt.Errorf("httpapi: BodyTimeout %v and BodyMinRate %d must not be negative", cfg.BodyTimeout, cfg.BodyMinRate)
	}
	m, err := newMetrics(reg, func() map[string]uint64 {
		out := map[string]uint64{}
		for _, info := range eng.Indices() {
			out[info.Name] = info.DocsCount
		}
		return out
	})
	if err != nil {
		return nil, fmt.Errorf("httpapi: registering metrics: %w", err)
	}
	s := &Server{cfg: cfg, eng: eng, log: logger, metrics: m, mux: http.NewServeMux(), gather: reg, now: time.Now}
	// The handler chain, outermost first:
	//   ServeHTTP: metrics, the panic guard, the product header, body pacing;
	//   CORS (when on): preflights answered and disallowed origins refused
	//     before authentication, CORS headers set on every other reply;
	//   authentication (with security on);
	//   negotiated: media types and the path's form;
	//   the mux: each route's authorization rule, then its handler.
	s.serve = http.HandlerFunc(s.negotiated)
	if cfg.Security != nil {
		if s.sec, err = newSecurityState(*cfg.Security, logger); err != nil {
			return nil, err
		}
		s.serve = s.sec.mw.Wrap(s.serve)
	}
	cors, err := newCORSHandler(cfg.CORS)
	if err != nil {
		return nil, err
	}
	if cors != nil {
		s.serve = cors.wrap(s.serve)
	}
	s.routes()
	if len(s.unruled) > 0 {
		return nil, fmt.Errorf("httpapi: routes without an authorization rule (add them to routeRuleSpecs): %s", strings.Join(s.unruled, ", "))
	}
	return s, nil
}

// handlerFunc is an API handler: it writes its success reply itself and
// returns an error for everything else, which serve translates and writes.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle registers h under pattern (Go 1.22 method and wildcard syntax).
// params lists the query parameters the endpoint accepts besides the ones
// every endpoint accepts; any other parameter is a 400, as in Elasticsearch.
// A nil params list means the handler checks parameters itself.
func (s *Server) handle(pattern string, h handlerFunc, params ...string) {
	allowed := map[string]bool{"pretty": true, "human": true, "error_trace": true, "filter_path": true}
	for _, p := range params {
		allowed[p] = true
	}
	checkParams := params != nil
	rule := s.ruleOf(pattern)
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if checkParams {
			for p := range r.URL.Query() {
				if !allowed[p] {
					s.fail(w, r, illegalArgument("request [%s] contains unrecognized parameter: [%s]", r.URL.Path, p))
					return
				}
			}
		}
		s.serveRule(w, r, rule, h)
	})
}

// ruleOf returns pattern's authorization rule, noting a pattern without
// one (New then fails).
func (s *Server) ruleOf(pattern string) routeRule {
	rule, ok := routeRules[pattern]
	if !ok {
		s.unruled = append(s.unruled, pattern)
	}
	return rule
}

// serveRule authorizes r by rule and runs h.
func (s *Server) serveRule(w http.ResponseWriter, r *http.Request, rule routeRule, h handlerFunc) {
	r, err := s.authorizeRoute(r, rule)
	if err == nil {
		err = h(w, r)
	}
	if err != nil {
		s.fail(w, r, err)
	}
	if rec, ok := w.(*statusRecorder); ok {
		rec.pattern = r.Pattern
		if s.sec != nil {
			s.checkDecided(r, rec.status())
		}
	}
}

// guarded is handle for a plain http.Handler (metrics, pprof).
func (s *Server) guarded(pattern string, h http.Handler) {
	rule := s.ruleOf(pattern)
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		s.serveRule(w, r, rule, func(w http.ResponseWriter, r *http.Request) error {
			h.ServeHTTP(w, r)
			return nil
		})
	})
}

// noParams is the params list of endpoints that take none beyond the common ones.
var noParams = []string{}

// ServeHTTP serves one request: it sets the Elasticsearch product header,
// checks media types, counts the request in the metrics and turns a panic
// into a logged 500 (a last line of defence, not a way of handling input).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w}
	s.metrics.inFlight.Inc()
	defer func() {
		s.metrics.inFlight.Dec()
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("httpapi: panic serving request", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
			if !rec.wrote {
				s.fail(rec, r, &apiError{Status: http.StatusInternalServerError, Type: "internal_server_error", Reason: "internal error; the node logged the details"})
			}
		}
		endpoint := r.Pattern
		if endpoint == "" {
			endpoint = rec.pattern // set below the authentication middleware's copy of r
		}
		if endpoint == "" {
			endpoint = "unmatched"
		}
		took := time.Since(start)
		s.metrics.latency.WithLabelValues(endpoint, strconv.Itoa(rec.status())).Observe(took.Seconds())
		if s.log.Enabled(r.Context(), slog.LevelDebug) {
			s.log.Debug("request", "method", r.Method, "path", r.URL.Path, "endpoint", endpoint, "status", rec.status(), "took", took)
		}
	}()
	paceBody(w, r, s.cfg.BodyTimeout, s.cfg.BodyMinRate, s.log)
	h := rec.Header()
	h.Set("X-Elastic-Product", "Elasticsearch")
	if id := r.Header.Get("X-Opaque-Id"); id != "" {
		h.Set("X-Opaque-Id", id) // echoed, as Elasticsearch does, to tie replies to requests
	}
	s.serve.ServeHTTP(rec, r)
}

// negotiated checks media types and the path's form (pathError: never
// the mux's redirect) and hands r to the mux. With security on it runs
// after authentication, so a client that has not authenticated learns
// nothing, not even that its path is malformed.
func (s *Server) negotiated(w http.ResponseWriter, r *http.Request) {
	n, aerr := negotiate(r)
	w.Header().Set("Content-Type", n.responseType())
	if aerr == nil {
		aerr = pathError(r)
	}
	if aerr != nil {
		s.fail(w, r, aerr)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// statusRecorder remembers the status written, for metrics and the panic path.
type statusRecorder struct {
	http.ResponseWriter
	code  int
	wrote bool
	// pattern is the route served, for the metrics.
	pattern string
}

func (w *statusRecorder) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if !w.wrote {
		w.code, w.wrote = http.StatusOK, true
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusRecorder) status() int {
	if !w.wrote {
		return http.StatusOK
	}
	return w.code
}

// fail writes err in Elasticsearch's error shape. Errors that translate to
// 5xx are logged: they are the node's fault, not the client's; a 503 (the
// node has not joined a cluster yet, a shard has no copy to serve) as a
// warning, since it is a state that passes (a client polling health while
// the cluster forms gets it), any other as an error.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	ae := translate(err)
	switch {
	case ae.Status == http.StatusServiceUnavailable:
		s.log.Warn("httpapi: request failed", "method", r.Method, "path", r.URL.Path, "status", ae.Status, "err", err)
	case ae.Status >= 500:
		s.log.Error("httpapi: request failed", "method", r.Method, "path", r.URL.Path, "status", ae.Status, "err", err)
	}
	s.writeJSON(w, r, ae.Status, ae.response())
}

// replyJSON encodes replies like encoding/json (same field tags, sorted map
// keys) but copies json.RawMessage values — stored documents — as they are
// instead of re-compacting them, which took most of a search reply's
// encoding time. Every RawMessage a reply holds was validated as JSON when
// it was written.
var replyJSON = newReplyJSON()

func newReplyJSON() jsoniter.API {
	api := jsoniter.Config{EscapeHTML: false, SortMapKeys: true, ValidateJsonRawMessage: false}.Froze()
	api.RegisterExtension(&rawMessageExtension{})
	return api
}

// rawMessageExtension encodes json.RawMessage by appending its bytes to the
// stream; jsoniter's own codec first converts them to a string, one more
// copy of every hit's _source per reply.
type rawMessageExtension struct{ jsoniter.DummyExtension }

var rawMessageType = reflect2.TypeOf(json.RawMessage(nil))

func (*rawMessageExtension) CreateEncoder(typ reflect2.Type) jsoniter.ValEncoder {
	if typ == rawMessageType {
		return rawMessageEncoder{}
	}
	return nil
}

// DecorateEncoder gives map types an allocation-free IsEmpty: jsoniter's
// sorted-keys map encoder answers omitempty by allocating a map iterator,
// once per hit for each nil highlight map. Encoding itself is unchanged.
func (*rawMessageExtension) DecorateEncoder(typ reflect2.Type, enc jsoniter.ValEncoder) jsoniter.ValEncoder {
	if typ.Kind() == reflect.Map {
		return mapEncoder{ValEncoder: enc, typ: typ.Type1()}
	}
	return enc
}

// mapEncoder is a map's jsoniter encoder with IsEmpty read from the map's
// length through reflect (no allocation).
type mapEncoder struct {
	jsoniter.ValEncoder
	typ reflect.Type
}

func (e mapEncoder) IsEmpty(ptr unsafe.Pointer) bool {
	return reflect.NewAt(e.typ, ptr).Elem().Len() == 0
}

type rawMessageEncoder struct{}

func (rawMessageEncoder) IsEmpty(ptr unsafe.Pointer) bool { return len(*(*json.RawMessage)(ptr)) == 0 }

func (rawMessageEncoder) Encode(ptr unsafe.Pointer, stream *jsoniter.Stream) {
	m := *(*json.RawMessage)(ptr)
	if m == nil {
		stream.WriteNil()
		return
	}
	_, _ = stream.Write(m) // appends to the stream's buffer; the stream has no writer
}

// writeJSON writes v as the reply (indented when ?pretty is set; HTML
// characters left as they are, since highlights carry tags). The encoding
// buffer comes from replyJSON's pool, so a reply of a given size costs no
// buffer growth once the pool is warm. On a connection from
// CoalescingListener the reply goes to the socket in one write.
func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	var out []byte
	if flagParam(r, "pretty") {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			s.writeEncodeError(w, r, err)
			return
		}
		out = buf.Bytes()
	} else {
		stream := replyJSON.BorrowStream(nil)
		defer replyJSON.ReturnStream(stream)
		fast := false
		if sr, ok := v.(*esdsl.SearchResponse); ok {
			// The common search reply, appended without reflection; the
			// same bytes as WriteVal (see esdsl's AppendJSON tests).
			var buf []byte
			if buf, fast = sr.AppendJSON(stream.Buffer()); fast {
				stream.SetBuffer(buf)
			}
		}
		if !fast {
			stream.WriteVal(v)
		}
		stream.WriteRaw("\n")
		if stream.Error != nil {
			s.writeEncodeError(w, r, stream.Error)
			return
		}
		out = stream.Buffer()
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		writeReply(w, r, out)
	}
}

// writeEncodeError answers a reply that could not be encoded: a bug, logged.
func (s *Server) writeEncodeError(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Error("httpapi: encoding reply", "path", r.URL.Path, "err", err)
	const body = `{"error":{"root_cause":[{"type":"internal_server_error","reason":"encoding the reply failed"}],"type":"internal_server_error","reason":"encoding the reply failed"},"status":500}` + "\n"
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusInternalServerError)
	if r.Method != http.MethodHead {
		_, _ = io.WriteString(w, body)
	}
}

// readBody reads the whole request body, bounded by MaxBodyBytes, and
// refuses one that is not UTF-8 (400 x_content_parse_exception, as
// Elasticsearch's parsers do: Go's would read the bad bytes as U+FFFD and
// store that). The one body read otherwise is a document source, whose
// refusal takes the document's error (readRawBody, docUTF8Error).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := s.readRawBody(w, r)
	if err != nil {
		return nil, err
	}
	if xe := utf8Error(b, 1); xe != nil {
		return nil, xe
	}
	return b, nil
}

// readRawBody is readBody without the UTF-8 check: for the bodies whose
// parts are judged one by one (a _bulk's lines) or whose refusal is a
// document's (docUTF8Error).
func (s *Server) readRawBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	limit := s.cfg.MaxBodyBytes
	if r.ContentLength > limit {
		return nil, errContentTooLong(limit)
	}
	body, err := s.inFlight(r)
	if err != nil {
		return nil, s.refuseUnread(w, r, err)
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errContentTooLong(limit)
		}
		var be *membudget.BreakingError
		if errors.As(err, &be) {
			return nil, err
		}
		if errors.Is(err, errBodyTooSlow) {
			w.Header().Set("Connection", "close")
			return nil, &apiError{Status: http.StatusRequestTimeout, Type: "request_timeout_exception", Reason: err.Error()}
		}
		return nil, badRequest("parse_exception", "reading the request body failed: %v", err)
	}
	return b, nil
}

// refuseUnread returns err, the refusal of a request whose body was not
// read (it would have taken too much memory), after reading the body to
// its end without keeping it (within --max-body-bytes and the body's
// pace): a client still sending its body when the reply came would
// otherwise have its connection reset and never see the refusal, which is
// what it needs to back off or try another node. A body over the limit, or
// too slow, closes the connection instead.
func (s *Server) refuseUnread(w http.ResponseWriter, r *http.Request, err error) error {
	if _, derr := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)); derr != nil {
		w.Header().Set("Connection", "close")
	}
	return err
}

// httpRequestLabel is what the in_flight_requests breaker calls a request
// body, as Elasticsearch does.
const httpRequestLabel = "<http_request>"

// inFlight counts r's body against the in_flight_requests breaker until
// the request has been served: its declared length at once, or, without
// one, its bytes as they are read (through the returned reader). It fails
// with a *membudget.BreakingError when the body would pass the limit.
func (s *Server) inFlight(r *http.Request) (io.ReadCloser, error) {
	if s.cfg.InFlight == nil {
		return r.Body, nil
	}
	if r.ContentLength >= 0 {
		release, err := s.cfg.InFlight.Reserve(r.ContentLength, httpRequestLabel)
		if err != nil {
			return nil, err
		}
		context.AfterFunc(r.Context(), release) // the request's context ends once it has been served
		return r.Body, nil
	}
	c := &countedBody{r: r.Body, b: s.cfg.InFlight}
	context.AfterFunc(r.Context(), c.release)
	return c, nil
}

// countedBody adds the bytes of a body of unknown length to the breaker as
// they are read, and gives them back together when the request's context
// ends (also when the client goes while the body is still being read: a
// read after that holds nothing).
type countedBody struct {
	r    io.ReadCloser
	b    *membudget.Breaker
	mu   sync.Mutex
	held int64
	done bool
}

func (c *countedBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		if berr := c.b.Add(int64(n), httpRequestLabel); berr != nil {
			return n, berr
		}
		c.mu.Lock()
		if c.done {
			c.b.Sub(int64(n))
		} else {
			c.held += int64(n)
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *countedBody) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = true
	c.b.Sub(c.held)
	c.held = 0
}

func (c *countedBody) Close() error { return c.r.Close() }

// flagParam reports whether a boolean flag parameter is set: present with an
// empty value, or "true".
func flagParam(r *http.Request, name string) bool {
	q := r.URL.Query()
	if !q.Has(name) {
		return false
	}
	v := q.Get(name)
	return v == "" || v == "true"
}

// boolParam parses an Elasticsearch boolean parameter ("true", "false", or
// empty meaning true); anything else is a 400 naming the parameter.
func boolParam(r *http.Request, name string, def bool) (bool, error) {
	return queryBool(r.URL.Query(), name, def)
}

// queryBool reads a boolean parameter of q (def when absent).
func queryBool(q url.Values, name string, def bool) (bool, error) {
	if !q.Has(name) {
		return def, nil
	}
	switch v := q.Get(name); v {
	case "", "true":
		return true, nil
	case "false":
		return false, nil
	default:
		return false, illegalArgument("Failed to parse value [%s] as only [true] or [false] are allowed for parameter [%s]", v, name)
	}
}

// writeOptions reads a write's ?refresh=true|false|wait_for ("" means
// true) and ?wait_for_active_shards=N|all (default 1: the primary).
func writeOptions(r *http.Request) (coord.WriteOptions, error) {
	q := r.URL.Query()
	var opts coord.WriteOptions
	if q.Has("refresh") {
		switch v := q.Get("refresh"); v {
		case "", "true":
			opts.Refresh = coord.RefreshTrue
		case "false":
		case "wait_for":
			opts.Refresh = coord.RefreshWaitFor
		default:
			return opts, illegalArgument("Unknown value for refresh: [%s]; use true, false or wait_for", v)
		}
	}
	switch v := q.Get("wait_for_active_shards"); v {
	case "":
	case "all":
		opts.WaitForActiveShards = coord.AllShards
	default:
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return opts, illegalArgument("failed to parse [wait_for_active_shards] value [%s]; use a number of copies or all", v)
		}
		opts.WaitForActiveShards = n
	}
	if v := q.Get("timeout"); v != "" {
		d, err := parseTimeValue(v)
		if err != nil {
			return opts, err
		}
		opts.Timeout = d
	}
	return opts, nil
}

// routes registers every endpoint. Keep docs/http-api.md in step. Each
// endpoint accepts the parameters Elasticsearch clients send it and refuses
// any other by name. Most are honoured (timeout and master_timeout bound
// metadata changes, health waits and a write's wait for its primary); the
// ones accepted and ignored are listed in docs/http-api.md.
//
// Each family registers itself; net/http's mux picks among patterns by
// how specific they are, not by the order they were registered in, and
// panics on two that conflict.
func (s *Server) routes() {
	s.handle("GET /{$}", s.handleInfo, noParams...)
	s.indexAdminRoutes()
	s.aliasRoutes()
	s.documentRoutes()
	s.multiDocumentRoutes()
	s.searchRoutes()
	s.inspectRoutes()
	s.statsRoutes()
	s.clusterRoutes()
	s.catRoutes()
	s.weftRoutes()
	s.securityRoutes()
	s.mux.HandleFunc("/", s.handleNoRoute)
}

// indexAdminRoutes registers the index APIs that create, read, change,
// open, close and refresh whole indices, their mappings and settings.
func (s *Server) indexAdminRoutes() {
	s.handle("PUT /{index}", s.handleCreateIndex, "wait_for_active_shards", "timeout", "master_timeout")
	s.handle("GET /{index}", s.handleGetIndex, "local", "master_timeout", "flat_settings", "include_defaults", "ignore_unavailable", "allow_no_indices", "expand_wildcards", "features")
	s.handle("DELETE /{index}", s.handleDeleteIndex, "timeout", "master_timeout", "ignore_unavailable", "allow_no_indices", "expand_wildcards")

	openParams := []string{"timeout", "master_timeout", "wait_for_active_shards", "ignore_unavailable", "allow_no_indices", "expand_wildcards"}
	s.handle("POST /{index}/_close", s.handleCloseIndex, openParams...)
	s.handle("POST /{index}/_open", s.handleOpenIndex, openParams...)

	s.handle("GET /_mapping", s.handleGetMapping, "local", "master_timeout", "ignore_unavailable", "allow_no_indices", "expand_wildcards")
	s.handle("GET /{index}/_mapping", s.handleGetMapping, "local", "master_timeout", "ignore_unavailable", "allow_no_indices", "expand_wildcards")
	s.handle("PUT /{index}/_mapping", s.handlePutMapping, "timeout", "master_timeout")
	s.handle("POST /{index}/_mapping", s.handlePutMapping, "timeout", "master_timeout")
	// _mappings: the plural Elasticsearch routes too.
	s.handle("GET /_mappings", s.handleGetMapping, "local", "master_timeout", "ignore_unavailable", "allow_no_indices", "expand_wildcards")
	s.handle("GET /{index}/_mappings", s.handleGetMapping, "local", "master_timeout", "ignore_unavailable", "allow_no_indices", "expand_wildcards")
	s.handle("PUT /{index}/_mappings", s.handlePutMapping, "timeout", "master_timeout")
	s.handle("POST /{index}/_mappings", s.handlePutMapping, "timeout", "master_timeout")
	getSettingsParams := []string{"local", "master_timeout", "flat_settings", "include_defaults", "ignore_unavailable", "allow_no_indices", "expand_wildcards"}
	s.handle("GET /_settings", s.handleGetSettings, getSettingsParams...)
	s.handle("GET /{index}/_settings", s.handleGetSettings, getSettingsParams...)
	s.handle("PUT /{index}/_settings", s.handlePutSettings, "timeout", "master_timeout", "preserve_existing", "reopen", "flat_settings", "ignore_unavailable", "allow_no_indices", "expand_wildcards")

	refreshParams := noParams
	s.handle("POST /_refresh", s.handleRefresh, refreshParams...)
	s.handle("GET /_refresh", s.handleRefresh, refreshParams...)
	s.handle("POST /{index}/_refresh", s.handleRefresh, refreshParams...)
	s.handle("GET /{index}/_refresh", s.handleRefresh, refreshParams...)
}

// aliasRoutes registers the alias APIs: one alias put or deleted, aliases
// read, and _aliases' atomic actions. GET /_alias/{name} is served by
// handleNoRoute (see there).
func (s *Server) aliasRoutes() {
	aliasParams := []string{"timeout", "master_timeout"}
	for _, seg := range []string{"_alias", "_aliases"} {
		s.handle("PUT /{index}/"+seg+"/{name}", s.handlePutAlias, aliasParams...)
		s.handle("POST /{index}/"+seg+"/{name}", s.handlePutAlias, aliasParams...)
		s.handle("DELETE /{index}/"+seg+"/{name}", s.handleDeleteAlias, aliasParams...)
	}
	s.handle("GET /_alias", s.handleGetAlias, aliasReadParams...)
	s.handle("GET /{index}/_alias", s.handleGetAlias, aliasReadParams...)
	// GET /_alias/{name} would conflict with every GET /{index}/_x
	// pattern in net/http's mux: handleNoRoute serves it.
	s.handle("GET /{index}/_alias/{name}", s.handleGetAlias, aliasReadParams...)
	s.handle("POST /_aliases", s.handleUpdateAliases, aliasParams...)
}

// documentRoutes registers the single-document APIs: index, create, get,
// _source, delete and update of one document by ID.
func (s *Server) documentRoutes() {
	docParams := []string{"refresh", "routing", "timeout", "op_type", "require_alias", "wait_for_active_shards", "if_seq_no", "if_primary_term", "version", "version_type"}
	s.handle("PUT /{index}/_doc/{id}", s.handleIndexDoc, docParams...)
	s.handle("POST /{index}/_doc/{id}", s.handleIndexDoc, docParams...)
	s.handle("POST /{index}/_doc", s.handleIndexDoc, docParams...)
	s.handle("PUT /{index}/_create/{id}", s.handleIndexDoc, docParams...)
	s.handle("POST /{index}/_create/{id}", s.handleIndexDoc, docParams...)
	getParams := []string{"routing", "realtime", "refresh", "preference", "_source", "stored_fields", "_source_includes", "_source_excludes", "version", "version_type"}
	s.handle("GET /{index}/_doc/{id}", s.handleGetDoc, getParams...)
	s.handle("GET /{index}/_source/{id}", s.handleGetSource, getParams...)
	s.handle("DELETE /{index}/_doc/{id}", s.handleDeleteDoc, "refresh", "routing", "timeout", "wait_for_active_shards", "if_seq_no", "if_primary_term", "version", "version_type")
	s.handle("POST /{index}/_update/{id}", s.handleUpdate, "refresh", "routing", "timeout", "retry_on_conflict", "require_alias", "wait_for_active_shards", "if_seq_no", "if_primary_term",
		"_source", "_source_includes", "_source_excludes")
}

// multiDocumentRoutes registers the APIs that read or write many
// documents in one request: _mget, _bulk, _delete_by_query,
// _update_by_query and _reindex.
func (s *Server) multiDocumentRoutes() {
	mgetParams := []string{"routing", "realtime", "refresh", "preference", "_source", "stored_fields", "_source_includes", "_source_excludes"}
	for _, m := range []string{"GET", "POST"} {
		s.handle(m+" /_mget", s.handleMget, mgetParams...)
		s.handle(m+" /{index}/_mget", s.handleMget, mgetParams...)
	}

	bulkParams := []string{"refresh", "routing", "timeout", "require_alias", "wait_for_active_shards"}
	s.handle("POST /_bulk", s.handleBulk, bulkParams...)
	s.handle("PUT /_bulk", s.handleBulk, bulkParams...)
	s.handle("POST /{index}/_bulk", s.handleBulk, bulkParams...)
	s.handle("PUT /{index}/_bulk", s.handleBulk, bulkParams...)

	s.handle("POST /{index}/_delete_by_query", s.handleDeleteByQuery, byQueryParams...)
	s.handle("POST /{index}/_update_by_query", s.handleUpdateByQuery, byQueryParams...)
	s.handle("POST /_reindex", s.handleReindex, "refresh", "timeout", "wait_for_active_shards", "wait_for_completion", "requests_per_second", "scroll", "slices", "max_docs", "require_alias")
}

// searchRoutes registers the search APIs: _search, _count, _msearch,
// scrolls and points in time.
func (s *Server) searchRoutes() {
	// Search endpoints hand their parameters to the DSL translator, which
	// rejects the ones it does not know.
	s.handle("GET /_search", s.handleSearch)
	s.handle("POST /_search", s.handleSearch)
	s.handle("GET /{index}/_search", s.handleSearch)
	s.handle("POST /{index}/_search", s.handleSearch)
	s.handle("GET /_count", s.handleCount)
	s.handle("POST /_count", s.handleCount)
	s.handle("GET /{index}/_count", s.handleCount)
	s.handle("POST /{index}/_count", s.handleCount)
	msearchParams := []string{"max_concurrent_searches", "search_type", "ccs_minimize_roundtrips", "rest_total_hits_as_int", "typed_keys", "max_concurrent_shard_requests", "pre_filter_shard_size",
		"ignore_unavailable", "allow_no_indices", "expand_wildcards", "ignore_throttled", "include_named_queries_score", "allow_partial_search_results", "routing"}
	s.handle("GET /_msearch", s.handleMsearch, msearchParams...)
	s.handle("POST /_msearch", s.handleMsearch, msearchParams...)
	s.handle("GET /{index}/_msearch", s.handleMsearch, msearchParams...)
	s.handle("POST /{index}/_msearch", s.handleMsearch, msearchParams...)
	scrollParams := []string{"scroll", "scroll_id", "rest_total_hits_as_int"}
	s.handle("GET /_search/scroll", s.handleScroll, scrollParams...)
	s.handle("POST /_search/scroll", s.handleScroll, scrollParams...)
	s.handle("GET /_search/scroll/{scroll_id}", s.handleScroll, scrollParams...)
	s.handle("POST /_search/scroll/{scroll_id}", s.handleScroll, scrollParams...)
	s.handle("DELETE /_search/scroll", s.handleClearScroll, noParams...)
	s.handle("DELETE /_search/scroll/{scroll_id}", s.handleClearScroll, noParams...)
	s.handle("POST /{index}/_pit", s.handleOpenPIT, "keep_alive", "ignore_unavailable", "allow_no_indices", "expand_wildcards", "preference", "routing", "allow_partial_search_results")
	s.handle("DELETE /_pit", s.handleClosePIT, noParams...)
}

// inspectRoutes registers the endpoints that look at mappings, analyzers
// and queries rather than documents: _analyze, _field_caps,
// _validate/query and _explain, each under GET and POST.
func (s *Server) inspectRoutes() {
	for _, m := range []string{"GET", "POST"} {
		s.handle(m+" /_analyze", s.handleAnalyze, "analyzer", "field", "text", "index")
		s.handle(m+" /{index}/_analyze", s.handleAnalyze, "analyzer", "field", "text", "index")
		fcParams := []string{"fields", "include_unmapped", "ignore_unavailable", "allow_no_indices", "expand_wildcards", "filters", "types", "include_empty_fields"}
		s.handle(m+" /_field_caps", s.handleFieldCaps, fcParams...)
		s.handle(m+" /{index}/_field_caps", s.handleFieldCaps, fcParams...)
		vqParams := []string{"explain", "rewrite", "all_shards", "q", "df", "default_operator", "analyzer", "analyze_wildcard", "lenient", "ignore_unavailable", "allow_no_indices", "expand_wildcards"}
		s.handle(m+" /_validate/query", s.handleValidateQuery, vqParams...)
		s.handle(m+" /{index}/_validate/query", s.handleValidateQuery, vqParams...)
		s.handle(m+" /{index}/_explain/{id}", s.handleExplain, "routing", "preference", "stored_fields", "_source", "lenient", "q", "df", "analyzer", "analyze_wildcard", "default_operator")
	}
}

// statsRoutes registers the index and node statistics: _stats and
// _nodes/stats. GET /_stats/{metric} is served by handleNoRoute (see
// there).
func (s *Server) statsRoutes() {
	s.handle("GET /_stats", s.handleIndicesStats, statsParams...)
	s.handle("GET /{index}/_stats", s.handleIndicesStats, statsParams...)
	s.handle("GET /{index}/_stats/{metric}", s.handleIndicesStats, statsParams...)
	// GET /_stats/{metric} would conflict with every GET /{index}/_x
	// pattern in net/http's mux: handleNoRoute serves it.
	s.handle("GET /_nodes/stats", s.handleNodesStats, "timeout")
	s.handle("GET /_nodes/stats/{metric}", s.handleNodesStats, "timeout")
}

// clusterRoutes registers the cluster APIs: health, nodes, state,
// reroute and cluster settings. GET /_nodes/{node_id} is served by
// handleNoRoute (see there).
func (s *Server) clusterRoutes() {
	healthParams := []string{"wait_for_status", "wait_for_nodes", "timeout", "master_timeout", "local", "level", "wait_for_active_shards", "wait_for_no_relocating_shards", "wait_for_no_initializing_shards", "wait_for_events"}
	s.handle("GET /_cluster/health", s.handleClusterHealth, healthParams...)
	s.handle("GET /_cluster/health/{index}", s.handleClusterHealth, healthParams...)
	s.handle("GET /_nodes", s.handleNodes, "timeout")
	// GET /_nodes/{node_id} would conflict with every GET /{index}/_x
	// pattern in net/http's mux: handleNoRoute serves it.
	s.handle("GET /_cluster/state", s.handleClusterState, "local", "master_timeout")
	s.handle("POST /_cluster/reroute", s.handleReroute, "dry_run", "explain", "retry_failed", "metric", "master_timeout", "timeout")
	s.handle("GET /_cluster/settings", s.handleGetClusterSettings, "flat_settings", "include_defaults", "master_timeout", "timeout")
	s.handle("PUT /_cluster/settings", s.handlePutClusterSettings, "flat_settings", "master_timeout", "timeout")
}

// catRoutes registers the _cat endpoints; all take writeCat's parameters
// (v, format, h, help, s, bytes) besides their own.
func (s *Server) catRoutes() {
	catParams := []string{"v", "format", "h", "help", "s", "bytes", "local", "master_timeout"}
	s.handle("GET /_cat/indices", s.handleCatIndices, append(catParams, "health", "expand_wildcards", "pri")...)
	s.handle("GET /_cat/indices/{index}", s.handleCatIndices, append(catParams, "health", "expand_wildcards", "pri")...)
	s.handle("GET /_cat/health", s.handleCatHealth, catParams...)
	s.handle("GET /_cat/count", s.handleCatCount, catParams...)
	s.handle("GET /_cat/count/{index}", s.handleCatCount, catParams...)
	s.handle("GET /_cat/aliases", s.handleCatAliases, append(catParams, "expand_wildcards")...)
	s.handle("GET /_cat/aliases/{name}", s.handleCatAliases, append(catParams, "expand_wildcards")...)
	s.handle("GET /_cat/nodes", s.handleCatNodes, append(catParams, "full_id")...)
	s.handle("GET /_cat/allocation", s.handleCatAllocation, append(catParams, "bytes")...)
	s.handle("GET /_cat/allocation/{node}", s.handleCatAllocation, append(catParams, "bytes")...)
	s.handle("GET /_cat/shards", s.handleCatShards, catParams...)
	s.handle("GET /_cat/shards/{index}", s.handleCatShards, catParams...)
	s.handle("GET /_cat/recovery", s.handleCatRecovery, append(catParams, "active_only", "detailed")...)
	s.handle("GET /_cat/recovery/{index}", s.handleCatRecovery, append(catParams, "active_only", "detailed")...)
}

// weftRoutes registers what Weft serves beyond Elasticsearch's API: the
// /_weft diagnostics (fabric devices and connections, Raft status),
// Prometheus /metrics, and net/http/pprof when Config.EnablePprof is set.
func (s *Server) weftRoutes() {
	s.handle("GET /_weft/fabric/devices", s.handleFabricDevices, noParams...)
	s.handle("GET /_weft/fabric/conns", s.handleFabricConns, noParams...)
	s.handle("GET /_weft/raft", s.handleRaft, noParams...)

	s.guarded("GET /metrics", promhttp.HandlerFor(s.gather, promhttp.HandlerOpts{}))
	if s.cfg.EnablePprof {
		s.guarded("GET /debug/pprof/", http.HandlerFunc(pprof.Index))
		s.guarded("GET /debug/pprof/cmdline", http.HandlerFunc(pprof.Cmdline))
		s.guarded("GET /debug/pprof/profile", http.HandlerFunc(pprof.Profile))
		s.guarded("GET /debug/pprof/symbol", http.HandlerFunc(pprof.Symbol))
		s.guarded("POST /debug/pprof/symbol", http.HandlerFunc(pprof.Symbol))
		s.guarded("GET /debug/pprof/trace", http.HandlerFunc(pprof.Trace))
	}
}

// serveUnrouted runs h for a path handleNoRoute recognised, checking its
// parameters and authorizing it by pattern's rule as handle does.
func (s *Server) serveUnrouted(w http.ResponseWriter, r *http.Request, pattern string, h handlerFunc, params ...string) {
	allowed := map[string]bool{"pretty": true, "human": true, "error_trace": true, "filter_path": true}
	for _, p := range params {
		allowed[p] = true
	}
	for p := range r.URL.Query() {
		if !allowed[p] {
			s.fail(w, r, illegalArgument("request [%s] contains unrecognized parameter: [%s]", r.URL.Path, p))
			return
		}
	}
	rule, ok := routeRules[pattern]
	if !ok {
		s.fail(w, r, fmt.Errorf("httpapi: no authorization rule for %s", pattern))
		return
	}
	s.serveRule(w, r, rule, h)
}

// handleNoRoute answers paths no endpoint serves (400, as Elasticsearch
// does) and known paths asked with the wrong method (405 with the methods
// that would work).
func (s *Server) handleNoRoute(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/_nodes/"); ok && r.Method == http.MethodGet && rest != "" {
		// GET /_nodes/{node_id or metrics}[/{metrics}] (the mux cannot
		// route a wildcard beside /_nodes/stats).
		parts := strings.Split(rest, "/")
		if parts[0] != "" && len(parts) >= 2 && len(parts) <= 3 && parts[1] == "stats" && (len(parts) == 2 || parts[2] != "") {
			// GET /_nodes/{node_id}/stats[/{metric}]
			r.SetPathValue("node_id", parts[0])
			if len(parts) == 3 {
				r.SetPathValue("metric", parts[2])
			}
			s.serveUnrouted(w, r, "GET /_nodes/stats", s.handleNodesStats, "timeout")
			return
		}
		if len(parts) <= 2 && parts[0] != "" && (len(parts) == 1 || (parts[1] != "" && parts[1] != "stats")) {
			r.SetPathValue("node_id", parts[0])
			if len(parts) == 2 {
				r.SetPathValue("metric", parts[1])
			}
			s.serveUnrouted(w, r, "GET /_nodes/{node_id}", s.handleNodes, "timeout")
			return
		}
	}
	if metric, ok := strings.CutPrefix(r.URL.Path, "/_stats/"); ok && r.Method == http.MethodGet && metric != "" && !strings.Contains(metric, "/") {
		r.SetPathValue("metric", metric)
		s.serveUnrouted(w, r, "GET /_stats/{metric}", s.handleIndicesStats, statsParams...)
		return
	}
	if name, ok := strings.CutPrefix(r.URL.Path, "/_alias/"); ok && (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		name != "" && !strings.Contains(name, "/") {
		r.SetPathValue("name", name)
		s.serveUnrouted(w, r, "GET /_alias/{name}", s.handleGetAlias, aliasReadParams...)
		return
	}
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete} {
		probe := r.Clone(context.Background())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "/" && pattern != "" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) > 0 {
		s.fail(w, r, &apiError{Status: http.StatusMethodNotAllowed, Type: "method_not_allowed",
			Reason: fmt.Sprintf("Incorrect HTTP method for uri [%s] and method [%s], allowed: %v", r.URL.Path, r.Method, allowed)})
		return
	}
	s.fail(w, r, badRequest("no_handler_found", "no handler found for uri [%s] and method [%s]", r.URL.Path, r.Method))
}
