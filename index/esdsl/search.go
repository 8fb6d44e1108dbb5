package esdsl

import (
	"encoding/json"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/numeric"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/weftsearch/weft/index"
	"github.com/weftsearch/weft/index/scoring"
)

// MaxResultWindow is Elasticsearch's index.max_result_window default: from +
// size above it is refused, as Elasticsearch does.
const MaxResultWindow = 10000

// defaultTrackTotalHits is Elasticsearch's default: totals are exact up to
// 10,000 and reported as a lower bound above.
const defaultTrackTotalHits = 10000

// Search is one translated search request: the bleve request to run plus
// what Response needs to shape the answer. A Search is built by ParseSearch
// or ParseScroll, read-only afterwards and safe to use from one goroutine;
// the caller may adjust Request (for example to add an index filter) before
// running it.
type Search struct {
	// Request is the bleve request to run. It asks for the stored
	// index.SourceField when the response needs _source or highlights.
	Request *bleve.SearchRequest
	// Timeout is the request's "timeout" (0 when none was given); the
	// caller bounds the search's context with it.
	Timeout time.Duration
	// Scroll is the keep-alive of a scroll search (0 when not scrolling).
	Scroll time.Duration

	source      sourceFilter
	highlight   *highlightSpec
	trackTotal  int64 // -1 exact, -2 off, else the limit
	sorts       []sortSpec
	scoreSorted bool // hits are ordered by _score (or unsorted)
	trackScores bool
	minScore    bool // min_score filters the hits by score
	aggs        *aggTree
	typedKeys   bool
	totalAsInt  bool
	// For scroll ids: the request as the client sent it.
	body   []byte
	params url.Values
	// scrollPage is >0 on scroll continuations: aggregations are not
	// repeated after the first page.
	scrollPage int
	// hiddenSorts is the tiebreak added for scrolling, not shown in hits.
	hiddenSorts []sortSpec
	// after is the raw search_after of a scroll continuation.
	after [][]byte
	// now is the instant date math ("now-1d") was resolved against; scroll
	// pages keep the first page's.
	now time.Time
	// count: built by ParseCount (a _count request).
	count bool
	// named are the queries given a _name, in the order met.
	named []namedQuery
	// postFilter is the request's post_filter (nil when none): the hits
	// and the total are of the documents that match it too, the
	// aggregations of every document the query matches.
	postFilter query.Query
	// noID: stored_fields "_none_" hides hits' _id.
	noID bool
	// scope is what the indices searched added to the request.
	scope Scope
	// fields is the mapping the request was translated against (its
	// SourcePolicy, if any, shapes sources in replies).
	fields Fields
	// fetch are the fields hits return values of.
	fetch fetchSpec
	// version and seqNo: hits show _version, and _seq_no with
	// _primary_term.
	version, seqNo bool
	// pit is the point in time searched ("" when none), pitKeep the
	// keep-alive the search extends it to (0: its own).
	pit     string
	pitKeep time.Duration
}

// Routing returns the request's routing values (the routing parameter,
// comma-separated); a search with some reaches only the shards they route
// to. Nil when there are none.
func (s *Search) Routing() []string {
	return splitList(s.params.Get("routing"))
}

// ScoresUsed reports whether the response depends on the hits' scores:
// hits are sorted by or show _score, min_score filters by it, explain
// explains it, or a top_hits aggregation sorts by or shows it. When it does
// not, a search over several shards needs no global statistics: each
// shard's own select and order the same hits, totals and aggregations.
func (s *Search) ScoresUsed() bool {
	if s.minScore || s.Request.Explain || s.aggs.usesScores() {
		return true
	}
	return s.Request.Size > 0 && (s.scoreSorted || s.trackScores)
}

// PointInTime returns the id of the point in time the search runs on ("" for
// none) and the keep-alive it extends it to (0: unchanged).
func (s *Search) PointInTime() (string, time.Duration) { return s.pit, s.pitKeep }

// SetPointInTime makes s search a point in time (a scroll's pages).
func (s *Search) SetPointInTime(id string, keep time.Duration) { s.pit, s.pitKeep = id, keep }

// AllowPartial reports whether the request accepts results that miss
// shards (allow_partial_search_results; def when it does not say).
func (s *Search) AllowPartial(def bool) bool {
	if v, err := optParamBool(s.params, "allow_partial_search_results"); err == nil && s.params.Has("allow_partial_search_results") {
		return v
	}
	return def
}

// NamedQuery is a query of the request given a "_name".
type NamedQuery struct {
	Name  string
	Query query.Query
}

