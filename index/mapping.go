package index

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Field types as Elasticsearch names them.
const (
	TypeText    = "text"
	TypeKeyword = "keyword"
	TypeLong    = "long"
	TypeInteger = "integer"
	TypeShort   = "short"
	TypeByte    = "byte"
	TypeDouble  = "double"
	TypeFloat   = "float"
	TypeBoolean = "boolean"
	TypeDate    = "date"
	TypeObject  = "object"

	TypeHalfFloat   = "half_float"
	TypeScaledFloat = "scaled_float"
	TypeDateNanos   = "date_nanos"
	TypeIP          = "ip"
	TypeCompletion  = "completion"
)

// Range field types hold an interval per value ({"gte": 1, "lt": 5}); each
// is indexed as its two inclusive bounds (RangeBounds).
const (
	TypeIntegerRange = "integer_range"
	TypeLongRange    = "long_range"
	TypeFloatRange   = "float_range"
	TypeDoubleRange  = "double_range"
	TypeDateRange    = "date_range"
	TypeIPRange      = "ip_range"
)

// IsRange reports whether t is a range field type.
func IsRange(t string) bool {
	switch t {
	case TypeIntegerRange, TypeLongRange, TypeFloatRange, TypeDoubleRange, TypeDateRange, TypeIPRange:
		return true
	}
	return false
}

// RangeBounds names the bleve fields that hold the inclusive lower and
// upper bounds of the range field at path: numbers (IPv4 addresses as
// their 32-bit value) or, for date_range, dates.
func RangeBounds(path string) (lo, hi string) { return path + "#lo", path + "#hi" }

// rangeBoundType is the type a bound field of RangeBounds reads as in
// aggregations: date for date_range, double for the numeric ranges; "" for
// any other name (ip_range bounds included).
func (m *Mapping) rangeBoundType(name string) string {
	path, ok := strings.CutSuffix(name, "#lo")
	if !ok {
		if path, ok = strings.CutSuffix(name, "#hi"); !ok {
			return ""
		}
	}
	switch t := m.FieldType(path); {
	case t == TypeDateRange:
		return TypeDate
	case IsRange(t) && t != TypeIPRange:
		return TypeDouble
	}
	return ""
}

// IPv4Field names the numeric bleve field that holds an ip field's IPv4
// addresses as 32-bit values, for CIDR and range queries.
func IPv4Field(path string) string { return path + "#v4" }

// Dynamic settings of a mapping or object.
const (
	DynamicTrue   = "true"
	DynamicFalse  = "false"
	DynamicStrict = "strict"
)

// keywordIgnoreAbove is the ignore_above that dynamic mapping gives the
// .keyword sub-field of a string, as Elasticsearch does.
const keywordIgnoreAbove = 256

// Field is one mapped field: a leaf (text, keyword, numbers, boolean, date)
// or an object with Properties. Fields are owned by their Mapping; callers
// read them only through Mapping's methods.
type Field struct {
	Type           string
	Analyzer       string            // text: index-time analyzer ("" = standard)
	SearchAnalyzer string            // text: query-time analyzer ("" = Analyzer)
	IgnoreAbove    int               // keyword: longer values are not indexed (0 = no limit)
	Format         string            // date, date_nanos, date_range: "" = strict_date_optional_time||epoch_millis
	ScalingFactor  float64           // scaled_float: values are rounded to multiples of 1/ScalingFactor
	NoIndex        bool              // "index": false — kept in _source, not searchable
	Dynamic        string            // object: "" inherits from the parent
	Properties     map[string]*Field // object
	Fields         map[string]*Field // multi-fields ("fields"), e.g. title.keyword
	extra          map[string]json.RawMessage
	dates          *DateFormat // date: Format parsed (nil: the default)
}

// Mapping is an Elasticsearch-style mapping (the "mappings" object of
// PUT /{index}). It is safe for concurrent use: documents are parsed against
// it while dynamic fields are added to it. All shards of one ES index share
// one *Mapping.
type Mapping struct {
	mu      sync.RWMutex
	dynamic string
	props   map[string]*Field
	root    rootOpts
	version uint64 // incremented on every change

	anOnce sync.Once // analyzers for Analyze, built on first use
	an     analyzerSet
	anErr  error
}

// NewDynamicMapping returns an empty mapping with dynamic=true.
func NewDynamicMapping() *Mapping {
	return &Mapping{dynamic: DynamicTrue, props: map[string]*Field{}}
}

var numericTypes = map[string]bool{TypeLong: true, TypeInteger: true, TypeShort: true, TypeByte: true, TypeDouble: true, TypeFloat: true,
	TypeHalfFloat: true, TypeScaledFloat: true}

