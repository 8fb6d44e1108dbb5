package esdsl

import (
	"bytes"
	"net/url"
	"strings"
)

// MsearchItem is one search of an _msearch request: the index expression
// from its header ("" means the indices of the URL), the raw search body to
// pass to ParseSearch, and the header's other keys as URL parameters.
type MsearchItem struct {
	Index  string
	Body   []byte
	Params url.Values
}

var msearchHeaderKeys = map[string]bool{
	"index": true, "search_type": true, "preference": true, "routing": true, "request_cache": true,
	"allow_no_indices": true, "expand_wildcards": true, "ignore_unavailable": true,
	"ccs_minimize_roundtrips": true, "allow_partial_search_results": true, "ignore_throttled": true,
}

// ParseMsearch splits an _msearch NDJSON body into header/body pairs. A
// malformed header fails the whole request with a 400 naming the line; a
// body is only checked to be one line and is translated later, per item, so
// that a bad body fails only its item. The returned bodies alias body.
func ParseMsearch(body []byte) ([]MsearchItem, error) {
	lines := bytes.Split(body, []byte("\n"))
	// A trailing newline leaves one empty element.
	if n := len(lines); n > 0 && len(bytes.TrimSpace(lines[n-1])) == 0 {
		lines = lines[:n-1]
	}
	var items []MsearchItem
	for i := 0; i < len(lines); i += 2 {
		header := bytes.TrimSpace(bytes.TrimSuffix(lines[i], []byte("\r")))
		item := MsearchItem{Params: url.Values{}}
		if len(header) > 0 {
			o, err := parseBody(header)
			if err != nil {
				return nil, contentErr("_msearch line %d: header is not a JSON object: %s", i+1, err.(*Error).Reason)
			}
			for _, k := range o.sortedKeys() {
				v := o[k]
				if !msearchHeaderKeys[k] {
					return nil, argErr("_msearch line %d: key [%s] is not supported in the metadata section", i+1, k)
				}
				if k == "index" {
					list, err := stringList(v, "index")
					if err != nil {
						return nil, contentErr("_msearch line %d: [index] must be a string or an array of strings", i+1)
					}
					item.Index = strings.Join(list, ",")
					continue
				}
				if kind(v) == 'a' {
					list, err := stringList(v, k)
					if err != nil {
						return nil, contentErr("_msearch line %d: [%s] must be a string or an array of strings", i+1, k)
					}
					item.Params.Set(k, strings.Join(list, ","))
					continue
				}
				s, err := asScalarString(v, k)
				if err != nil {
					return nil, contentErr("_msearch line %d: [%s] must be a string, number or boolean", i+1, k)
				}
				item.Params.Set(k, s)
			}
		}
		if i+1 >= len(lines) {
			return nil, contentErr("_msearch line %d: header has no search body on the next line; every header needs a body line ({} for match_all)", i+1)
		}
		b := bytes.TrimSpace(bytes.TrimSuffix(lines[i+1], []byte("\r")))
		if len(b) > 0 && b[0] != '{' {
			return nil, contentErr("_msearch line %d: search body must be a JSON object", i+2)
		}
		// An invalid body is kept: ParseSearch reports it for this item only.
		item.Body = b
		items = append(items, item)
	}
	if len(items) == 0 {
		return nil, &Error{Kind: ErrInvalidRequest, Type: "action_request_validation_exception", Reason: "Validation Failed: 1: no requests added;"}
	}
	return items, nil
}

// msearchDefaults are the URL parameters of _msearch that apply to every
// search that does not set its own.
var msearchDefaults = []string{"rest_total_hits_as_int", "typed_keys", "ignore_unavailable", "allow_no_indices",
	"expand_wildcards", "ignore_throttled", "search_type", "ccs_minimize_roundtrips", "allow_partial_search_results",
	"include_named_queries_score", "max_concurrent_shard_requests", "pre_filter_shard_size", "routing"}

// ApplyMsearchDefaults gives each item the URL's parameters it does not
// set itself, and refuses the whole request, as Elasticsearch does, when
// rest_total_hits_as_int meets a search whose total is not tracked
// exactly.
func ApplyMsearchDefaults(items []MsearchItem, url url.Values) error {
	for k := range items {
		for _, p := range msearchDefaults {
			if url.Has(p) && !items[k].Params.Has(p) {
				items[k].Params.Set(p, url.Get(p))
			}
		}
		if v, _ := optParamBool(items[k].Params, "rest_total_hits_as_int"); !v {
			continue
		}
		o, err := parseBody(items[k].Body)
		if err != nil {
			continue // reported by the item's own translation
		}
		if raw, ok := o["track_total_hits"]; ok {
			if str, err := asScalarString(raw, "track_total_hits"); err == nil && str != "true" {
				return argErr("[rest_total_hits_as_int] cannot be used if the tracking of total hits is not accurate, got %s", str)
			}
		}
	}
	return nil
}