// NamedQueries are the request's named queries, in the order they appear;
// each hit of the final page reports the ones it matches in
// matched_queries (see index.MatchedQueriesField).
func (s *Search) NamedQueries() []NamedQuery {
	out := make([]NamedQuery, len(s.named))
	for k, n := range s.named {
		out[k] = NamedQuery{Name: n.name, Query: n.q}
	}
	return out
}

type sortKind int

const (
	sortScore sortKind = iota
	sortID
	sortNumber
	sortDate
	sortString
	sortBool
)

type sortSpec struct {
	kind     sortKind
	field    string
	desc     bool
	integral bool
}

// ParseSearch translates an Elasticsearch _search request — body (may be
// empty) and URL parameters — into a Search. fields describes the mapping
// of the indices searched. Every error is an *Error of kind
// ErrInvalidRequest.
func ParseSearch(body []byte, params url.Values, fields Fields) (*Search, error) {
	return Scope{}.ParseSearch(body, params, fields)
}

var searchBodyKeys = map[string]bool{
	"query": true, "from": true, "size": true, "sort": true, "_source": true, "highlight": true,
	"track_total_hits": true, "search_after": true, "explain": true, "aggs": true, "aggregations": true,
	"timeout": true, "track_scores": true, "version": true, "seq_no_primary_term": true, "profile": true,
	"stored_fields": true, "min_score": true, "fields": true, "docvalue_fields": true, "pit": true,
	"post_filter": true,
}

var unsupportedBodyKeys = map[string]string{
	"terminate_after": "", "collapse": "", "rescore": "",
	"suggest": "", "script_fields": "",
	"indices_boost": "", "runtime_mappings": "", "knn": "", "rank": "", "retriever": "",
	"slice": "", "stats": "", "ext": "", "sub_searches": "",
}

var searchParams = map[string]bool{
	"q": true, "df": true, "default_operator": true, "analyzer": true, "analyze_wildcard": true,
	"lenient": true, "from": true, "size": true, "sort": true, "_source": true,
	"_source_includes": true, "_source_excludes": true, "_source_include": true, "_source_exclude": true,
	"track_total_hits": true, "track_scores": true, "scroll": true, "explain": true, "timeout": true,
	"search_type": true, "typed_keys": true, "rest_total_hits_as_int": true, "allow_no_indices": true,
	"expand_wildcards": true, "ignore_unavailable": true, "ignore_throttled": true, "preference": true,
	"routing": true, "request_cache": true, "batched_reduce_size": true,
	"max_concurrent_shard_requests": true, "pre_filter_shard_size": true, "ccs_minimize_roundtrips": true,
	"allow_partial_search_results": true, "pretty": true, "human": true, "error_trace": true,
	"filter_path": true, "version": true, "seq_no_primary_term": true, "source": true,
	"source_content_type": true, "include_named_queries_score": true, "stored_fields": true, "min_score": true,
	"docvalue_fields": true,
}

// parseSearchAt is ParseSearch with date math resolved against now and the
// request restricted by sc. It runs the steps below in order and stops at
// the first that fails, so of a request's several faults the earliest
// step's is the one reported; the order is part of the behaviour.
func parseSearchAt(body []byte, params url.Values, fields Fields, now time.Time, sc Scope) (*Search, error) {
	o, err := parseBody(body)
	if err != nil {
		return nil, err
	}
	if err := checkSearchKeys(o, params); err != nil {
		return nil, err
	}
	t := &translator{fields: fields, now: now, scope: sc}
	s := &Search{trackTotal: defaultTrackTotalHits, scoreSorted: true, body: body, params: params, now: now, scope: sc, fields: fields}
	q, err := s.parseQuery(o, params, t)
	if err != nil {
		return nil, err
	}
	if err := s.parsePostFilter(o, t); err != nil {
		return nil, err
	}
	from, size, err := parseWindow(o, params, sc)
	if err != nil {
		return nil, err
	}
	explain, err := boolOption(o, params, "explain", false)
	if err != nil {
		return nil, err
	}
	s.Request = bleve.NewSearchRequestOptions(q, size, from, explain)
	if err := s.parseHitMetadata(o, params); err != nil {
		return nil, err
	}
	if raw, ok := o["pit"]; ok {
		if err := s.parsePIT(raw); err != nil {
			return nil, err
		}
	}
	if err := s.parseTimeout(o, params); err != nil {
		return nil, err
	}
	if err := s.parseScrollParam(params, from, size); err != nil {
		return nil, err
	}
	if err := s.parseReplyParams(params); err != nil {
		return nil, err
	}
	if err := s.parseSorting(o, params, t); err != nil {
		return nil, err
	}
	if err := s.parseContinuation(o, from); err != nil {
		return nil, err
	}
	if err := s.parseTotalHits(o, params); err != nil {
		return nil, err
	}
	if err := s.parseSourceAndStored(o, params); err != nil {
		return nil, err
	}
	if err := s.parseFetchFields(o, params, fields); err != nil {
		return nil, err
	}
	if err := s.parseHighlightKey(o); err != nil {
		return nil, err
	}
	s.setLoadedFields()
	if err := s.parseAggregations(o, t); err != nil {
		return nil, err
	}
	if err := s.Request.Validate(); err != nil {
		return nil, argErr("invalid search request: %v", err)
	}
	return s, nil
}

