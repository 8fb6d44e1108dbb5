package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/weftsearch/weft/vocab"
)

// Bulk action names as they appear in an action/metadata line.
const (
	actionIndex  = "index"
	actionCreate = "create"
	actionUpdate = "update"
	actionDelete = "delete"
)

// bulkAction is one parsed action of a _bulk request. A line that cannot be
// an action at all fails the whole request (as Elasticsearch does); a
// problem confined to one action — a document that is not a JSON object, an
// update body of the wrong shape, an option Weft does not support — is kept
// in Err and fails only that item.
type bulkAction struct {
	Action  string
	Index   string
	ID      string
	Routing string

	// Source is the document of index and create actions.
	Source json.RawMessage
	// Doc, Upsert and DocAsUpsert are the body of an update action.
	Doc         json.RawMessage
	Upsert      json.RawMessage
	DocAsUpsert bool
	// IfSeqNo and IfPrimaryTerm make the write conditional (optimistic
	// concurrency control), as if_seq_no and if_primary_term do.
	IfSeqNo, IfPrimaryTerm *uint64
	// RequireAlias is the action's require_alias, nil when it has none
	// (the URL's applies).
	RequireAlias *bool
	// Version and VersionType are an externally versioned write's.
	Version     int64
	VersionType vocab.VersionType
	// NoDetectNoop is an update's detect_noop false.
	NoDetectNoop bool
	// SourceFilter is an update body's "_source" (the document to return
	// after the update), nil when none.
	SourceFilter json.RawMessage

	// Err, when set, is this item's failure; the item is answered with it
	// and never reaches the engine.
	Err *apiError
}

// bulkMeta is the object inside an action line. Fields that Elasticsearch
// accepts but Weft cannot honour are decoded so that the item can be failed
// with a clear message instead of silently ignoring, say, optimistic
// concurrency control.
type bulkMeta struct {
	Index   *string         `json:"_index"`
	ID      json.RawMessage `json:"_id"`
	Routing *string         `json:"routing"`
	OpType  *string         `json:"op_type"`

	IfSeqNo         json.RawMessage `json:"if_seq_no"`
	IfPrimaryTerm   json.RawMessage `json:"if_primary_term"`
	Version         json.RawMessage `json:"version"`
	VersionType     json.RawMessage `json:"version_type"`
	Pipeline        json.RawMessage `json:"pipeline"`
	RetryOnConflict json.RawMessage `json:"retry_on_conflict"`
	Source          json.RawMessage `json:"_source"`
	RequireAlias    json.RawMessage `json:"require_alias"`
	DynamicTmpl     json.RawMessage `json:"dynamic_templates"`
}

// bulkMetaKeys are the keys of an action line bulkMeta reads.
var bulkMetaKeys = func() map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeFor[bulkMeta]()
	for i := range t.NumField() {
		out[strings.Split(t.Field(i).Tag.Get("json"), ",")[0]] = true
	}
	return out
}()

// nullIsAbsent treats an option given as JSON null as not given, as
// Elasticsearch does ("pipeline": null is no pipeline).
func (m *bulkMeta) nullIsAbsent() {
	for _, raw := range []*json.RawMessage{&m.ID, &m.IfSeqNo, &m.IfPrimaryTerm, &m.Version, &m.VersionType, &m.Pipeline,
		&m.RetryOnConflict, &m.Source, &m.RequireAlias, &m.DynamicTmpl} {
		if bytes.Equal(bytes.TrimSpace(*raw), []byte("null")) {
			*raw = nil
		}
	}
}

// unsupported names the first option of m that Weft does not implement, or "".
// retry_on_conflict is accepted and ignored: Weft applies updates of one
// document in order, so there is no conflict to retry.
func (m *bulkMeta) unsupported() string {
	switch {
	case m.Pipeline != nil:
		return "pipeline"
	case m.Source != nil:
		return "_source"
	case m.DynamicTmpl != nil:
		return "dynamic_templates"
	}
	return ""
}

// updateBody is the source line of an update action.
type updateBody struct {
	Doc            json.RawMessage `json:"doc"`
	Upsert         json.RawMessage `json:"upsert"`
	DocAsUpsert    *bool           `json:"doc_as_upsert"`
	DetectNoop     *bool           `json:"detect_noop"`
	Script         json.RawMessage `json:"script"`
	ScriptedUpsert json.RawMessage `json:"scripted_upsert"`
	Source         json.RawMessage `json:"_source"`
}

