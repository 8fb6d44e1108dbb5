package esdsl

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// object is one decoded JSON object whose values are decoded on demand.
type object map[string]json.RawMessage

// kind returns the JSON kind of raw: 'o' object, 'a' array, 's' string,
// 'n' number, 'b' bool, 'z' null, 0 for empty or invalid.
func kind(raw json.RawMessage) byte {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return 0
	}
	switch raw[0] {
	case '{':
		return 'o'
	case '[':
		return 'a'
	case '"':
		return 's'
	case 't', 'f':
		return 'b'
	case 'n':
		return 'z'
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return 'n'
	}
	return 0
}

func kindName(k byte) string {
	switch k {
	case 'o':
		return "an object"
	case 'a':
		return "an array"
	case 's':
		return "a string"
	case 'n':
		return "a number"
	case 'b':
		return "a boolean"
	case 'z':
		return "null"
	}
	return "invalid JSON"
}

// parseBody decodes a whole request body as one JSON object; an empty body
// is an empty object. A body that is one valid JSON object is validated once
// here and then split without reflection (decodeObject); anything else takes
// encoding/json's path, whose errors name what is wrong.
func parseBody(body []byte) (object, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return object{}, nil
	}
	if kind(body) == 'o' && json.Valid(body) {
		return decodeObject(body), nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var o object
	if err := dec.Decode(&o); err != nil {
		return nil, contentErr("request body is not a JSON object: %v", err)
	}
	if o == nil {
		return nil, contentErr("request body must be a JSON object, got null")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, contentErr("request body has data after the JSON object; send exactly one object")
	}
	return o, nil
}

// decodeObject and decodeArray split values that are already known to be
// valid JSON. Every raw value this package decodes comes from a body that
// parseBody checked with json.Valid (or that encoding/json decoded), so they
// never meet malformed input (and on it they return something, never
// panic); their only job is to avoid encoding/json's reflection and its
// second validation pass on every nested object. The raw values they
// return alias raw (capacity trimmed, so appending to one copies it).

// decodeObject splits raw, a valid JSON object, into its keys and raw
// values (without surrounding whitespace, as encoding/json would give
// them). A repeated key keeps its last value, as in encoding/json.
func decodeObject(raw []byte) object {
	o := object{}
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return o
	}
	i++
	for {
		i = skipSpace(raw, i)
		if i >= len(raw) || raw[i] != '"' {
			return o // '}' (or malformed)
		}
		kend := stringEnd(raw, i)
		key := jsonKey(raw[i:kend])
		i = skipSpace(raw, kend)
		if i >= len(raw) || raw[i] != ':' {
			return o
		}
		i = skipSpace(raw, i+1)
		vend := valueEnd(raw, i)
		o[key] = raw[i:vend:vend]
		i = skipSpace(raw, vend)
		if i >= len(raw) || raw[i] != ',' {
			return o
		}
		i++
	}
}

// decodeArray splits raw, a valid JSON array, into its raw elements.
func decodeArray(raw []byte) []json.RawMessage {
	a := []json.RawMessage{}
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return a
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return a
	}
	for i < len(raw) {
		vend := valueEnd(raw, i)
		if vend == i {
			return a // malformed
		}
		a = append(a, raw[i:vend:vend])
		i = skipSpace(raw, vend)
		if i >= len(raw) || raw[i] != ',' {
			return a
		}
		i = skipSpace(raw, i+1)
	}
	return a
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index after the JSON string that starts at b[i]
// (a quote).
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// valueEnd returns the index after the JSON value that starts at b[i].
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	// A number, true, false or null.
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// jsonKey returns the string a quoted JSON key stands for, as encoding/json
// decodes it (escapes resolved, invalid UTF-8 replaced).
func jsonKey(q []byte) string {
	if len(q) >= 2 {
		inner := q[1 : len(q)-1]
		if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
			return string(inner)
		}
	}
	var s string
	_ = json.Unmarshal(q, &s)
	return s
}

// asObject decodes raw as an object; what names the value in errors.
func asObject(raw json.RawMessage, what string) (object, error) {
	if k := kind(raw); k != 'o' {
		return nil, contentErr("[%s] must be an object, got %s", what, kindName(k))
	}
	return decodeObject(raw), nil
}

// asArray decodes raw as an array of raw values; a single non-array value is
// returned as a one-element array when single is true.
func asArray(raw json.RawMessage, what string, single bool) ([]json.RawMessage, error) {
	k := kind(raw)
	if k != 'a' {
		if single && k != 0 && k != 'z' {
			return []json.RawMessage{raw}, nil
		}
		return nil, contentErr("[%s] must be an array, got %s", what, kindName(k))
	}
	return decodeArray(raw), nil
}