// checkSearchKeys refuses, in sorted order, a URL parameter _search does not
// know, then a body key this node does not support or does not know.
func checkSearchKeys(o object, params url.Values) error {
	for _, k := range sortedParamKeys(params) {
		if !searchParams[k] {
			return argErr("request [/_search] contains unrecognized parameter: [%s]", k)
		}
	}
	for _, k := range o.sortedKeys() {
		if _, ok := unsupportedBodyKeys[k]; ok {
			return argErr("[%s] is not supported by this node; remove it from the request", k)
		}
		if !searchBodyKeys[k] {
			return parsingErr("Unknown key [%s] in the search request; supported: query, from, size, sort, _source, highlight, track_total_hits, search_after, explain, aggs, timeout, track_scores", k)
		}
	}
	return nil
}

// parseQuery returns the query to run: the body's "query" (match_all when
// absent), replaced by the URL's q as in Elasticsearch, restricted by the
// scope's alias filter and wrapped by min_score. It records the request's
// named queries and whether min_score applies in s, and refuses
// include_named_queries_score.
func (s *Search) parseQuery(o object, params url.Values, t *translator) (query.Query, error) {
	var q query.Query = query.NewMatchAllQuery()
	var err error
	if raw, ok := o["query"]; ok {
		if q, err = t.query(raw, "query"); err != nil {
			return nil, err
		}
	}
	if params.Has("q") {
		if q, err = t.urlQueryString(params); err != nil {
			return nil, err
		}
	}
	if q, err = t.scoped(q); err != nil {
		return nil, err
	}
	s.named = t.named
	if q, err = withMinScore(q, o["min_score"], params); err != nil {
		return nil, err
	}
	_, s.minScore = q.(*scoring.MinScore)
	if v, _ := optParamBool(params, "include_named_queries_score"); v {
		return nil, argErr("[include_named_queries_score] is not supported by this node; matched_queries lists the names only")
	}
	return q, nil
}

// parsePostFilter reads post_filter: a query the hits must match as well,
// applied after the aggregations saw the query's documents (a faceted UI
// filters the hits by the facet clicked, while the facets still count
// every document). It is tested unscored: hits keep the query's scores.
// Its named queries join the request's.
func (s *Search) parsePostFilter(o object, t *translator) error {
	raw, ok := o["post_filter"]
	if !ok {
		return nil
	}
	q, err := t.query(raw, "post_filter")
	if err != nil {
		return err
	}
	s.postFilter = q
	s.named = t.named
	return nil
}

// PostFilter is the request's post_filter, nil when it has none: the
// shards' searches keep the hits (and count the total) of the documents
// that match it too, while the aggregations see every document the query
// matches (index.Index.SearchCollect's post).
func (s *Search) PostFilter() query.Query { return s.postFilter }

// parseWindow returns the page of hits asked for: from (default 0) and size
// (default 10), each from the body and overridden by the URL. It reads the
// body's from and size before the URL's, then refuses a negative from or
// size and a window (from + size) over the scope's max_result_window.
func parseWindow(o object, params url.Values, sc Scope) (from, size int, err error) {
	from, size = 0, 10
	if raw, ok := o["from"]; ok {
		if from, err = asInt(raw, "from"); err != nil {
			return 0, 0, err
		}
	}
	if raw, ok := o["size"]; ok {
		if size, err = asInt(raw, "size"); err != nil {
			return 0, 0, err
		}
	}
	if v := params.Get("from"); params.Has("from") {
		if from, err = paramInt(v, "from"); err != nil {
			return 0, 0, err
		}
	}
	if v := params.Get("size"); params.Has("size") {
		if size, err = paramInt(v, "size"); err != nil {
			return 0, 0, err
		}
	}
	if from < 0 {
		return 0, 0, argErr("[from] parameter cannot be negative, found [%d]", from)
	}
	if size < 0 {
		return 0, 0, argErr("[size] parameter cannot be negative, found [%d]", size)
	}
	if from+size > sc.maxResultWindow() {
		return 0, 0, argErr("Result window is too large, from + size must be less than or equal to: [%d] but was [%d]. See the scroll API or search_after for a more efficient way to request large data sets. This limit can be set by changing the [index.max_result_window] index level setting.", sc.maxResultWindow(), from+size)
	}
	return from, size, nil
}

