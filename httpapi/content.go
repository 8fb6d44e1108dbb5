package httpapi

import (
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"
)

// Media types the API reads and writes. Elasticsearch clients may ask for
// REST API compatibility with a vendor type carrying compatible-with=N;
// Weft speaks the 8.x API, which the 8 and 9 clients both accept, and
// answers in the same vendor type when asked, as Elasticsearch does.
const (
	mediaJSON       = "application/json"
	mediaNDJSON     = "application/x-ndjson"
	mediaVendorJSON = "application/vnd.elasticsearch+json"
	mediaVendorND   = "application/vnd.elasticsearch+x-ndjson"
)

// compatVersions are the compatible-with values accepted in vendor types:
// those Elasticsearch 8.19 accepts (7 and 8, which get the REST API of 8),
// and 9 (stricter where 9 is: unknown keys of a bulk action line).
var compatVersions = map[string]bool{"7": true, "8": true, "9": true}

// negotiation is what the request's Content-Type and Accept headers ask for.
type negotiation struct {
	// compat is the compatible-with version requested ("" when none).
	compat string
}

// responseType is the Content-Type for a JSON reply.
func (n negotiation) responseType() string {
	if n.compat != "" {
		return mediaVendorJSON + ";compatible-with=" + n.compat
	}
	return mediaJSON
}

// negotiate checks the request's media types. A body in a type the API
// cannot read is 406, a vendor type without a supported compatible-with
// version is 400, as in Elasticsearch.
func negotiate(r *http.Request) (negotiation, *apiError) {
	var n negotiation
	if ct := r.Header.Get("Content-Type"); ct != "" {
		compat, known, err := parseMedia(ct)
		if err != nil {
			return n, err
		}
		if !known && r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
			return n, &apiError{Status: http.StatusNotAcceptable, Type: "media_type_header_exception",
				Reason: fmt.Sprintf("Content-Type header [%s] is not supported; send application/json (application/x-ndjson for _bulk and _msearch)", ct)}
		}
		n.compat = compat
	}
	for _, accept := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(accept, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			compat, _, err := parseMedia(part)
			if err != nil {
				return n, err
			}
			if compat != "" {
				n.compat = compat
			}
		}
	}
	return n, nil
}

// parseMedia parses one media type. known is false for types the API does
// not read (they are fine in Accept, e.g. text/plain for _cat).
func parseMedia(v string) (compat string, known bool, err *apiError) {
	mt, params, perr := mime.ParseMediaType(v)
	if perr != nil {
		return "", false, &apiError{Status: http.StatusBadRequest, Type: "media_type_header_exception",
			Reason: fmt.Sprintf("invalid media-type value [%s]: %v", v, perr)}
	}
	switch mt {
	case mediaJSON, mediaNDJSON:
		return "", true, nil
	case mediaVendorJSON, mediaVendorND:
		c := params["compatible-with"]
		if !compatVersions[c] {
			return "", false, &apiError{Status: http.StatusBadRequest, Type: "media_type_header_exception",
				Reason: fmt.Sprintf("invalid media-type value [%s]: compatible-with must be 7, 8 or 9", v)}
		}
		return c, true, nil
	}
	return "", false, nil
}

// maxWarnings bounds the Warning headers of one reply: a bulk of a million
// lines, each with an unknown key, names the first few, not every line.
const maxWarnings = 16

// addWarning adds a Warning header in Elasticsearch's form (code 299, the
// agent, the quoted text) for something the request did that a later REST
// API version refuses; the same text is added once, and no more than
// maxWarnings in all.
func addWarning(w http.ResponseWriter, msg string) {
	v := fmt.Sprintf("299 Elasticsearch-%s %q", Version, msg)
	have := w.Header().Values("Warning")
	if len(have) >= maxWarnings || slices.Contains(have, v) {
		return
	}
	w.Header().Add("Warning", v)
}
