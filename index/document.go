package index

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/mapping"
	bindex "github.com/blevesearch/bleve_index_api"
)

// Stored metadata fields of every document.
const (
	// SourceField is the stored field holding the document's original JSON.
	SourceField = "_source"
	// metaField holds seq no, version and primary term (24 bytes, big endian).
	metaField = "_weft_meta"
	// MetaField, asked for in a search request's Fields, gives each hit
	// its seq no, version and primary term (read them with HitMeta).
	MetaField = metaField
)

// Text fields are indexed with term vectors (phrase queries, highlighting)
// but not stored: every value is already in the stored _source, and a hit
// loads its stored fields as a whole, so storing them again would double
// the bytes each returned hit decodes and copies.
const (
	textOpts    = bindex.IndexField | bindex.IncludeTermVectors
	keywordOpts = bindex.IndexField | bindex.DocValues
	valueOpts   = bindex.IndexField | bindex.DocValues
)

// dynAdd is a field that dynamic mapping wants to add.
type dynAdd struct {
	parent []string // object path of the parent ("" root)
	name   string
	field  *Field
}

// docBuilder turns one JSON document into a bleve document against a
// mapping held read-locked by the caller.
type docBuilder struct {
	an   analyzerSet
	id   string
	doc  *document.Document
	adds []dynAdd
	det  detector
}

// parseSource decodes a JSON object, keeping numbers exact.
func parseSource(src []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("%w: failed to parse document: %v", ErrDocParse, err)
	}
	if obj == nil {
		return nil, fmt.Errorf("%w: document must be a JSON object, got null", ErrDocParse)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: unexpected data after the document's JSON object", ErrDocParse)
	}
	return obj, nil
}

// buildDocument maps source onto a new bleve document. If the mapping lacks
// fields that dynamic mapping would add, it adds them (taking the write lock
// briefly) and builds again.
func (m *Mapping) buildDocument(id string, src []byte, an analyzerSet) (*document.Document, error) {
	obj, err := parseSource(src)
	if err != nil {
		return nil, err
	}
	for range 8 {
		b := &docBuilder{an: an, id: id, doc: document.NewDocument(id)}
		m.mu.RLock()
		b.det.dates, b.det.numbers = m.detection()
		err := b.object(obj, nil, m.props, m.dynamic, nil)
		m.mu.RUnlock()
		if err != nil {
			return nil, err
		}
		if len(b.adds) == 0 {
			b.doc.AddField(document.NewTextFieldCustom(SourceField, nil, src, bindex.StoreField, nil))
			return b.doc, nil
		}
		m.addDynamic(b.adds)
	}
	return nil, fmt.Errorf("%w: document %q: dynamic mapping did not settle", ErrDocParse, id)
}

func (m *Mapping) addDynamic(adds []dynAdd) {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := false
	for _, a := range adds {
		props := m.props
		ok := true
		for _, p := range a.parent {
			f := props[p]
			if f == nil || f.Type != TypeObject {
				ok = false
				break
			}
			props = f.Properties
		}
		if !ok {
			continue // parent changed under us; the next build pass retries
		}
		if _, exists := props[a.name]; exists {
			continue
		}
		props[a.name] = a.field
		changed = true
	}
	if changed {
		m.version++
	}
}

func effectiveDynamic(parent, own string) string {
	if own != "" {
		return own
	}
	return parent
}

func (b *docBuilder) object(obj map[string]any, parent []string, props map[string]*Field, dyn string, ap []uint64) error {
	for key, val := range obj {
		if key == "" || strings.HasPrefix(key, ".") || strings.HasSuffix(key, ".") || strings.Contains(key, "..") {
			return fmt.Errorf("%w: field name [%s] in object [%s] is empty or has an empty path element", ErrDocParse, key, strings.Join(parent, "."))
		}
		if i := strings.IndexByte(key, '.'); i > 0 {
			// "a.b": v is the same as "a": {"b": v}.
			val = map[string]any{key[i+1:]: val}
			key = key[:i]
		}
		if err := b.value(key, val, parent, props, dyn, ap); err != nil {
			return err
		}
	}
	return nil
}