// boolOption reads the boolean option key: the body's value, overridden by
// the URL parameter of the same name; def when neither gives it. The body's
// value is checked even when the URL overrides it.
func boolOption(o object, params url.Values, key string, def bool) (bool, error) {
	v := def
	var err error
	if raw, ok := o[key]; ok {
		if v, err = asBool(raw, key); err != nil {
			return false, err
		}
	}
	if params.Has(key) {
		if v, err = paramBool(params.Get(key), key); err != nil {
			return false, err
		}
	}
	return v, nil
}

// parseHitMetadata reads what hits show beside their source: version
// (_version) and seq_no_primary_term (_seq_no, _primary_term). It refuses
// profile true, which this node cannot answer.
func (s *Search) parseHitMetadata(o object, params url.Values) error {
	var err error
	if s.version, err = boolOption(o, params, "version", false); err != nil {
		return err
	}
	if s.seqNo, err = boolOption(o, params, "seq_no_primary_term", false); err != nil {
		return err
	}
	profile, err := boolOption(o, params, "profile", false)
	if err != nil {
		return err
	}
	if profile {
		return argErr("[%s] true is not supported by this node; drop it", "profile")
	}
	return nil
}

// parseTimeout sets s.Timeout from the body's "timeout", overridden by the
// URL parameter.
func (s *Search) parseTimeout(o object, params url.Values) error {
	if raw, ok := o["timeout"]; ok {
		str, err := asString(raw, "timeout")
		if err != nil {
			return err
		}
		if s.Timeout, err = parseDuration(str, "timeout"); err != nil {
			return err
		}
	}
	if params.Has("timeout") {
		var err error
		if s.Timeout, err = parseDuration(params.Get("timeout"), "timeout"); err != nil {
			return err
		}
	}
	return nil
}

// parseScrollParam sets s.Scroll from the URL's scroll keep-alive and
// refuses what a scroll context cannot take: a point in time (so s.pit must
// be read first), a keep-alive that is not positive, a from, a size of 0 and
// request_cache.
func (s *Search) parseScrollParam(params url.Values, from, size int) error {
	if !params.Has("scroll") {
		return nil
	}
	if s.pit != "" {
		return argErr("using [point in time] is not allowed in a scroll context")
	}
	var err error
	if s.Scroll, err = parseDuration(params.Get("scroll"), "scroll"); err != nil {
		return err
	}
	if s.Scroll <= 0 {
		return argErr("[scroll] keep-alive must be positive, got [%s]", params.Get("scroll"))
	}
	if from > 0 {
		return argErr("using [from] is not allowed in a scroll context")
	}
	if size == 0 {
		return argErr("[size] cannot be [0] in a scroll context")
	}
	if v, _ := optParamBool(params, "request_cache"); v {
		return argErr("[request_cache] cannot be used in a scroll context")
	}
	return nil
}

// parseReplyParams refuses a search_type other than query_then_fetch and
// dfs_query_then_fetch, and reads the URL parameters that shape the reply:
// typed_keys and rest_total_hits_as_int.
func (s *Search) parseReplyParams(params url.Values) error {
	if st := params.Get("search_type"); st != "" && st != "query_then_fetch" && st != "dfs_query_then_fetch" {
		return argErr("search_type [%s] is not supported; use query_then_fetch or dfs_query_then_fetch", st)
	}
	var err error
	if s.typedKeys, err = optParamBool(params, "typed_keys"); err != nil {
		return err
	}
	if s.totalAsInt, err = optParamBool(params, "rest_total_hits_as_int"); err != nil {
		return err
	}
	return nil
}

// parseSorting sets the hits' order from the body's "sort", replaced by the
// URL's sort ("field:order,..."), and track_scores (scores computed even
// when the hits are not sorted by them; on when a sort names _score, unless
// the request says otherwise).
func (s *Search) parseSorting(o object, params url.Values, t *translator) error {
	sortRaw, err := sortEntries(o, params)
	if err != nil {
		return err
	}
	if len(sortRaw) > 0 {
		if err := s.parseSort(sortRaw, t); err != nil {
			return err
		}
	}
	// A sort on _score has set trackScores; the request's track_scores,
	// when given, decides.
	s.trackScores, err = boolOption(o, params, "track_scores", s.trackScores)
	return err
}

