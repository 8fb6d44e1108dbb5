package esdsl

import (
	"sort"

	"github.com/weftsearch/weft/index"
)

// Fields tells the translator how each field is mapped. The index layer
// (shard.Manager) implements it; the translator only reads.
//
// FieldType returns the Elasticsearch type of the field at the dotted path
// ("user.name", "title.keyword"): one of "text", "keyword", "long",
// "integer", "short", "byte", "double", "float", "boolean", "date",
// "object", or "" when the path is not mapped. It must be safe for
// concurrent use.
type Fields interface {
	FieldType(path string) string
}

// Analyzer is an optional ability of a Fields value: it runs the analyzer
// that the index uses for the field at path (or the named analyzer when
// analyzer is not empty) over text and returns the terms in order. The
// translator needs it only where the terms must be known before the search
// runs: minimum_should_match on match, multi_match and
// simple_query_string/query_string clauses, match_bool_prefix (and
// multi_match bool_prefix), multi_match cross_fields (which groups fields by
// their terms) and fuzziness AUTO:low,high with thresholds other than 3,6
// (each term gets its own edits). Without it those requests get a 400 that
// says so.
type Analyzer interface {
	AnalyzeField(path, analyzer, text string) ([]string, error)
}

// Field types grouped the way the translator treats them.
func isNumeric(t string) bool {
	switch t {
	case "long", "integer", "short", "byte", "double", "float", "half_float", "scaled_float", "unsigned_long":
		return true
	}
	return false
}

// isValueType reports whether fields of type t hold values (numbers, dates,
// booleans, IP addresses, ranges) rather than terms: they match exactly and
// take no patterns.
func isValueType(t string) bool {
	return isNumeric(t) || t == "date" || t == "boolean" || t == index.TypeIP || index.IsRange(t)
}

func isIntegral(t string) bool {
	switch t {
	case "long", "integer", "short", "byte", "unsigned_long":
		return true
	}
	return false
}

// AnalyzerResolver is an optional ability of a Fields value: it maps an
// Elasticsearch analyzer name given in a query ("standard", "english") to
// the name of the bleve analyzer registered in the index mapping, and
// reports false for names the index does not know. Without it a query that
// names an analyzer gets a 400, because bleve's own analyzer of the same name
// may analyze differently (bleve's "standard" drops stop words).
type AnalyzerResolver interface {
	BleveAnalyzer(name string) (string, bool)
}

// resolveAnalyzer maps an analyzer named in a query to bleve's name.
func (t *translator) resolveAnalyzer(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	r, ok := t.fields.(AnalyzerResolver)
	if !ok {
		return "", argErr("analyzer [%s] cannot be chosen per query on this node; drop \"analyzer\" to use the field's analyzer", name)
	}
	b, ok := r.BleveAnalyzer(name)
	if !ok {
		return "", argErr("analyzer [%s] not found; use one of the index's analyzers (standard, simple, whitespace, keyword, english)", name)
	}
	return b, nil
}

// FieldLister is an optional ability of a Fields value: Paths lists every
// mapped leaf field path (sub-fields such as title.keyword included) with
// its type. With it, query_string, simple_query_string and multi_match
// without fields search every field, as Elasticsearch's default "*" does,
// and field patterns such as "title*" expand; without it those requests
// search the index's default field, and patterns get a 400.
type FieldLister interface {
	Paths() map[string]string
}

// maxFieldExpansion is Elasticsearch's limit on fields a pattern may expand
// to.
const maxFieldExpansion = 1024

// expandFields expands a field pattern ("*", "title*", "user.*") to the
// mapped fields it matches. ok is false when Fields cannot list fields.
func (t *translator) expandFields(pattern string) ([]string, bool, error) {
	l, ok := t.fields.(FieldLister)
	if !ok {
		return nil, false, nil
	}
	var out []string
	for p, typ := range l.Paths() {
		if typ == "object" || typ == "" {
			continue
		}
		if globMatch(pattern, p, false) {
			out = append(out, p)
		}
	}
	if len(out) > maxFieldExpansion {
		return nil, true, argErr("field expansion for [%s] matches too many fields, limit: %d, got: %d", pattern, maxFieldExpansion, len(out))
	}
	sort.Strings(out)
	return out, true, nil
}

// DateFormatter is an optional ability of a Fields value: DateFormat returns
// the mapping's "format" of the date field at path ("" for the default
// strict_date_optional_time||epoch_millis). Queries and aggregations on the
// field parse dates with it unless they name their own format, as
// Elasticsearch does.
type DateFormatter interface {
	DateFormat(path string) string
}

// dateParserFor returns the parser for values of the date field at path:
// format (from the request) wins over the mapping's format.
func (t *translator) dateParserFor(path, format, timeZone string) (*dateParser, error) {
	if format == "" {
		if df, ok := t.fields.(DateFormatter); ok {
			format = df.DateFormat(path)
		}
	}
	return newDateParser(format, timeZone, t.now)
}