// allowedParams lists the mapping parameters accepted per type; the ones
// without behaviour here (store, doc_values, norms, ...) are kept and shown
// back by MarshalJSON.
var allowedParams = map[string][]string{
	TypeText:       {"analyzer", "search_analyzer", "fields", "index", "store", "norms", "term_vector", "index_options", "similarity", "position_increment_gap", "fielddata"},
	TypeKeyword:    {"ignore_above", "fields", "index", "store", "doc_values", "norms", "similarity", "null_value"},
	TypeBoolean:    {"index", "store", "doc_values", "null_value", "fields"},
	TypeDate:       {"format", "index", "store", "doc_values", "null_value", "fields", "locale", "ignore_malformed"},
	TypeDateNanos:  {"format", "index", "store", "doc_values", "null_value", "fields", "locale", "ignore_malformed"},
	TypeIP:         {"index", "store", "doc_values", "null_value", "fields", "ignore_malformed"},
	TypeCompletion: {"analyzer", "search_analyzer", "preserve_separators", "preserve_position_increments", "max_input_length", "contexts"},
	TypeObject:     {"properties", "dynamic", "enabled"},
	"number":       {"index", "store", "doc_values", "coerce", "null_value", "fields", "ignore_malformed", "scaling_factor"},
	"range":        {"index", "store", "doc_values", "coerce", "format"},
}

// ParseMapping parses an ES "mappings" object:
// {"dynamic": true|false|"strict", "properties": {...}}. Errors wrap
// ErrInvalidMapping and name the field and the offending value.
func ParseMapping(raw []byte) (*Mapping, error) {
	raw = bytes.TrimSpace(raw)
	m := NewDynamicMapping()
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return m, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("%w: mapping is not a JSON object: %v", ErrInvalidMapping, err)
	}
	for k, v := range top {
		switch k {
		case "properties":
			props, err := parseProperties("", v)
			if err != nil {
				return nil, err
			}
			m.props = props
		case "dynamic":
			d, err := parseDynamic("", v)
			if err != nil {
				return nil, err
			}
			m.dynamic = d
		case "_source", "date_detection", "numeric_detection", "_meta":
			if err := m.root.set(k, v); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("%w: root mapping definition has unsupported parameter [%s]; supported: properties, dynamic, _source, _meta, date_detection, numeric_detection", ErrInvalidMapping, k)
		}
	}
	return m, nil
}

func parseDynamic(path string, v json.RawMessage) (string, error) {
	var b bool
	if err := json.Unmarshal(v, &b); err == nil {
		if b {
			return DynamicTrue, nil
		}
		return DynamicFalse, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		switch s {
		case DynamicTrue, DynamicFalse, DynamicStrict:
			return s, nil
		}
	}
	where := "the mapping root"
	if path != "" {
		where = "field [" + path + "]"
	}
	return "", fmt.Errorf("%w: dynamic on %s must be true, false or \"strict\", got %s", ErrInvalidMapping, where, string(v))
}

func parseProperties(prefix string, raw json.RawMessage) (map[string]*Field, error) {
	var props map[string]json.RawMessage
	if err := json.Unmarshal(raw, &props); err != nil {
		return nil, fmt.Errorf("%w: properties of [%s] must be an object: %v", ErrInvalidMapping, prefix, err)
	}
	out := make(map[string]*Field, len(props))
	for name, v := range props {
		if name == "" {
			return nil, fmt.Errorf("%w: Failed to parse mapping: %w", ErrInvalidMapping, fmt.Errorf("%w: field name cannot be an empty string", ErrIllegalArgument))
		}
		if strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") || strings.Contains(name, "..") {
			return nil, fmt.Errorf("%w: field name [%s] under [%s] is empty or has an empty path element", ErrInvalidMapping, name, prefix)
		}
		path := joinPath(prefix, name)
		if strings.HasPrefix(name, "_") {
			return nil, fmt.Errorf("%w: field [%s]: names starting with _ are reserved for metadata fields", ErrInvalidMapping, path)
		}
		f, err := parseField(path, v)
		if err != nil {
			return nil, err
		}
		// "a.b": {...} in properties means object a with field b, as ES does.
		parts := strings.Split(name, ".")
		target := out
		for _, p := range parts[:len(parts)-1] {
			obj := target[p]
			if obj == nil {
				obj = &Field{Type: TypeObject, Properties: map[string]*Field{}}
				target[p] = obj
			} else if obj.Type != TypeObject {
				return nil, fmt.Errorf("%w: field [%s] is both %s and an object", ErrInvalidMapping, path, obj.Type)
			}
			target = obj.Properties
		}
		target[parts[len(parts)-1]] = f
	}
	return out, nil
}