// sortEntries returns the sort entries of the request in the body's JSON
// form: the body's "sort" (one entry or an array; checked even when the URL
// overrides it), or the URL's sort with each "field" or "field:order" turned
// into "field" or {"field":"order"}. Nil when the request does not sort.
func sortEntries(o object, params url.Values) ([]json.RawMessage, error) {
	var sortRaw []json.RawMessage
	if raw, ok := o["sort"]; ok {
		var err error
		if sortRaw, err = asArray(raw, "sort", true); err != nil {
			return nil, err
		}
	}
	if params.Has("sort") {
		sortRaw = nil
		for _, part := range strings.Split(params.Get("sort"), ",") {
			if part = strings.TrimSpace(part); part == "" {
				continue
			}
			name, order, _ := strings.Cut(part, ":")
			if order == "" {
				sortRaw = append(sortRaw, jsonString(name))
			} else {
				sortRaw = append(sortRaw, json.RawMessage(`{`+string(jsonString(name))+`:`+string(jsonString(order))+`}`))
			}
		}
	}
	return sortRaw, nil
}

// parseContinuation reads where the page resumes: the body's search_after
// (refused in a scroll context, so s.Scroll must be read first; the sorts
// must be too, as it gives one value per sort). A scroll search gets the
// hidden tiebreak its later pages resume from instead.
func (s *Search) parseContinuation(o object, from int) error {
	if raw, ok := o["search_after"]; ok {
		if s.Scroll > 0 {
			return argErr("[search_after] cannot be used in a scroll context")
		}
		if err := s.parseSearchAfter(raw, from); err != nil {
			return err
		}
	}
	if s.Scroll > 0 {
		s.ensureTiebreak()
	}
	return nil
}

// parseTotalHits sets how exactly the total is counted from the body's
// track_total_hits, overridden by the URL parameter. rest_total_hits_as_int
// (read before) needs an exact total: it implies track_total_hits true, and
// refuses a limit given with it, as Elasticsearch does.
func (s *Search) parseTotalHits(o object, params url.Values) error {
	trackGiven := false
	if raw, ok := o["track_total_hits"]; ok {
		str, err := asScalarString(raw, "track_total_hits")
		if err != nil {
			return err
		}
		if s.trackTotal, err = parseTrackTotal(str); err != nil {
			return err
		}
		trackGiven = true
	}
	if params.Has("track_total_hits") {
		var err error
		if s.trackTotal, err = parseTrackTotal(params.Get("track_total_hits")); err != nil {
			return err
		}
		trackGiven = true
	}
	if s.totalAsInt && s.trackTotal >= 0 {
		if trackGiven {
			return argErr("[rest_total_hits_as_int] cannot be used if the tracking of total hits is not accurate, got %d", s.trackTotal)
		}
		s.trackTotal = -1
	}
	return nil
}

// parseSourceAndStored reads what of each hit's source is returned: the
// _source filter (body or URL), then stored_fields, the fields mapped with
// store: true (their values from _source). As in Elasticsearch, a
// stored_fields list turns _source off unless _source is asked for too, and
// "_none_" (alone) hides _id as well.
func (s *Search) parseSourceAndStored(o object, params url.Values) error {
	var err error
	if s.source, err = parseSourceFilter(o["_source"], params); err != nil {
		return err
	}
	var stored []string
	if raw, ok := o["stored_fields"]; ok {
		if stored, err = stringList(raw, "stored_fields"); err != nil {
			return err
		}
		if stored == nil {
			stored = []string{}
		}
	}
	if params.Has("stored_fields") {
		stored = splitList(params.Get("stored_fields"))
	}
	if stored == nil {
		return nil
	}
	for _, f := range stored {
		if f == "_none_" && len(stored) > 1 {
			return argErr("[stored_fields] cannot list _none_ together with fields")
		}
	}
	_, srcGiven := o["_source"]
	srcGiven = srcGiven || params.Has("_source") || params.Has("_source_includes") || params.Has("_source_excludes")
	if !srcGiven {
		s.source = sourceFilter{disabled: true}
	}
	if len(stored) == 1 && stored[0] == "_none_" {
		if srcGiven && !s.source.disabled {
			return argErr("[stored_fields] _none_ cannot be used with _source; drop one")
		}
		s.source, s.noID = sourceFilter{disabled: true}, true
	} else {
		s.fetch.stored = stored
	}
	return nil
}

// parseFetchFields reads the fields hits return values of: the body's
// "fields" and docvalue_fields (the latter overridden by the URL), and
// refuses docvalue_fields the mapping cannot answer.
func (s *Search) parseFetchFields(o object, params url.Values, fields Fields) error {
	var err error
	if raw, ok := o["fields"]; ok {
		if s.fetch.fields, err = parseFieldList(raw, "fields"); err != nil {
			return err
		}
	}
	if raw, ok := o["docvalue_fields"]; ok {
		if s.fetch.docvalue, err = parseFieldList(raw, "docvalue_fields"); err != nil {
			return err
		}
	}
	if params.Has("docvalue_fields") {
		s.fetch.docvalue = splitList(params.Get("docvalue_fields"))
	}
	return checkDocvalue(fields, s.fetch.docvalue)
}