func (b *docBuilder) value(key string, val any, parent []string, props map[string]*Field, dyn string, ap []uint64) error {
	if val == nil {
		return nil
	}
	path := strings.Join(append(parent[:len(parent):len(parent)], key), ".")
	if strings.HasPrefix(key, "_") && len(parent) == 0 {
		return fmt.Errorf("%w: field [%s] is a metadata field and cannot be added inside a document; use the index API request parameters", ErrDocParse, key)
	}
	f := props[key]
	if f == nil {
		switch dyn {
		case DynamicFalse:
			return nil
		case DynamicStrict:
			return fmt.Errorf("%w: mapping set to strict, dynamic introduction of [%s] within [%s] is not allowed", ErrStrictDynamic, key, parentName(parent))
		}
		nf := b.det.detect(val)
		if nf != nil {
			b.adds = append(b.adds, dynAdd{parent: parent, name: key, field: nf})
		}
		return nil
	}
	if f.Type == TypeObject {
		childPath := append(parent[:len(parent):len(parent)], key)
		childDyn := effectiveDynamic(dyn, f.Dynamic)
		switch v := val.(type) {
		case map[string]any:
			return b.object(v, childPath, f.Properties, childDyn, ap)
		case []any:
			for i, e := range v {
				if e == nil {
					continue
				}
				o, ok := e.(map[string]any)
				if !ok {
					return fmt.Errorf("%w: object mapping for [%s] tried to parse field [%s] as object, but found a concrete value", ErrDocParse, path, path)
				}
				if err := b.object(o, childPath, f.Properties, childDyn, appendPos(ap, i)); err != nil {
					return err
				}
			}
			return nil
		default:
			return fmt.Errorf("%w: object mapping for [%s] tried to parse field [%s] as object, but found a concrete value", ErrDocParse, path, path)
		}
	}
	return b.leafValues(f, path, val, ap)
}

func parentName(parent []string) string {
	if len(parent) == 0 {
		return "_doc"
	}
	return strings.Join(parent, ".")
}

func appendPos(ap []uint64, i int) []uint64 {
	out := make([]uint64, len(ap)+1)
	copy(out, ap)
	out[len(ap)] = uint64(i)
	return out
}