func joinPath(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func parseField(path string, raw json.RawMessage) (*Field, error) {
	var params map[string]json.RawMessage
	if err := json.Unmarshal(raw, &params); err != nil {
		return nil, fmt.Errorf("%w: expected map for property [%s] but got %s", ErrInvalidMapping, path, string(raw))
	}
	f := &Field{}
	if t, ok := params["type"]; ok {
		if err := json.Unmarshal(t, &f.Type); err != nil {
			return nil, fmt.Errorf("%w: type of field [%s] must be a string, got %s", ErrInvalidMapping, path, string(t))
		}
	} else if _, ok := params["properties"]; ok {
		f.Type = TypeObject
	} else {
		return nil, fmt.Errorf("%w: no type specified for field [%s]", ErrInvalidMapping, path)
	}
	group := f.Type
	switch {
	case numericTypes[f.Type]:
		group = "number"
	case IsRange(f.Type):
		group = "range"
	}
	allowed, ok := allowedParams[group]
	if !ok {
		return nil, fmt.Errorf("%w: no handler for type [%s] declared on field [%s]; supported: text, keyword, long, integer, short, byte, double, float, half_float, scaled_float, boolean, date, date_nanos, ip, completion, integer_range, long_range, float_range, double_range, date_range, ip_range, object", ErrInvalidMapping, f.Type, path)
	}
	for k, v := range params {
		if k == "type" {
			continue
		}
		if k == "meta" && f.Type != TypeObject {
			if err := checkMeta(path, v); err != nil {
				return nil, err
			}
		} else if !slices.Contains(allowed, k) {
			return nil, fmt.Errorf("%w: unknown parameter [%s] on mapper [%s] of type [%s]", ErrInvalidMapping, k, path, f.Type)
		}
		var err error
		switch k {
		case "analyzer", "search_analyzer":
			var s string
			if err = json.Unmarshal(v, &s); err == nil {
				if _, known := esAnalyzers[s]; !known {
					return nil, fmt.Errorf("%w: analyzer [%s] on field [%s] has not been configured; supported: %s", ErrInvalidMapping, s, path, strings.Join(analyzerNames(), ", "))
				}
				if k == "analyzer" {
					f.Analyzer = s
				} else {
					f.SearchAnalyzer = s
				}
			}
		case "ignore_above":
			err = json.Unmarshal(v, &f.IgnoreAbove)
			if err == nil && f.IgnoreAbove < 0 {
				err = fmt.Errorf("must be >= 0")
			}
		case "scaling_factor":
			if err = json.Unmarshal(v, &f.ScalingFactor); err == nil && (f.ScalingFactor <= 0 || math.IsInf(f.ScalingFactor, 0)) {
				err = fmt.Errorf("must be a positive number")
			}
			if err == nil && f.Type != TypeScaledFloat {
				err = fmt.Errorf("applies to scaled_float fields only")
			}
		case "format":
			if f.Type != TypeDate && f.Type != TypeDateNanos && f.Type != TypeDateRange {
				return nil, fmt.Errorf("%w: unknown parameter [format] on mapper [%s] of type [%s]", ErrInvalidMapping, path, f.Type)
			}
			if err = json.Unmarshal(v, &f.Format); err == nil {
				if f.dates, err = ParseDateFormat(f.Format); err != nil {
					return nil, fmt.Errorf("%w: field [%s]: %v", ErrInvalidMapping, path, err)
				}
			}
		case "index":
			var b bool
			if err = json.Unmarshal(v, &b); err == nil {
				f.NoIndex = !b
			}
		case "dynamic":
			f.Dynamic, err = parseDynamic(path, v)
			if err != nil {
				return nil, err
			}
		case "properties":
			f.Properties, err = parseProperties(path, v)
			if err != nil {
				return nil, err
			}
		case "fields":
			f.Fields, err = parseProperties(path, v)
			if err != nil {
				return nil, err
			}
			for sub, sf := range f.Fields {
				if sf.Type == TypeObject {
					return nil, fmt.Errorf("%w: sub-field [%s.%s] cannot be an object", ErrInvalidMapping, path, sub)
				}
			}
		default:
			if f.extra == nil {
				f.extra = map[string]json.RawMessage{}
			}
			f.extra[k] = slices.Clone(v)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: parameter [%s] on field [%s]: %v", ErrInvalidMapping, k, path, err)
		}
	}
	if f.Type == TypeObject && f.Properties == nil {
		f.Properties = map[string]*Field{}
	}
	if f.Type == TypeScaledFloat && f.ScalingFactor == 0 {
		return nil, fmt.Errorf("%w: field [%s] of type [scaled_float] needs [scaling_factor]", ErrInvalidMapping, path)
	}
	return f, nil
}

// checkMeta validates a field's "meta": an object of at most 5 string
// values, as Elasticsearch requires. It is kept and shown back as given.
func checkMeta(path string, raw json.RawMessage) error {
	var meta map[string]any
	if err := json.Unmarshal(raw, &meta); err != nil || meta == nil {
		return fmt.Errorf("%w: [meta] on field [%s] must be an object", ErrInvalidMapping, path)
	}
	if len(meta) > 5 {
		return fmt.Errorf("%w: [meta] on field [%s] can't have more than 5 entries, but got %d", ErrInvalidMapping, path, len(meta))
	}
	for k, v := range meta {
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%w: [meta] values can only be strings, but got %T for field [%s] of [%s]", ErrInvalidMapping, v, k, path)
		}
	}
	return nil
}