// parseHighlightKey reads the body's "highlight"; a highlighting request
// asks bleve for term locations.
func (s *Search) parseHighlightKey(o object) error {
	raw, ok := o["highlight"]
	if !ok {
		return nil
	}
	var err error
	if s.highlight, err = parseHighlight(raw); err != nil {
		return err
	}
	s.Request.IncludeLocations = true
	return nil
}

// setLoadedFields asks bleve for the stored fields the reply is built from:
// index.SourceField when the hits show their source, highlights or fetched
// fields, and index.MetaField when they show _version or _seq_no. It runs
// after every step that decides those.
func (s *Search) setLoadedFields() {
	if !s.source.disabled || s.highlight != nil || !s.fetch.empty() {
		s.Request.Fields = []string{index.SourceField}
	}
	if s.version || s.seqNo {
		s.Request.Fields = append(s.Request.Fields, index.MetaField)
	}
}

// parseAggregations reads the body's aggregations, given as "aggs" or
// "aggregations" but not both.
func (s *Search) parseAggregations(o object, t *translator) error {
	aggRaw, hasAggs := o["aggs"]
	if a2, ok := o["aggregations"]; ok {
		if hasAggs {
			return parsingErr("found two aggregation definitions: [aggs] and [aggregations]; send one")
		}
		aggRaw, hasAggs = a2, true
	}
	if !hasAggs {
		return nil
	}
	var err error
	s.aggs, err = parseAggs(aggRaw, t)
	return err
}

// parsePIT reads the body's "pit": {"id": ..., "keep_alive": ...}.
func (s *Search) parsePIT(raw json.RawMessage) error {
	o, err := asObject(raw, "pit")
	if err != nil {
		return err
	}
	for _, k := range o.sortedKeys() {
		switch k {
		case "id":
			if s.pit, err = asString(o[k], "pit.id"); err != nil {
				return err
			}
		case "keep_alive":
			str, err := asString(o[k], "pit.keep_alive")
			if err != nil {
				return err
			}
			if s.pitKeep, err = parseDuration(str, "pit.keep_alive"); err != nil {
				return err
			}
			if s.pitKeep <= 0 {
				return argErr("[pit.keep_alive] must be positive, got [%s]", str)
			}
		default:
			return parsingErr("[pit] unknown key [%s]; it holds id and keep_alive", k)
		}
	}
	if s.pit == "" {
		return argErr("[pit] needs an [id]")
	}
	return nil
}

// withMinScore wraps q so that it matches only documents scoring at least
// min_score (the body's raw value, or the URL parameter).
func withMinScore(q query.Query, raw json.RawMessage, params url.Values) (query.Query, error) {
	var min float64
	var err error
	switch {
	case params.Has("min_score"):
		if min, err = strconv.ParseFloat(params.Get("min_score"), 64); err != nil {
			return nil, argErr("[min_score] parameter must be a number, got %q", params.Get("min_score"))
		}
	case raw != nil:
		if min, err = asFloat(raw, "min_score"); err != nil {
			return nil, err
		}
	default:
		return q, nil
	}
	if math.IsNaN(min) || math.IsInf(min, 0) {
		return nil, argErr("[min_score] must be a finite number")
	}
	return &scoring.MinScore{Query: q, Min: min}, nil
}

func (t *translator) urlQueryString(params url.Values) (query.Query, error) {
	opts := qsOptions{match: matchOpts{boost: 1}, allowLeading: true}
	if df := params.Get("df"); df != "" {
		if err := opts.addField(df); err != nil {
			return nil, err
		}
	}
	if op := params.Get("default_operator"); op != "" {
		if err := opts.match.set("operator", jsonString(op), "q"); err != nil {
			return nil, err
		}
	}
	opts.match.analyzer = params.Get("analyzer")
	var err error
	if opts.lowerWild, err = optParamBool(params, "analyze_wildcard"); err != nil {
		return nil, err
	}
	if opts.match.lenient, err = optParamBool(params, "lenient"); err != nil {
		return nil, err
	}
	return t.parseQueryString(params.Get("q"), opts)
}