func asString(raw json.RawMessage, what string) (string, error) {
	if k := kind(raw); k != 's' {
		return "", contentErr("[%s] must be a string, got %s", what, kindName(k))
	}
	// A valid JSON string without escapes is its bytes between the quotes
	// (valid UTF-8 is kept as is; encoding/json would replace invalid bytes).
	if t := bytes.TrimSpace(raw); len(t) >= 2 && t[len(t)-1] == '"' && bytes.IndexByte(t, '\\') < 0 && utf8.Valid(t) {
		return string(t[1 : len(t)-1]), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", contentErr("[%s] is not valid JSON: %v", what, err)
	}
	return s, nil
}

// asScalarString accepts a string, number or boolean and returns its text
// (Elasticsearch accepts `"size": "10"` as well as `"size": 10`).
func asScalarString(raw json.RawMessage, what string) (string, error) {
	switch kind(raw) {
	case 's':
		return asString(raw, what)
	case 'n', 'b':
		s := string(bytes.TrimSpace(raw))
		if !json.Valid([]byte(s)) {
			return "", contentErr("[%s] is not valid JSON", what)
		}
		return s, nil
	}
	return "", contentErr("[%s] must be a string, number or boolean, got %s", what, kindName(kind(raw)))
}

func asBool(raw json.RawMessage, what string) (bool, error) {
	s, err := asScalarString(raw, what)
	if err != nil {
		return false, err
	}
	switch s {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, contentErr("[%s] must be true or false, got %q", what, s)
}

func asFloat(raw json.RawMessage, what string) (float64, error) {
	s, err := asScalarString(raw, what)
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, contentErr("[%s] must be a number, got %q", what, s)
	}
	return f, nil
}

func asInt(raw json.RawMessage, what string) (int, error) {
	s, err := asScalarString(raw, what)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, contentErr("[%s] must be an integer, got %q", what, s)
	}
	return n, nil
}

// sortedKeys returns o's keys in a stable order for loops whose errors name
// a key.
func (o object) sortedKeys() []string {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// single returns the only key of o and its value; what names the object.
func (o object) single(what string) (string, json.RawMessage, error) {
	if len(o) != 1 {
		keys := o.sortedKeys()
		if len(keys) == 0 {
			return "", nil, parsingErr("[%s] needs exactly one key, got an empty object", what)
		}
		return "", nil, parsingErr("[%s] needs exactly one key, got [%s]", what, strings.Join(keys, ", "))
	}
	for k, v := range o {
		return k, v, nil
	}
	return "", nil, nil
}

// fieldAndParams splits a field-keyed query object such as
// {"title": {...}, "boost": 2} into the field name and its value; top-level
// parameters beside the field (boost, _name) are returned in extra.
func fieldAndParams(o object, queryName string, allowedExtra ...string) (string, json.RawMessage, object, error) {
	var field string
	var value json.RawMessage
	extra := object{}
	for _, k := range o.sortedKeys() {
		isExtra := false
		for _, a := range allowedExtra {
			if k == a {
				isExtra = true
			}
		}
		if isExtra {
			extra[k] = o[k]
			continue
		}
		if field != "" {
			return "", nil, nil, parsingErr("[%s] query doesn't support multiple fields, found [%s] and [%s]", queryName, field, k)
		}
		field, value = k, o[k]
	}
	if field == "" {
		return "", nil, nil, parsingErr("[%s] query needs a field name, e.g. {\"%s\": {\"FIELD\": ...}}", queryName, queryName)
	}
	if err := checkMetaField(field, queryName); err != nil {
		return "", nil, nil, err
	}
	return field, value, extra, nil
}

// unknownKey reports a key that a query or request object does not support.
func unknownKey(where, key string) *Error {
	return parsingErr("[%s] query does not support [%s]", where, key)
}

// metaFields are Elasticsearch metadata fields that have no bleve field
// behind them; _id is not among them (bleve indexes it).
var metaFields = map[string]bool{
	"_index": true, "_routing": true, "_source": true, "_seq_no": true, "_version": true,
	"_primary_term": true, "_ignored": true, "_field_names": true, "_tier": true, "_doc_count": true,
}

func checkMetaField(field, where string) error {
	if metaFields[field] {
		return argErr("[%s] on the metadata field [%s] is not supported; choose indices in the URL, or use a mapped field", where, field)
	}
	return nil
}