func (b *docBuilder) leafValues(f *Field, path string, val any, ap []uint64) error {
	if arr, ok := val.([]any); ok {
		for i, e := range arr {
			if e == nil {
				continue
			}
			if err := b.leafValues(f, path, e, appendPos(ap, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if _, ok := val.(map[string]any); ok && !IsRange(f.Type) && f.Type != TypeCompletion {
		return fmt.Errorf("%w: failed to parse field [%s] of type [%s] in document with id '%s': found an object, expected a value", ErrDocParse, path, f.Type, b.id)
	}
	if err := b.leaf(f, path, val, ap); err != nil {
		return err
	}
	for _, sub := range sortedKeys(f.Fields) {
		if err := b.leaf(f.Fields[sub], path+"."+sub, val, ap); err != nil {
			return err
		}
	}
	return nil
}

func (b *docBuilder) parseErr(f *Field, path string, val any, why string) error {
	preview := fmt.Sprint(val)
	if len(preview) > 40 {
		preview = preview[:40] + "..."
	}
	return fmt.Errorf("%w: failed to parse field [%s] of type [%s] in document with id '%s'. Preview of field's value: '%s' (%s)", ErrDocParse, path, f.Type, b.id, preview, why)
}

func (b *docBuilder) leaf(f *Field, path string, val any, ap []uint64) error {
	switch f.Type {
	case TypeText:
		if f.NoIndex {
			return nil // neither indexed nor stored apart from _source
		}
		s := stringify(val)
		an := b.an[f.Analyzer]
		if an == nil {
			an = b.an["standard"]
		}
		b.doc.AddField(document.NewTextFieldCustom(path, ap, []byte(s), textOpts, an))
	case TypeKeyword:
		s := stringify(val)
		if f.NoIndex || (f.IgnoreAbove > 0 && utf8.RuneCountInString(s) > f.IgnoreAbove) {
			return nil
		}
		b.doc.AddField(document.NewTextFieldCustom(path, ap, []byte(s), keywordOpts, b.an["keyword"]))
	case TypeLong, TypeInteger, TypeShort, TypeByte, TypeDouble, TypeFloat, TypeHalfFloat, TypeScaledFloat:
		n, err := toNumber(f.Type, val)
		if err != nil {
			return b.parseErr(f, path, val, err.Error())
		}
		if f.ScalingFactor > 0 {
			// scaled_float keeps round(value × factor): queries see that.
			n = math.Round(n*f.ScalingFactor) / f.ScalingFactor
		}
		if !f.NoIndex {
			b.doc.AddField(document.NewNumericFieldWithIndexingOptions(path, ap, n, valueOpts))
		}
	case TypeBoolean:
		v, err := toBool(val)
		if err != nil {
			return b.parseErr(f, path, val, err.Error())
		}
		if !f.NoIndex {
			b.doc.AddField(document.NewBooleanFieldWithIndexingOptions(path, ap, v, valueOpts))
		}
	case TypeIP:
		addr, err := toIP(val)
		if err != nil {
			return b.parseErr(f, path, val, err.Error())
		}
		if !f.NoIndex {
			b.doc.AddField(document.NewTextFieldCustom(path, ap, []byte(addr.String()), keywordOpts, b.an["keyword"]))
			if addr.Is4() {
				b.doc.AddField(document.NewNumericFieldWithIndexingOptions(IPv4Field(path), ap, float64(ipv4Value(addr)), valueOpts))
			}
		}
	case TypeCompletion:
		inputs, err := completionInputs(val)
		if err != nil {
			return b.parseErr(f, path, val, err.Error())
		}
		for _, in := range inputs {
			b.doc.AddField(document.NewTextFieldCustom(path, ap, []byte(in), keywordOpts, b.an["keyword"]))
		}
	case TypeIntegerRange, TypeLongRange, TypeFloatRange, TypeDoubleRange, TypeDateRange, TypeIPRange:
		return b.rangeValue(f, path, val, ap)
	case TypeDate, TypeDateNanos:
		t, err := toDate(f, val)
		if err != nil {
			return b.parseErr(f, path, val, err.Error())
		}
		if !f.NoIndex {
			df, err := document.NewDateTimeFieldWithIndexingOptions(path, ap, t, time.RFC3339Nano, valueOpts)
			if err != nil {
				return b.parseErr(f, path, val, err.Error())
			}
			b.doc.AddField(df)
		}
	default:
		return fmt.Errorf("%w: field [%s] has unsupported type [%s]", ErrDocParse, path, f.Type)
	}
	return nil
}

func stringify(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

var intRanges = map[string][2]float64{
	TypeLong:    {math.MinInt64, math.MaxInt64},
	TypeInteger: {math.MinInt32, math.MaxInt32},
	TypeShort:   {math.MinInt16, math.MaxInt16},
	TypeByte:    {math.MinInt8, math.MaxInt8},
}

// toNumber coerces a JSON value as ES does: numbers and numeric strings are
// accepted; integer types truncate fractions and check their range.
func toNumber(typ string, v any) (float64, error) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		s = strings.TrimSpace(x)
	default:
		return 0, fmt.Errorf("expected a number")
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
		return 0, fmt.Errorf("not a number")
	}
	if r, ok := intRanges[typ]; ok {
		n = math.Trunc(n)
		if n < r[0] || n > r[1] {
			return 0, fmt.Errorf("value out of range for %s", typ)
		}
	}
	if typ == TypeFloat && math.Abs(n) > math.MaxFloat32 {
		return 0, fmt.Errorf("value out of range for float")
	}
	return n, nil
}

func toBool(v any) (bool, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		switch x {
		case "true":
			return true, nil
		case "false", "":
			return false, nil
		}
	}
	return false, fmt.Errorf("only [true] or [false] are allowed")
}

// defaultDates parses dates of fields without a format.
var defaultDates, _ = ParseDateFormat("")

func toDate(f *Field, v any) (time.Time, error) {
	df := f.dates
	if df == nil {
		df = defaultDates
	}
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case json.Number:
		s = x.String()
	default:
		return time.Time{}, fmt.Errorf("expected a date string or epoch millis")
	}
	if t, ok := df.Parse(s, time.UTC); ok {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("failed to parse date with format [%s]", df)
}

// looksLikeDate is ES date_detection with its default dynamic_date_formats:
// strict_date_optional_time, requiring at least yyyy-MM-dd (ES's other
// default, yyyy/MM/dd, is not detected: such strings stay text).
func looksLikeDate(s string) bool {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	_, ok := defaultDates.Parse(s, time.UTC)
	return ok
}

// detector is dynamic mapping's choice of types: strings that look like
// dates become dates (date_detection, on by default), strings that look
// like numbers become numbers (numeric_detection, off by default).
type detector struct{ dates, numbers bool }

// detect returns the field ES dynamic mapping would create for a value, or
// nil for values that create nothing (null, empty arrays).
func (det detector) detect(v any) *Field {
	switch x := v.(type) {
	case string:
		if det.dates && looksLikeDate(x) {
			return &Field{Type: TypeDate}
		}
		if det.numbers {
			if _, err := strconv.ParseInt(x, 10, 64); err == nil {
				return &Field{Type: TypeLong}
			}
			if _, err := strconv.ParseFloat(x, 64); err == nil {
				return &Field{Type: TypeFloat}
			}
		}
		return &Field{Type: TypeText, Fields: map[string]*Field{
			"keyword": {Type: TypeKeyword, IgnoreAbove: keywordIgnoreAbove},
		}}
	case json.Number:
		if strings.ContainsAny(x.String(), ".eE") {
			return &Field{Type: TypeFloat}
		}
		return &Field{Type: TypeLong}
	case bool:
		return &Field{Type: TypeBoolean}
	case map[string]any:
		f := &Field{Type: TypeObject, Properties: map[string]*Field{}}
		for k, e := range x {
			if k == "" || strings.Contains(k, ".") {
				continue // added on the next pass through the normal path
			}
			if c := det.detect(e); c != nil {
				f.Properties[k] = c
			}
		}
		return f
	case []any:
		for _, e := range x {
			if e != nil {
				return det.detect(e)
			}
		}
	}
	return nil
}

// bleveMapping builds a fresh bleve mapping equivalent to m. With
// searchSide, text fields carry their search_analyzer (bleve analyzes query
// text with the field mapping's analyzer).
func (m *Mapping) bleveMapping(searchSide bool) (*mapping.IndexMappingImpl, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	im := mapping.NewIndexMapping()
	if err := defineAnalyzers(im); err != nil {
		return nil, err
	}
	im.ScoringModel = bindex.BM25Scoring
	im.DefaultAnalyzer = bleveStandard
	im.StoreDynamic = false
	im.DocValuesDynamic = false
	im.IndexDynamic = m.dynamic == DynamicTrue
	im.DefaultMapping = bleveDocMapping(m.props, m.dynamic, searchSide)
	return im, nil
}

// BleveMapping returns a fresh bleve mapping equivalent to this ES mapping,
// for indexing the same JSON documents into a plain bleve index (benchmarks).
func (m *Mapping) BleveMapping() mapping.IndexMapping {
	im, err := m.bleveMapping(false)
	if err != nil {
		// defineAnalyzers only fails if bleve's built-in tokenizers vanish.
		panic(err)
	}
	return im
}

func bleveDocMapping(props map[string]*Field, dyn string, searchSide bool) *mapping.DocumentMapping {
	dm := mapping.NewDocumentMapping()
	dm.Dynamic = dyn == DynamicTrue
	for _, name := range sortedKeys(props) {
		f := props[name]
		if f.Type == TypeObject {
			dm.AddSubDocumentMapping(name, bleveDocMapping(f.Properties, effectiveDynamic(dyn, f.Dynamic), searchSide))
			continue
		}
		prop := mapping.NewDocumentMapping()
		prop.Dynamic = false
		prop.AddFieldMapping(bleveFieldMapping(f, "", searchSide))
		for _, sub := range sortedKeys(f.Fields) {
			sf := f.Fields[sub]
			// Indexed from the parent's value under the name "name.sub"...
			prop.AddFieldMapping(bleveFieldMapping(sf, name+"."+sub, searchSide))
			// ...and found by path "parent.sub" when a query asks for its analyzer.
			lookupDM := mapping.NewDocumentMapping()
			lookupDM.Dynamic = false
			lookupDM.AddFieldMapping(bleveFieldMapping(sf, "", searchSide))
			prop.AddSubDocumentMapping(sub, lookupDM)
		}
		dm.AddSubDocumentMapping(name, prop)
	}
	return dm
}

func bleveFieldMapping(f *Field, name string, searchSide bool) *mapping.FieldMapping {
	var fm *mapping.FieldMapping
	switch f.Type {
	case TypeText:
		fm = mapping.NewTextFieldMapping()
		an := f.Analyzer
		if searchSide && f.SearchAnalyzer != "" {
			an = f.SearchAnalyzer
		}
		if an == "" {
			an = "standard"
		}
		fm.Analyzer = esAnalyzers[an]
		fm.Store = true
		fm.IncludeTermVectors = true
		fm.DocValues = false
	case TypeKeyword, TypeIP, TypeCompletion:
		fm = mapping.NewKeywordFieldMapping()
		fm.Store = false
		fm.DocValues = true
	case TypeBoolean:
		fm = mapping.NewBooleanFieldMapping()
		fm.Store = false
	case TypeDate, TypeDateNanos:
		fm = mapping.NewDateTimeFieldMapping()
		fm.Store = false
	default: // numbers; range fields (their bounds are fields of their own)
		fm = mapping.NewNumericFieldMapping()
		fm.Store = false
	}
	fm.Name = name
	fm.IncludeInAll = false
	if f.NoIndex {
		fm.Index = false
	}
	return fm
}