// parseBulk parses an NDJSON _bulk body. defaultIndex and defaultRouting
// come from the URL (/{index}/_bulk, ?routing=) and apply to actions that do
// not name their own. The returned actions alias body; the caller keeps body
// alive and unmodified while it uses them.
//
// charge (nil: none) is called with vocab.OpOverhead before each action
// is kept, so that what the parsed request holds is accounted as it grows
// (the body's own bytes are the caller's to charge); an error from it
// stops the parse and is returned as it is.
//
// Any other error, always an *apiError with a 4xx status, means the whole
// request is rejected: a line where an action is expected that is not a
// valid action line, an action without an index, or a missing source line.
// bulkLeniency is how a bulk body's action lines are read beside what
// every REST API version checks: with strictKeys (REST API 9) an unknown
// key of an action line fails the request; without it (8, as Elasticsearch
// 8 does) it is skipped and named through warn.
type bulkLeniency struct {
	strictKeys bool
	warn       func(msg string)
}

func parseBulk(body []byte, defaultIndex, defaultRouting string, charge func(n int64) error, leniency bulkLeniency) ([]bulkAction, error) {
	var actions []bulkAction
	lineNo := 0
	rest := body
	nextLine := func() ([]byte, bool) {
		for len(rest) > 0 {
			var line []byte
			if i := bytes.IndexByte(rest, '\n'); i >= 0 {
				line, rest = rest[:i], rest[i+1:]
			} else {
				line, rest = rest, nil
			}
			lineNo++
			line = bytes.TrimSpace(line)
			if len(line) > 0 {
				return line, true
			}
		}
		return nil, false
	}
	for {
		line, ok := nextLine()
		if !ok {
			break
		}
		if charge != nil {
			if err := charge(vocab.OpOverhead); err != nil {
				return nil, err
			}
		}
		if xe := utf8Error(line, lineNo); xe != nil {
			return nil, xe // an action line that does not parse, as any other
		}
		a, needsSource, err := parseActionLine(line, lineNo, defaultIndex, defaultRouting, leniency)
		if err != nil {
			return nil, err
		}
		if needsSource {
			src, ok := nextLine()
			if !ok {
				// Elasticsearch drops a last action whose source line
				// never came.
				break
			}
			if a.Err == nil {
				a.Err = a.sourceUTF8Error(src, lineNo)
			}
			if a.Err == nil {
				a.Err = a.setSource(src)
			}
		}
		actions = append(actions, a)
	}
	if len(actions) == 0 {
		return nil, &apiError{Status: http.StatusBadRequest, Type: "action_request_validation_exception",
			Reason: "Validation Failed: 1: no requests added; send NDJSON action lines, each followed by its document where the action needs one;"}
	}
	return actions, nil
}

