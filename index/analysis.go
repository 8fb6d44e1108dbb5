package index

import (
	"fmt"
	"sort"
	"strings"

	"github.com/blevesearch/bleve/v2/analysis"
	_ "github.com/blevesearch/bleve/v2/analysis/analyzer/custom"  // registers "custom"
	_ "github.com/blevesearch/bleve/v2/analysis/analyzer/keyword" // registers "keyword"
	_ "github.com/blevesearch/bleve/v2/analysis/analyzer/simple"  // registers "simple"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/en"          // registers "en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/whitespace"
	"github.com/blevesearch/bleve/v2/mapping"
)

// Bleve names of the analyzers behind the ES analyzer names. es_standard and
// es_whitespace are custom analyzers defined in every mapping this package
// builds (never in bleve's global registry).
const (
	bleveStandard   = "es_standard"   // unicode tokenizer + lowercase, no stop words (ES "standard")
	bleveWhitespace = "es_whitespace" // whitespace tokenizer only (ES "whitespace")
)

// esAnalyzers maps ES analyzer names to bleve analyzer names.
var esAnalyzers = map[string]string{
	"standard":   bleveStandard,
	"simple":     "simple", // letter tokenizer + lowercase, as ES
	"whitespace": bleveWhitespace,
	"keyword":    "keyword",
	"english":    "en", // possessive, lowercase, English stop words, porter stemmer
}

func analyzerNames() []string {
	names := make([]string, 0, len(esAnalyzers))
	for n := range esAnalyzers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// defineAnalyzers adds the custom ES analyzers to a bleve mapping.
func defineAnalyzers(im *mapping.IndexMappingImpl) error {
	if err := im.AddCustomAnalyzer(bleveStandard, map[string]any{
		"type":          "custom",
		"tokenizer":     unicode.Name,
		"token_filters": []any{lowercase.Name},
	}); err != nil {
		return fmt.Errorf("index: define analyzer %s: %w", bleveStandard, err)
	}
	if err := im.AddCustomAnalyzer(bleveWhitespace, map[string]any{
		"type":      "custom",
		"tokenizer": whitespace.Name,
	}); err != nil {
		return fmt.Errorf("index: define analyzer %s: %w", bleveWhitespace, err)
	}
	return nil
}

// analyzerSet resolves analyzers once; the instances are safe for concurrent
// use (scorch's analysis workers share them the same way).
type analyzerSet map[string]analysis.Analyzer

func newAnalyzerSet() (analyzerSet, error) {
	im := mapping.NewIndexMapping()
	if err := defineAnalyzers(im); err != nil {
		return nil, err
	}
	set := analyzerSet{}
	for es, bl := range esAnalyzers {
		a := im.AnalyzerNamed(bl)
		if a == nil {
			return nil, fmt.Errorf("index: analyzer %s (bleve %s) is not available", es, bl)
		}
		set[es] = a
	}
	return set, nil
}

// BleveAnalyzerName maps an Elasticsearch analyzer name to the name of the
// bleve analyzer that every mapping built by this package defines; false for
// names Weft does not support.
func BleveAnalyzerName(esName string) (string, bool) {
	n, ok := esAnalyzers[esName]
	return n, ok
}

// Analyze runs an analyzer over text and returns the terms in order. The
// analyzer is the named ES analyzer if analyzer is not empty, else the
// search analyzer of the field at path (keyword fields: the whole value;
// unmapped fields: standard).
func (m *Mapping) Analyze(path, analyzer, text string) ([]string, error) {
	tokens, err := m.AnalyzeTokens(path, analyzer, text)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(tokens))
	for k, t := range tokens {
		out[k] = t.Term
	}
	return out, nil
}

// Token is one token an analyzer produced: its term, its byte offsets in
// the text, its position (from 0) and its type as Elasticsearch names it
// ("<ALPHANUM>", "<NUM>", "word").
type Token struct {
	Term       string
	Start, End int
	Position   int
	Type       string
}

// AnalyzerName is the ES name of the analyzer Analyze runs: analyzer when
// given, else the search analyzer of the field at path (keyword fields:
// "keyword"; unmapped fields: "standard").
func (m *Mapping) AnalyzerName(path, analyzer string) string {
	if analyzer != "" {
		return analyzer
	}
	f := m.Field(path)
	switch {
	case f == nil:
		return "standard"
	case f.Type != TypeText:
		return "keyword"
	case f.SearchAnalyzer != "":
		return f.SearchAnalyzer
	case f.Analyzer != "":
		return f.Analyzer
	}
	return "standard"
}

// AnalyzeTokens is Analyze with each token's offsets, position and type
// (the _analyze API).
func (m *Mapping) AnalyzeTokens(path, analyzer, text string) ([]Token, error) {
	m.anOnce.Do(func() { m.an, m.anErr = newAnalyzerSet() })
	if m.anErr != nil {
		return nil, m.anErr
	}
	name := m.AnalyzerName(path, analyzer)
	a, ok := m.an[name]
	if !ok {
		return nil, fmt.Errorf("%w: analyzer [%s] is not supported; supported: %s", ErrInvalidMapping, name, strings.Join(analyzerNames(), ", "))
	}
	tokens := a.Analyze([]byte(text))
	out := make([]Token, len(tokens))
	for k, t := range tokens {
		typ := "word"
		if name == "standard" || name == "english" {
			switch t.Type {
			case analysis.Numeric:
				typ = "<NUM>"
			case analysis.Ideographic:
				typ = "<IDEOGRAPHIC>"
			default:
				typ = "<ALPHANUM>"
			}
		}
		out[k] = Token{Term: string(t.Term), Start: t.Start, End: t.End, Position: t.Position - 1, Type: typ}
	}
	return out, nil
}

// DateFormat returns the format of the date field at path ("" for the
// default strict_date_optional_time||epoch_millis or an unmapped path).
func (m *Mapping) DateFormat(path string) string {
	if f := m.Field(path); f != nil {
		return f.Format
	}
	return ""
}