func (s *Search) parseSort(entries []json.RawMessage, t *translator) error {
	var order search.SortOrder
	s.scoreSorted = false
	for i, e := range entries {
		where := "sort[" + strconv.Itoa(i) + "]"
		var name string
		opts := object{}
		switch kind(e) {
		case 's':
			name, _ = asString(e, where)
		case 'o':
			o, err := asObject(e, where)
			if err != nil {
				return err
			}
			k, v, err := o.single(where)
			if err != nil {
				return err
			}
			name = k
			switch kind(v) {
			case 's':
				opts["order"] = v
			case 'o':
				opts, _ = asObject(v, where+"."+k)
			default:
				return contentErr("[%s.%s] must be \"asc\", \"desc\" or an object, got %s", where, k, kindName(kind(v)))
			}
		default:
			return contentErr("[%s] must be a field name or an object, got %s", where, kindName(kind(e)))
		}
		spec := sortSpec{field: name}
		desc, missingFirst, mode := false, false, search.SortFieldDefault
		hasOrder := false
		for _, k := range opts.sortedKeys() {
			v := opts[k]
			str, err := asScalarString(v, where+"."+k)
			if err != nil {
				return err
			}
			switch k {
			case "order":
				hasOrder = true
				switch strings.ToLower(str) {
				case "asc":
				case "desc":
					desc = true
				default:
					return argErr("[%s] order must be \"asc\" or \"desc\", got %q", where, str)
				}
			case "missing":
				switch str {
				case "_last":
				case "_first":
					missingFirst = true
				default:
					return argErr("[%s] missing value %q is not supported; use _first or _last", where, str)
				}
			case "mode":
				switch str {
				case "min":
					mode = search.SortFieldMin
				case "max":
					mode = search.SortFieldMax
				default:
					return argErr("[%s] mode [%s] is not supported; use min or max", where, str)
				}
			case "unmapped_type", "format", "numeric_type":
			default:
				return parsingErr("[%s] unknown sort option [%s]; supported: order, missing, mode, unmapped_type", where, k)
			}
		}
		switch name {
		case "_score":
			spec.kind = sortScore
			spec.desc = !hasOrder || desc
			order = append(order, &search.SortScore{Desc: spec.desc})
			s.scoreSorted = s.scoreSorted || i == 0
			s.trackScores = true
		case "_id", "_doc":
			spec.kind = sortID
			spec.desc = desc
			order = append(order, &search.SortDocID{Desc: desc})
		case "_geo_distance", "_script":
			return argErr("sorting by [%s] is not supported; sort by a field, _score, _id or _doc", name)
		default:
			ft := t.fieldType(name)
			sf := &search.SortField{Field: name, Desc: desc, Mode: mode}
			if missingFirst {
				sf.Missing = search.SortFieldMissingFirst
			}
			switch {
			case isNumeric(ft):
				spec.kind, spec.integral, sf.Type = sortNumber, isIntegral(ft), search.SortFieldAsNumber
			case ft == "date":
				spec.kind, sf.Type = sortDate, search.SortFieldAsDate
			case ft == "boolean":
				spec.kind, sf.Type = sortBool, search.SortFieldAsString
			case ft == "keyword":
				spec.kind, sf.Type = sortString, search.SortFieldAsString
			case ft == "text":
				return argErr("Text fields are not optimised for operations that require per-document field data like aggregations and sorting, so these operations are disabled by default. Please use a keyword field instead ([%s.keyword] if it exists). Sort field: [%s]", name, name)
			case ft == "":
				if _, ok := opts["unmapped_type"]; !ok {
					return shardErr("No mapping found for [%s] in order to sort on; add \"unmapped_type\" to the sort or map the field", name)
				}
				spec.kind, sf.Type = sortString, search.SortFieldAsString
			default:
				return argErr("cannot sort on [%s] of type [%s]", name, ft)
			}
			spec.desc = desc
			order = append(order, sf)
		}
		s.sorts = append(s.sorts, spec)
	}
	s.Request.SortByCustom(order)
	return nil
}

// SetTotalAsInt renders hits.total as a bare number (the
// rest_total_hits_as_int parameter of a scroll continuation, which the
// scroll id does not carry).
func (s *Search) SetTotalAsInt(asInt bool) {
	s.totalAsInt = asInt
	if asInt && s.trackTotal >= 0 {
		s.trackTotal = -1
	}
}

// parseSearchAfter converts the search_after values to bleve's strings.
func (s *Search) parseSearchAfter(raw json.RawMessage, from int) error {
	vals, err := asArray(raw, "search_after", false)
	if err != nil {
		return err
	}
	if len(s.sorts) == 0 {
		return argErr("[search_after] needs a [sort]; add one that ends with a unique field, e.g. [{\"_id\": \"asc\"}]")
	}
	if len(vals) != len(s.sorts) {
		return argErr("search_after has %d value(s) but sort has %d; they must match", len(vals), len(s.sorts))
	}
	if from > 0 {
		return argErr("[from] parameter must be set to 0 when [search_after] is used")
	}
	after := make([]string, len(vals))
	for i, v := range vals {
		sf, _ := s.Request.Sort[i].(*search.SortField)
		if after[i], err = s.sorts[i].afterKey(v, sf); err != nil {
			return err
		}
		if sf != nil {
			// afterKey returns bleve's raw sort key (prefix-coded numbers,
			// the missing-value marker); compare it as it is.
			sf.Type = search.SortFieldAuto
		}
	}
	s.Request.SetSearchAfter(after)
	return nil
}