// MarshalJSON renders the mapping as GET /{index}/_mapping shows it,
// including dynamically added fields.
func (m *Mapping) MarshalJSON() ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := map[string]any{}
	if len(m.props) > 0 {
		out["properties"] = propsJSON(m.props)
	}
	if m.dynamic != DynamicTrue {
		out["dynamic"] = dynamicJSON(m.dynamic)
	}
	m.root.toJSON(out)
	return json.Marshal(out)
}

func dynamicJSON(d string) any {
	switch d {
	case DynamicTrue:
		return true
	case DynamicFalse:
		return false
	}
	return d
}

func propsJSON(props map[string]*Field) map[string]any {
	out := make(map[string]any, len(props))
	for name, f := range props {
		out[name] = f.toJSON()
	}
	return out
}

func (f *Field) toJSON() map[string]any {
	o := map[string]any{}
	for k, v := range f.extra {
		o[k] = v
	}
	if f.Type != TypeObject {
		o["type"] = f.Type
	}
	if f.Analyzer != "" {
		o["analyzer"] = f.Analyzer
	}
	if f.SearchAnalyzer != "" {
		o["search_analyzer"] = f.SearchAnalyzer
	}
	if f.IgnoreAbove > 0 {
		o["ignore_above"] = f.IgnoreAbove
	}
	if f.Format != "" {
		o["format"] = f.Format
	}
	if f.ScalingFactor != 0 {
		o["scaling_factor"] = f.ScalingFactor
	}
	if f.NoIndex {
		o["index"] = false
	}
	if f.Dynamic != "" {
		o["dynamic"] = dynamicJSON(f.Dynamic)
	}
	if f.Type == TypeObject {
		o["properties"] = propsJSON(f.Properties)
	}
	if len(f.Fields) > 0 {
		o["fields"] = propsJSON(f.Fields)
	}
	return o
}

func (f *Field) clone() *Field {
	c := *f
	c.extra = maps.Clone(f.extra)
	c.Properties = cloneProps(f.Properties)
	c.Fields = cloneProps(f.Fields)
	return &c
}

func cloneProps(p map[string]*Field) map[string]*Field {
	if p == nil {
		return nil
	}
	out := make(map[string]*Field, len(p))
	for k, f := range p {
		out[k] = f.clone()
	}
	return out
}

// Stored reports whether the field at path is mapped with store: true.
func (m *Mapping) Stored(path string) bool {
	f := m.Field(path) // a copy
	return f != nil && string(bytes.TrimSpace(f.extra["store"])) == "true"
}

// Clone returns a deep copy that shares nothing with m.
func (m *Mapping) Clone() *Mapping {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return &Mapping{dynamic: m.dynamic, props: cloneProps(m.props), root: m.root.clone(), version: m.version}
}

// Version increases on every change of the mapping (Merge or a dynamic
// field). Callers that persist the mapping compare versions to know when to
// write it again.
func (m *Mapping) Version() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.version
}

// Dynamic returns the root dynamic setting: "true", "false" or "strict".
func (m *Mapping) Dynamic() string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.dynamic
}

// Merge adds the fields and sub-fields of update to m (PUT _mapping).
// Changing an existing field's type or analyzer fails with
// ErrMappingConflict and leaves m unchanged.
func (m *Mapping) Merge(update *Mapping) error {
	if update == m {
		return nil
	}
	upd := update.Clone()
	m.mu.Lock()
	defer m.mu.Unlock()
	merged := cloneProps(m.props)
	if err := mergeProps("", merged, upd.props); err != nil {
		return err
	}
	root, err := m.root.merge(upd.root)
	if err != nil {
		return err
	}
	m.props, m.root = merged, root
	if upd.dynamic != DynamicTrue || m.dynamic == DynamicTrue {
		m.dynamic = upd.dynamic
	}
	m.version++
	return nil
}