// parseActionLine parses one action/metadata line.
func parseActionLine(line []byte, lineNo int, defaultIndex, defaultRouting string, leniency bulkLeniency) (a bulkAction, needsSource bool, err error) {
	if line[0] != '{' {
		return a, false, illegalArgument("malformed action/metadata line [%d], expected START_OBJECT but found something else; each action line is a JSON object like {\"index\":{\"_index\":\"x\"}}", lineNo)
	}
	var outer map[string]json.RawMessage
	if err := json.Unmarshal(line, &outer); err != nil {
		return a, false, badRequest("x_content_parse_exception", "malformed action/metadata line [%d]: %v", lineNo, err)
	}
	if len(outer) == 0 {
		return a, false, illegalArgument("Malformed action/metadata line [%d], expected FIELD_NAME but found [END_OBJECT]", lineNo)
	}
	if len(outer) != 1 {
		return a, false, illegalArgument("malformed action/metadata line [%d], expected exactly one action (index, create, update or delete) but found %d keys", lineNo, len(outer))
	}
	var raw json.RawMessage
	for k, v := range outer {
		a.Action, raw = k, v
	}
	switch a.Action {
	case actionIndex, actionCreate, actionUpdate:
		needsSource = true
	case actionDelete:
	default:
		return a, false, illegalArgument("malformed action/metadata line [%d], expected one of [create, delete, index, update] but found [%s]", lineNo, a.Action)
	}
	var meta bulkMeta
	if err := json.Unmarshal(raw, &meta); err != nil {
		return a, false, illegalArgument("action/metadata line [%d] is not valid: %v", lineNo, err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return a, false, illegalArgument("action/metadata line [%d] is not valid: %v", lineNo, err)
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if bulkMetaKeys[k] {
			continue
		}
		msg := fmt.Sprintf("Action/metadata line [%d] contains an unknown parameter [%s]", lineNo, k)
		if leniency.strictKeys {
			return a, false, illegalArgument("%s", msg)
		}
		if leniency.warn != nil {
			leniency.warn(msg)
		}
	}
	meta.nullIsAbsent()
	if meta.Index != nil {
		a.Index = *meta.Index
	} else {
		a.Index = defaultIndex
	}
	if a.Index == "" {
		return a, false, &apiError{Status: http.StatusBadRequest, Type: "action_request_validation_exception",
			Reason: fmt.Sprintf("Validation Failed: 1: index is missing for the action on line %d; name it in _index or use /{index}/_bulk;", lineNo)}
	}
	if meta.ID != nil {
		// Elasticsearch takes a number as the id's text.
		var id any
		dec := json.NewDecoder(bytes.NewReader(meta.ID))
		dec.UseNumber()
		if err := dec.Decode(&id); err != nil {
			return a, false, illegalArgument("action/metadata line [%d]: _id is not valid: %v", lineNo, err)
		}
		switch v := id.(type) {
		case string:
			a.ID = v
		case json.Number:
			a.ID = v.String()
		default:
			return a, false, illegalArgument("action/metadata line [%d]: _id must be a string or a number", lineNo)
		}
		if a.ID == "" {
			a.Err = illegalArgument("if _id is specified it must not be empty")
		}
	}
	if meta.Routing != nil {
		a.Routing = *meta.Routing
	} else {
		a.Routing = defaultRouting
	}
	if meta.OpType != nil && a.Err == nil {
		switch *meta.OpType {
		case "create":
			if a.Action == actionIndex {
				a.Action = actionCreate
			}
		case "index":
		default:
			a.Err = illegalArgument("opType must be 'create' or 'index', found: [%s]", *meta.OpType)
		}
	}
	if meta.RequireAlias != nil && a.Err == nil {
		var b bool
		if err := json.Unmarshal(meta.RequireAlias, &b); err != nil {
			a.Err = illegalArgument("require_alias must be true or false")
		}
		a.RequireAlias = &b
	}
	for _, c := range []struct {
		name string
		raw  json.RawMessage
		dst  **uint64
	}{{"if_seq_no", meta.IfSeqNo, &a.IfSeqNo}, {"if_primary_term", meta.IfPrimaryTerm, &a.IfPrimaryTerm}} {
		if c.raw == nil || a.Err != nil {
			continue
		}
		var n uint64
		if err := json.Unmarshal(c.raw, &n); err != nil {
			a.Err = illegalArgument("[%s] must be a non-negative number, got %s", c.name, c.raw)
			continue
		}
		*c.dst = &n
	}
	if (meta.Version != nil || meta.VersionType != nil) && a.Err == nil {
		var version, vt string
		if meta.Version != nil {
			version = strings.Trim(string(meta.Version), `"`)
		}
		if meta.VersionType != nil {
			vt = strings.Trim(string(meta.VersionType), `"`)
		}
		a.Version, a.VersionType, a.Err = parseVersion(version, meta.Version != nil, vt, a.Action)
	}
	if opt := meta.unsupported(); opt != "" && a.Err == nil {
		a.Err = illegalArgument("bulk action option [%s] is not supported by Weft; remove it from the action on line %d", opt, lineNo)
	}
	if a.ID == "" && a.Err == nil && (a.Action == actionUpdate || a.Action == actionDelete) {
		a.Err = &apiError{Status: http.StatusBadRequest, Type: "action_request_validation_exception",
			Reason: fmt.Sprintf("Validation Failed: 1: id is missing for the %s action on line %d;", a.Action, lineNo)}
	}
	return a, needsSource, nil
}

// sourceUTF8Error refuses a source line (body line lineNo) that is not
// UTF-8, failing only its item, as Elasticsearch fails a document it
// cannot parse: a document's as document_parsing_exception, an update
// body's as x_content_parse_exception (Weft fails a bad update body alone).
func (a *bulkAction) sourceUTF8Error(src []byte, lineNo int) *apiError {
	if a.Action != actionUpdate {
		return docUTF8Error(src, lineNo, a.Index)
	}
	return utf8Error(src, lineNo)
}

// setSource validates and attaches the source line of an index, create or
// update action, returning the item's error if the line is unusable.
func (a *bulkAction) setSource(src []byte) *apiError {
	if a.Action != actionUpdate {
		if err := checkObject(src); err != nil {
			return &apiError{Status: http.StatusBadRequest, Type: "document_parsing_exception",
				Reason: fmt.Sprintf("failed to parse the document: %v", err), Index: a.Index}
		}
		a.Source = src
		return nil
	}
	var u updateBody
	if err := decodeStrict(src, &u); err != nil {
		return badRequest("x_content_parse_exception", "failed to parse the update body: %v", err)
	}
	switch {
	case u.Script != nil || u.ScriptedUpsert != nil:
		return illegalArgument("scripted updates are not supported by Weft; send a partial document in \"doc\"")
	case u.Doc == nil:
		return &apiError{Status: http.StatusBadRequest, Type: "action_request_validation_exception",
			Reason: "Validation Failed: 1: script or doc is missing;"}
	}
	if err := checkObject(u.Doc); err != nil {
		return badRequest("x_content_parse_exception", "update \"doc\" must be a JSON object: %v", err)
	}
	if u.Upsert != nil {
		if err := checkObject(u.Upsert); err != nil {
			return badRequest("x_content_parse_exception", "update \"upsert\" must be a JSON object: %v", err)
		}
	}
	a.Doc, a.Upsert, a.SourceFilter = u.Doc, u.Upsert, u.Source
	a.DocAsUpsert = u.DocAsUpsert != nil && *u.DocAsUpsert
	a.NoDetectNoop = u.DetectNoop != nil && !*u.DetectNoop
	return nil
}

// parseVersion reads a write's version and version_type (given: whether
// version was sent at all). Elasticsearch 8 takes a version only with
// version_type external or external_gte (internal versioning is if_seq_no's
// job now), and never on create or update.
func parseVersion(version string, given bool, versionType, action string) (int64, vocab.VersionType, *apiError) {
	var vt vocab.VersionType
	switch versionType {
	case "", "internal":
		vt = vocab.VersionInternal
	case "external":
		vt = vocab.VersionExternal
	case "external_gte":
		vt = vocab.VersionExternalGTE
	case "force":
		return 0, 0, illegalArgument("version type [force] may no longer be used")
	default:
		return 0, 0, illegalArgument("No version type match [%s]; use external or external_gte", versionType)
	}
	if !given {
		if vt != vocab.VersionInternal {
			return 0, 0, validationErr("an external version type needs a version")
		}
		return 0, vt, nil
	}
	n, err := strconv.ParseInt(version, 10, 64)
	switch {
	case err != nil:
		return 0, 0, illegalArgument("[version] must be a number, got [%s]", version)
	case vt == vocab.VersionInternal:
		return 0, 0, validationErr("internal versioning can not be used for optimistic concurrency control. Please use `if_seq_no` and `if_primary_term` instead")
	case n < 0:
		return 0, 0, validationErr("illegal version value [" + version + "] for version type [" + versionType + "]")
	case action == actionCreate:
		return 0, 0, validationErr("create operations only support internal versioning. use index instead")
	case action == actionUpdate:
		return 0, 0, validationErr("can't provide version in update requests; use if_seq_no and if_primary_term")
	}
	return n, vt, nil
}

func validationErr(reason string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "action_request_validation_exception", Reason: "Validation Failed: 1: " + reason + ";"}
}

// checkObject reports whether b is exactly one valid JSON object.
func checkObject(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return fmt.Errorf("expected a JSON object")
	}
	if !json.Valid(b) {
		// Unmarshal into nothing useful to get a message that says where.
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		return fmt.Errorf("invalid JSON")
	}
	return nil
}

// decodeStrict decodes exactly one JSON value from b into v, rejecting
// unknown fields and trailing data.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("unexpected data after the JSON value")
	}
	if _, err := dec.Token(); err == nil {
		return fmt.Errorf("unexpected data after the JSON value")
	}
	return nil
}