// afterKey turns one search_after value (as returned in a hit's "sort")
// into the raw key bleve's collector compares: the prefix-coded term for
// numbers and dates, "T"/"F" for booleans, and for null (a hit without the
// field) the marker bleve sorts missing values with.
func (sp sortSpec) afterKey(v json.RawMessage, sf *search.SortField) (string, error) {
	k := kind(v)
	if k == 'z' && sf != nil {
		last := sf.Missing == search.SortFieldMissingLast
		if last != sf.Desc {
			return search.HighTerm, nil
		}
		return search.LowTerm, nil
	}
	if k != 's' && k != 'n' && k != 'b' {
		return "", argErr("search_after value for [%s] must be a string, number or boolean, got %s", sp.name(), kindName(k))
	}
	str, err := asScalarString(v, "search_after")
	if err != nil {
		return "", err
	}
	switch sp.kind {
	case sortScore:
		f, err := strconv.ParseFloat(str, 64)
		if err != nil || math.IsNaN(f) {
			return "", argErr("search_after value %q for [_score] must be a number", str)
		}
		return strconv.FormatFloat(f, 'g', -1, 64), nil
	case sortNumber:
		f, err := strconv.ParseFloat(str, 64)
		if err != nil || math.IsNaN(f) {
			return "", argErr("search_after value %q for [%s] must be a number", str, sp.name())
		}
		return string(numeric.MustNewPrefixCodedInt64(numeric.Float64ToInt64(f), 0)), nil
	case sortDate:
		var tm time.Time
		if ms, err := strconv.ParseInt(str, 10, 64); err == nil {
			tm = time.UnixMilli(ms)
		} else {
			dp, _ := newDateParser("", "", time.Time{})
			if tm, err = dp.parseAbsolute(str, false); err != nil {
				return "", argErr("search_after value %q for date field [%s] must be epoch milliseconds", str, sp.name())
			}
		}
		return string(numeric.MustNewPrefixCodedInt64(tm.UnixNano(), 0)), nil
	case sortBool:
		switch str {
		case "true", "1", "T":
			return "T", nil
		case "false", "0", "F":
			return "F", nil
		}
		return "", argErr("search_after value %q for boolean field [%s] must be true or false", str, sp.name())
	}
	return str, nil
}

func (sp sortSpec) name() string {
	switch sp.kind {
	case sortScore:
		return "_score"
	case sortID:
		return "_id"
	}
	return sp.field
}

func parseTrackTotal(v string) (int64, error) {
	switch v {
	case "true":
		return -1, nil
	case "false":
		return -2, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, argErr("[track_total_hits] must be true, false or a non-negative integer, got %q", v)
	}
	if n == -1 {
		return -1, nil
	}
	if n < 0 {
		return 0, argErr("[track_total_hits] parameter must be positive or equals to -1, got %d", n)
	}
	if n >= math.MaxInt32 {
		return -1, nil
	}
	return n, nil
}

// parseDuration parses Elasticsearch time values: 1d, 2h, 3m, 4s, 500ms,
// 10micros, 100nanos; a bare number is milliseconds.
func parseDuration(v, what string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	units := []struct {
		suffix string
		d      time.Duration
	}{{"nanos", time.Nanosecond}, {"micros", time.Microsecond}, {"ms", time.Millisecond},
		{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}}
	if v == "-1" || v == "0" {
		return 0, nil
	}
	for _, u := range units {
		if strings.HasSuffix(v, u.suffix) {
			n, err := strconv.ParseFloat(strings.TrimSuffix(v, u.suffix), 64)
			if err != nil || n < 0 || n > float64(math.MaxInt64)/float64(u.d) {
				break
			}
			return time.Duration(n * float64(u.d)), nil
		}
	}
	return 0, argErr("failed to parse [%s] value [%s]: use a number with a unit, e.g. 1m, 30s, 500ms", what, v)
}

func paramInt(v, what string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, argErr("[%s] parameter must be an integer, got %q", what, v)
	}
	return n, nil
}

func paramBool(v, what string) (bool, error) {
	switch v {
	case "true", "":
		return true, nil
	case "false":
		return false, nil
	}
	return false, argErr("[%s] parameter must be true or false, got %q", what, v)
}

func optParamBool(params url.Values, name string) (bool, error) {
	if !params.Has(name) {
		return false, nil
	}
	return paramBool(params.Get(name), name)
}

func sortedParamKeys(params url.Values) []string {
	o := make(object, len(params))
	for k := range params {
		o[k] = nil
	}
	return o.sortedKeys()
}