// Reset makes m a copy of to (the cluster's committed mapping, after a
// dynamic change of m lost a race with a conflicting one), so that
// documents are parsed against the committed fields again.
func (m *Mapping) Reset(to *Mapping) {
	c := to.Clone()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dynamic, m.props, m.root = c.dynamic, c.props, c.root
	m.version++
}

func mergeProps(prefix string, dst, src map[string]*Field) error {
	for name, sf := range src {
		path := joinPath(prefix, name)
		df, ok := dst[name]
		if !ok {
			dst[name] = sf.clone()
			continue
		}
		if df.Type != sf.Type {
			return fmt.Errorf("%w: mapper [%s] cannot be changed from type [%s] to [%s]", ErrMappingConflict, path, df.Type, sf.Type)
		}
		if df.Analyzer != sf.Analyzer {
			return fmt.Errorf("%w: mapper [%s] has a different [analyzer]: [%s] cannot become [%s]", ErrMappingConflict, path, orStd(df.Analyzer), orStd(sf.Analyzer))
		}
		if df.NoIndex != sf.NoIndex {
			return fmt.Errorf("%w: mapper [%s] cannot change parameter [index]", ErrMappingConflict, path)
		}
		if df.Format != sf.Format && sf.Format != "" {
			return fmt.Errorf("%w: mapper [%s] cannot change parameter [format] from [%s] to [%s]", ErrMappingConflict, path, df.Format, sf.Format)
		}
		if sf.SearchAnalyzer != "" {
			df.SearchAnalyzer = sf.SearchAnalyzer
		}
		if sf.IgnoreAbove != 0 {
			df.IgnoreAbove = sf.IgnoreAbove
		}
		if sf.Dynamic != "" {
			df.Dynamic = sf.Dynamic
		}
		if meta, ok := sf.extra["meta"]; ok {
			// A field's meta is replaced whole, as in Elasticsearch.
			df.extra = maps.Clone(df.extra)
			if df.extra == nil {
				df.extra = map[string]json.RawMessage{}
			}
			df.extra["meta"] = meta
		}
		if df.Type == TypeObject {
			if err := mergeProps(path, df.Properties, sf.Properties); err != nil {
				return err
			}
		}
		if len(sf.Fields) > 0 {
			if df.Fields == nil {
				df.Fields = map[string]*Field{}
			}
			if err := mergeProps(path, df.Fields, sf.Fields); err != nil {
				return err
			}
		}
	}
	return nil
}

func orStd(a string) string {
	if a == "" {
		return "default"
	}
	return a
}

// FieldType returns the ES type of the field at a dotted path
// ("user.name", "title.keyword"), "object" for objects, or "" if unmapped.
func (m *Mapping) FieldType(path string) string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if f := lookup(m.props, path); f != nil {
		return f.Type
	}
	return ""
}

// Field returns a copy of the field at a dotted path, or nil if unmapped.
func (m *Mapping) Field(path string) *Field {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if f := lookup(m.props, path); f != nil {
		return f.clone()
	}
	return nil
}

// FieldPaths returns every mapped leaf and sub-field path, sorted, with its
// type (objects are not listed).
func (m *Mapping) FieldPaths() map[string]string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := map[string]string{}
	var walk func(prefix string, props map[string]*Field)
	walk = func(prefix string, props map[string]*Field) {
		for name, f := range props {
			p := joinPath(prefix, name)
			if f.Type == TypeObject {
				walk(p, f.Properties)
				continue
			}
			out[p] = f.Type
			for sub, sf := range f.Fields {
				out[p+"."+sub] = sf.Type
			}
		}
	}
	walk("", m.props)
	return out
}

func lookup(props map[string]*Field, path string) *Field {
	if f, ok := props[path]; ok {
		return f
	}
	// longest prefix that names a field, then descend.
	for i := len(path) - 1; i > 0; i-- {
		if path[i] != '.' {
			continue
		}
		f, ok := props[path[:i]]
		if !ok {
			continue
		}
		rest := path[i+1:]
		if f.Type == TypeObject {
			if r := lookup(f.Properties, rest); r != nil {
				return r
			}
		}
		if sf, ok := f.Fields[rest]; ok {
			return sf
		}
	}
	return nil
}

// sortedKeys returns the keys of a map in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
