package esdsl

import (
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/weftsearch/weft/index"
)

func (t *translator) term(body json.RawMessage) (query.Query, error) {
	c := newCommon()
	var value json.RawMessage
	var ci bool
	ps := params{"value": rawParam(&value), "case_insensitive": boolParam(&ci), "rewrite": ignoredString}
	field, err := ps.readField(body, "term", "value", &c)
	if err != nil {
		return nil, err
	}
	if value == nil {
		return nil, parsingErr("[term] query for field [%s] needs [value]", field)
	}
	if ft := t.fieldType(field); ci && kind(value) == 's' && (ft == "keyword" || ft == "text") {
		s, _ := asString(value, "term."+field)
		q := query.NewRegexpQuery(foldPattern(s, false, false))
		q.SetField(field)
		return t.apply(q, c), nil
	}
	q, err := t.termValue(field, value, "term")
	if err != nil {
		return nil, err
	}
	return t.apply(q, c), nil
}

// foldPattern returns a regular expression matching s in any letter case:
// literally, or with * and ? as wildcards, or as a prefix (bleve matches a
// regular expression against the whole term).
func foldPattern(s string, wildcard, prefix bool) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case wildcard && r == '*':
			b.WriteString(".*")
		case wildcard && r == '?':
			b.WriteByte('.')
		case unicode.ToLower(r) != unicode.ToUpper(r):
			b.WriteByte('[')
			b.WriteRune(unicode.ToLower(r))
			b.WriteRune(unicode.ToUpper(r))
			b.WriteByte(']')
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	if prefix {
		b.WriteString(".*")
	}
	return b.String()
}

// termValue builds an exact-value query for one JSON scalar on field.
func (t *translator) termValue(field string, v json.RawMessage, where string) (query.Query, error) {
	k := kind(v)
	if k == 'o' || k == 'a' || k == 'z' || k == 0 {
		return nil, parsingErr("[%s] value for field [%s] must be a string, number or boolean, got %s", where, field, kindName(k))
	}
	s, err := asScalarString(v, where+"."+field)
	if err != nil {
		return nil, err
	}
	if field == "_id" {
		return query.NewDocIDQuery([]string{s}), nil
	}
	return t.exactValue(field, t.fieldType(field), s, k == 'n')
}

// exactValue builds the query that matches documents whose field holds
// exactly value, by the field's type.
func (t *translator) exactValue(field, ft, value string, isNumber bool) (query.Query, error) {
	switch {
	case field == "_id":
		return query.NewDocIDQuery([]string{value}), nil
	case field == "_index" || field == "_routing" || field == "_source":
		return nil, argErr("querying the metadata field [%s] is not supported; use the index name in the URL", field)
	case ft == index.TypeIP:
		return t.ipValue(field, value)
	case index.IsRange(ft):
		raw := jsonString(value)
		if isNumber {
			raw = json.RawMessage(value)
		}
		return t.rangeFieldTerm(field, ft, raw)
	case isNumeric(ft):
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, shardErr("failed to create query: [%s] is not a number, but field [%s] is of type [%s]", value, field, ft)
		}
		if isIntegral(ft) && f != math.Trunc(f) {
			return query.NewMatchNoneQuery(), nil
		}
		incl := true
		q := query.NewNumericRangeInclusiveQuery(&f, &f, &incl, &incl)
		q.SetField(field)
		return q, nil
	case ft == "date":
		dp, err := t.dateParserFor(field, "", "")
		if err != nil {
			return nil, err
		}
		tm, err := dp.parse(value, isNumber, false)
		if err != nil {
			return nil, err
		}
		if err := checkDateRange(tm, field); err != nil {
			return nil, err
		}
		incl := true
		q := query.NewDateRangeInclusiveQuery(tm, tm, &incl, &incl)
		q.SetField(field)
		return q, nil
	case ft == "boolean":
		var b bool
		switch value {
		case "true":
			b = true
		case "false", "":
		default:
			return nil, shardErr("failed to create query: can't parse boolean value [%s] for field [%s], expected [true] or [false]", value, field)
		}
		q := query.NewBoolFieldQuery(b)
		q.SetField(field)
		return q, nil
	}
	q := query.NewTermQuery(value)
	q.SetField(field)
	return q, nil
}
