package esdsl

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/weftsearch/weft/index/scoring"
)

// The query_string and simple_query_string queries are parsed here with
// Lucene's classic syntax (field:term, "phrases", AND/OR/NOT, +/-, groups,
// ranges [a TO b], >=x, term~N, term^N, wildcards, /regexp/, _exists_:f),
// then built from the same per-field builders as the DSL queries, so field
// types are honoured. bleve's own query-string syntax is not used: it reads
// AND and OR as terms.

type qsOptions struct {
	fields       []string // field names with their boosts
	boosts       []float64
	match        matchOpts
	simple       bool
	lowerWild    bool
	allowLeading bool
	// sumFields: a term over several fields scores the sum of the fields'
	// scores (most_fields, and always for simple_query_string, as in
	// Elasticsearch); otherwise the best field's plus tie times the others.
	sumFields bool
	tie       float64
	// msm is minimum_should_match, applied to the top-level optional
	// clauses as Elasticsearch does ("" for the default).
	msm string
}

const (
	occurShould = iota
	occurMust
	occurMustNot
)

type qsClause struct {
	occur int // Lucene classic occurrence (query_string)
	conj  int // operator written before the clause (simple_query_string)
	neg   bool
	node  qsNode
}

type qsNode struct {
	group     []qsClause // non-nil for (...) groups
	field     string     // "" = the default fields
	text      string
	phrase    bool
	regex     bool
	isRange   bool
	lo, hi    string
	inclLo    bool
	inclHi    bool
	fuzzy     bool
	fuzziness int
	autoFuzz  bool
	slop      int
	boost     float64
	exists    bool
}

func (t *translator) queryString(body json.RawMessage, simple bool) (query.Query, error) {
	name := "query_string"
	if simple {
		name = "simple_query_string"
	}
	c := newCommon()
	opts := qsOptions{simple: simple, sumFields: simple, match: matchOpts{boost: 1}, allowLeading: true}
	var text, typ string
	var fields []string
	hasQuery := false
	ps := opts.match.params()
	ps["query"] = func(v json.RawMessage, where string) (err error) {
		hasQuery = true
		text, err = asScalarString(v, where)
		return err
	}
	ps["default_field"] = func(v json.RawMessage, where string) error {
		s, err := asString(v, where)
		fields = append(fields, s)
		return err
	}
	ps["fields"] = stringsParam(&fields)
	ps["analyze_wildcard"] = boolParam(&opts.lowerWild)
	ps["allow_leading_wildcard"] = boolParam(&opts.allowLeading)
	if simple {
		var flags string
		ps["flags"] = checked(scalarParam(&flags), func(string) error {
			if flags != "ALL" && flags != "NONE" && flags != "" && flags != "-1" {
				return argErr("[simple_query_string] flags [%s] are not supported; drop flags (ALL is used)", flags)
			}
			return nil
		})
	}
	var slop int
	ps["phrase_slop"] = checked(intParam(&slop), func(string) error {
		if slop != 0 {
			return argErr("[%s] phrase_slop %d is not supported (bleve matches phrases exactly); use 0", name, slop)
		}
		return nil
	})
	ps["rewrite"] = ignoredString
	for _, k := range []string{"quote_field_suffix", "time_zone", "quote_analyzer"} {
		ps[k] = checked(ignoredString, func(string) error { return argErr("[%s] %s is not supported; drop it", name, k) })
	}
	ps["type"] = checked(strParam(&typ), func(string) error {
		if typ != "best_fields" && typ != "most_fields" {
			return argErr("[%s] type [%s] is not supported; use best_fields or most_fields", name, typ)
		}
		opts.sumFields = opts.sumFields || typ == "most_fields"
		return nil
	})
	ps["tie_breaker"] = tieBreakerParam(&opts.tie)
	ps["enable_position_increments"] = ignoredBool
	ps["escape"] = ignoredBool
	ps["max_determinized_states"] = ignoredInt
	ps["minimum_should_match"] = checked(scalarParam(&opts.msm), func(string) error {
		_, err := minimumShouldMatch(opts.msm, 1)
		return err
	})
	if err := ps.readObject(body, name, &c); err != nil {
		return nil, err
	}
	if !hasQuery {
		return nil, parsingErr("[%s] needs [query]", name)
	}
	for _, f := range fields {
		if err := opts.addField(f); err != nil {
			return nil, err
		}
	}
	opts.match.boost = c.boost
	q, err := t.parseQueryString(text, opts)
	if err != nil {
		return nil, err
	}
	return t.apply(q, common{boost: 1, name: c.name}), nil
}

func (o *qsOptions) addField(spec string) error {
	f, b, err := fieldBoost(spec)
	if err != nil {
		return err
	}
	if f == "_all" {
		f = "*"
	}
	o.fields = append(o.fields, f)
	o.boosts = append(o.boosts, b)
	return nil
}

// resolveFields expands field patterns in opts (an empty list means "*", as
// Elasticsearch's index.query.default_field). Expanding "*" makes the query
// lenient, as in Elasticsearch. Without a FieldLister, "*" becomes bleve's
// default search field ("").
func (t *translator) resolveFields(opts *qsOptions) error {
	if len(opts.fields) == 0 {
		opts.fields, opts.boosts = []string{"*"}, []float64{1}
	}
	var fields []string
	var boosts []float64
	for i, f := range opts.fields {
		if !strings.Contains(f, "*") {
			fields, boosts = append(fields, f), append(boosts, opts.boosts[i])
			continue
		}
		expanded, ok, err := t.expandFields(f)
		if err != nil {
			return err
		}
		if !ok {
			if f != "*" {
				return argErr("field pattern [%s] cannot be expanded on this node; name the fields", f)
			}
			fields, boosts = append(fields, ""), append(boosts, opts.boosts[i])
			continue
		}
		if f == "*" {
			opts.match.lenient = true
		}
		for _, e := range expanded {
			fields, boosts = append(fields, e), append(boosts, opts.boosts[i])
		}
	}
	if len(fields) > maxFieldExpansion {
		return argErr("the query names %d fields, more than the %d allowed", len(fields), maxFieldExpansion)
	}
	opts.fields, opts.boosts = fields, boosts
	return nil
}

// parseQueryString parses text with opts and builds the bleve query; it is
// also used for the q= URL parameter.
func (t *translator) parseQueryString(text string, opts qsOptions) (query.Query, error) {
	if len(text) > 32768 {
		return nil, argErr("query string is %d bytes, more than the 32768 allowed", len(text))
	}
	// Terms become regexps and dictionary keys: keep them valid UTF-8 (a
	// q= URL parameter can carry any bytes).
	text = strings.ToValidUTF8(text, "\uFFFD")
	p := &qsParser{in: []rune(text), simple: opts.simple}
	clauses, err := p.parseClauses(0, opts.match.operatorAnd)
	if err != nil {
		if opts.simple {
			// simple_query_string never fails on syntax: fall back to the
			// whole text as terms, as Elasticsearch does.
			clauses = []qsClause{{occur: occurShould, node: qsNode{text: text, boost: 1}}}
		} else {
			return nil, err
		}
	}
	if err := t.resolveFields(&opts); err != nil {
		return nil, err
	}
	q, err := t.buildClauses(clauses, opts)
	if err != nil {
		return nil, err
	}
	return setBoost(q, opts.match.boost), nil
}

type qsParser struct {
	in     []rune
	pos    int
	simple bool
}

func (p *qsParser) errf(format string, args ...any) error {
	return &Error{Kind: ErrInvalidRequest, Type: "query_shard_exception",
		Reason: "Failed to parse query [" + string(p.in) + "]: " + fmt.Sprintf(format, args...)}
}

func (p *qsParser) skipSpace() {
	for p.pos < len(p.in) && unicode.IsSpace(p.in[p.pos]) {
		p.pos++
	}
}

func (p *qsParser) peekWord(w string) bool {
	r := []rune(w)
	if p.pos+len(r) > len(p.in) || string(p.in[p.pos:p.pos+len(r)]) != w {
		return false
	}
	end := p.pos + len(r)
	return end == len(p.in) || unicode.IsSpace(p.in[end]) || p.in[end] == '(' || p.in[end] == ')'
}

const (
	conjNone = iota
	conjAnd
	conjOr
)

// parseClauses parses until the end or a closing parenthesis, applying
// Lucene's classic rules for combining AND/OR/NOT with the default operator.
func (p *qsParser) parseClauses(depth int, defaultAnd bool) ([]qsClause, error) {
	if depth > 20 {
		return nil, p.errf("groups nested deeper than 20")
	}
	var clauses []qsClause
	for {
		p.skipSpace()
		if p.pos >= len(p.in) {
			break
		}
		if p.in[p.pos] == ')' {
			if depth == 0 {
				if p.simple {
					p.pos++ // simple_query_string ignores a stray ')'
					continue
				}
				return nil, p.errf("unbalanced ')' at position %d", p.pos)
			}
			break
		}
		conj := conjNone
		switch {
		case !p.simple && (p.peekWord("AND") || p.peekWord("&&")):
			conj = conjAnd
		case !p.simple && (p.peekWord("OR") || p.peekWord("||")):
			conj = conjOr
		case p.simple && p.in[p.pos] == '+':
			conj = conjAnd
		case p.simple && p.in[p.pos] == '|':
			conj = conjOr
		}
		if conj != conjNone {
			if len(clauses) == 0 {
				if !p.simple {
					return nil, p.errf("operator at position %d has nothing on its left", p.pos)
				}
			}
			if p.simple {
				p.pos++
			} else if p.in[p.pos] == 'A' || p.in[p.pos] == 'O' {
				p.pos += map[rune]int{'A': 3, 'O': 2}[p.in[p.pos]]
			} else {
				p.pos += 2
			}
			p.skipSpace()
			if p.pos >= len(p.in) {
				if p.simple {
					break
				}
				return nil, p.errf("operator at the end of the query has nothing on its right")
			}
		}
		mod := occurShould
		required := false
		switch {
		case !p.simple && p.peekWord("NOT"):
			mod = occurMustNot
			p.pos += 3
		case p.in[p.pos] == '-':
			mod = occurMustNot
			p.pos++
		case !p.simple && p.in[p.pos] == '!':
			mod = occurMustNot
			p.pos++
		case !p.simple && p.in[p.pos] == '+':
			required = true
			p.pos++
		}
		p.skipSpace()
		node, err := p.parsePrimary(depth, defaultAnd)
		if err != nil {
			return nil, err
		}
		// Lucene's addClause.
		if conj == conjAnd && len(clauses) > 0 && clauses[len(clauses)-1].occur != occurMustNot {
			clauses[len(clauses)-1].occur = occurMust
		}
		if conj == conjOr && defaultAnd && len(clauses) > 0 && clauses[len(clauses)-1].occur != occurMustNot {
			clauses[len(clauses)-1].occur = occurShould
		}
		occur := occurShould
		switch {
		case mod == occurMustNot:
			occur = occurMustNot
		case required:
			occur = occurMust
		case !defaultAnd && conj == conjAnd:
			occur = occurMust
		case defaultAnd && conj != conjOr:
			occur = occurMust
		}
		clauses = append(clauses, qsClause{occur: occur, conj: conj, neg: mod == occurMustNot, node: node})
	}
	if len(clauses) == 0 && depth == 0 && !p.simple {
		return nil, nil
	}
	return clauses, nil
}

func isSpecial(r rune, simple bool) bool {
	if unicode.IsSpace(r) {
		return true
	}
	if simple {
		return strings.ContainsRune(`()"|+~`, r)
	}
	return strings.ContainsRune(`()"[]{}:^~/`, r)
}

// readTerm reads a bare term, honouring backslash escapes; wild reports an
// unescaped * or ?.
func (p *qsParser) readTerm() (string, bool) {
	var b strings.Builder
	wild := false
	for p.pos < len(p.in) {
		r := p.in[p.pos]
		if r == '\\' && p.pos+1 < len(p.in) {
			b.WriteRune(p.in[p.pos+1])
			p.pos += 2
			continue
		}
		if isSpecial(r, p.simple) {
			break
		}
		if r == '*' || r == '?' {
			wild = true
		}
		b.WriteRune(r)
		p.pos++
	}
	return b.String(), wild
}

func (p *qsParser) parsePrimary(depth int, defaultAnd bool) (qsNode, error) {
	if p.pos >= len(p.in) {
		return qsNode{}, p.errf("expected a term at the end of the query")
	}
	field := ""
	if !p.simple && p.in[p.pos] != '(' && p.in[p.pos] != '"' && p.in[p.pos] != '/' {
		save := p.pos
		name, _ := p.readTerm()
		if name != "" && p.pos < len(p.in) && p.in[p.pos] == ':' {
			field = name
			p.pos++
			p.skipSpace()
		} else {
			p.pos = save
		}
	}
	node, err := p.parseValue(depth, defaultAnd, field)
	if err != nil {
		return qsNode{}, err
	}
	node.boost = 1
	// Postfix modifiers: ~N and ^N in any order.
	for p.pos < len(p.in) {
		switch p.in[p.pos] {
		case '~':
			p.pos++
			num := p.readNumber()
			if node.phrase {
				if num != "" {
					n, err := strconv.Atoi(num)
					if err != nil {
						return qsNode{}, p.errf("slop [%s] must be an integer", num)
					}
					node.slop = n
				}
				continue
			}
			node.fuzzy = true
			if num == "" {
				node.autoFuzz = true
			} else {
				f, err := strconv.ParseFloat(num, 64)
				if err != nil || f < 0 || f > 2 {
					return qsNode{}, p.errf("fuzziness [%s] must be 0, 1 or 2", num)
				}
				node.fuzziness = int(f)
			}
			continue
		case '^':
			if p.simple {
				return node, nil
			}
			p.pos++
			num := p.readNumber()
			b, err := strconv.ParseFloat(num, 64)
			if err != nil || b < 0 {
				return qsNode{}, p.errf("boost [%s] must be a number >= 0", num)
			}
			node.boost = b
			continue
		}
		break
	}
	return node, nil
}

func (p *qsParser) readNumber() string {
	start := p.pos
	for p.pos < len(p.in) && (unicode.IsDigit(p.in[p.pos]) || p.in[p.pos] == '.') {
		p.pos++
	}
	return string(p.in[start:p.pos])
}

func (p *qsParser) parseValue(depth int, defaultAnd bool, field string) (qsNode, error) {
	if p.pos >= len(p.in) {
		return qsNode{}, p.errf("field [%s] has no value after ':'", field)
	}
	r := p.in[p.pos]
	switch {
	case r == '(':
		p.pos++
		group, err := p.parseClauses(depth+1, defaultAnd)
		if err != nil {
			return qsNode{}, err
		}
		if p.pos >= len(p.in) || p.in[p.pos] != ')' {
			if !p.simple {
				return qsNode{}, p.errf("missing ')'")
			}
		} else {
			p.pos++
		}
		if group == nil {
			group = []qsClause{}
		}
		if field != "" {
			setGroupField(group, field)
		}
		return qsNode{group: group}, nil
	case r == '"':
		p.pos++
		var b strings.Builder
		for p.pos < len(p.in) && p.in[p.pos] != '"' {
			if p.in[p.pos] == '\\' && p.pos+1 < len(p.in) {
				p.pos++
			}
			b.WriteRune(p.in[p.pos])
			p.pos++
		}
		if p.pos >= len(p.in) {
			if !p.simple {
				return qsNode{}, p.errf("missing closing quote")
			}
		} else {
			p.pos++
		}
		return qsNode{field: field, text: b.String(), phrase: true}, nil
	case !p.simple && r == '/':
		p.pos++
		var b strings.Builder
		for p.pos < len(p.in) && p.in[p.pos] != '/' {
			if p.in[p.pos] == '\\' && p.pos+1 < len(p.in) && p.in[p.pos+1] == '/' {
				p.pos++
			}
			b.WriteRune(p.in[p.pos])
			p.pos++
		}
		if p.pos >= len(p.in) {
			return qsNode{}, p.errf("missing closing / of a regular expression")
		}
		p.pos++
		return qsNode{field: field, text: b.String(), regex: true}, nil
	case !p.simple && (r == '[' || r == '{'):
		p.pos++
		p.skipSpace()
		lo, _ := p.readTerm()
		p.skipSpace()
		if !p.peekWord("TO") {
			return qsNode{}, p.errf("range needs TO, e.g. [1 TO 5]")
		}
		p.pos += 2
		p.skipSpace()
		hi, _ := p.readTerm()
		p.skipSpace()
		if p.pos >= len(p.in) || (p.in[p.pos] != ']' && p.in[p.pos] != '}') {
			return qsNode{}, p.errf("range needs a closing ] or }")
		}
		n := qsNode{field: field, isRange: true, lo: lo, hi: hi, inclLo: r == '[', inclHi: p.in[p.pos] == ']'}
		p.pos++
		return n, nil
	case !p.simple && (r == '>' || r == '<'):
		p.pos++
		incl := false
		if p.pos < len(p.in) && p.in[p.pos] == '=' {
			incl = true
			p.pos++
		}
		v, _ := p.readTerm()
		if v == "" {
			return qsNode{}, p.errf("%c needs a value", r)
		}
		if r == '>' {
			return qsNode{field: field, isRange: true, lo: v, hi: "*", inclLo: incl, inclHi: true}, nil
		}
		return qsNode{field: field, isRange: true, lo: "*", hi: v, inclLo: true, inclHi: incl}, nil
	}
	text, _ := p.readTerm()
	if text == "" {
		if p.simple {
			p.pos++ // skip a stray special character
			return qsNode{group: []qsClause{}}, nil
		}
		return qsNode{}, p.errf("unexpected %q at position %d", string(r), p.pos)
	}
	if field == "_exists_" {
		return qsNode{field: text, exists: true}, nil
	}
	return qsNode{field: field, text: text}, nil
}

func setGroupField(group []qsClause, field string) {
	for i := range group {
		n := &group[i].node
		if n.group != nil {
			setGroupField(n.group, field)
		} else if n.field == "" {
			n.field = field
		}
	}
}

func (t *translator) buildClauses(clauses []qsClause, opts qsOptions) (query.Query, error) {
	if clauses == nil {
		return query.NewMatchNoneQuery(), nil
	}
	if opts.simple {
		return t.buildSimple(clauses, opts)
	}
	msm := opts.msm
	opts.msm = "" // groups are not top level
	var must, should, mustNot []query.Query
	for _, c := range clauses {
		q, err := t.buildNode(c.node, opts)
		if err != nil {
			return nil, err
		}
		switch c.occur {
		case occurMust:
			must = append(must, q)
		case occurMustNot:
			mustNot = append(mustNot, q)
		default:
			should = append(should, q)
		}
	}
	min := 0
	if len(must) == 0 && len(should) > 0 {
		min = 1
	}
	if msm != "" && len(should) > 0 {
		var err error
		if min, err = minimumShouldMatch(msm, len(should)); err != nil {
			return nil, err
		}
	}
	if len(must) == 0 && len(mustNot) == 0 && len(should) == 1 && min <= 1 {
		return should[0], nil
	}
	if len(should) == 0 && len(mustNot) == 0 && len(must) == 1 {
		return must[0], nil
	}
	if len(must) == 0 && len(should) == 0 && len(mustNot) > 0 {
		must = []query.Query{query.NewMatchAllQuery()}
	}
	return buildBool(must, should, mustNot, nil, min), nil
}

// buildSimple combines simple_query_string clauses as Lucene's
// SimpleQueryParser does: left to right, a change of operator wraps what
// came before, adjacent clauses take the default operator, and -x means
// "every document without x" combined like any other clause (so with the
// default operator OR, "fox -dog" also matches documents without dog).
func (t *translator) buildSimple(clauses []qsClause, opts qsOptions) (query.Query, error) {
	msm := opts.msm
	opts.msm = "" // groups are not top level
	def := conjOr
	if opts.match.operatorAnd {
		def = conjAnd
	}
	combine := func(members []query.Query, op int) query.Query {
		switch {
		case len(members) == 1:
			return members[0]
		case op == conjAnd:
			return query.NewConjunctionQuery(members)
		}
		return query.NewDisjunctionQuery(members)
	}
	var members []query.Query
	op := conjNone
	for i, c := range clauses {
		q, err := t.buildNode(c.node, opts)
		if err != nil {
			return nil, err
		}
		if c.neg {
			q = query.NewBooleanQuery([]query.Query{query.NewMatchAllQuery()}, nil, []query.Query{q})
		}
		if i == 0 {
			members = []query.Query{q}
			continue
		}
		cop := c.conj
		if cop == conjNone {
			cop = def
		}
		if op == conjNone || op == cop {
			members = append(members, q)
		} else {
			members = []query.Query{combine(members, op), q}
		}
		op = cop
	}
	if len(members) == 0 {
		return query.NewMatchNoneQuery(), nil
	}
	q := combine(members, op)
	if d, ok := q.(*query.DisjunctionQuery); ok && msm != "" {
		// Only optional clauses take minimum_should_match (Lucene's
		// BooleanQuery); conjunctions and single terms ignore it.
		min, err := minimumShouldMatch(msm, len(d.Disjuncts))
		if err != nil {
			return nil, err
		}
		if min > len(d.Disjuncts) {
			return query.NewMatchNoneQuery(), nil
		}
		d.SetMin(float64(min))
	}
	return q, nil
}

func (t *translator) buildNode(n qsNode, opts qsOptions) (query.Query, error) {
	if n.group != nil {
		q, err := t.buildClauses(n.group, opts)
		if err != nil {
			return nil, err
		}
		return setBoost(q, n.boost), nil
	}
	if err := checkMetaField(n.field, "query_string"); err != nil {
		return nil, err
	}
	if n.exists {
		return t.existsField(n.field)
	}
	if n.text == "*" && (n.field == "" || n.field == "*") && !n.phrase && !n.regex && !n.isRange {
		return setBoost(query.NewMatchAllQuery(), n.boost), nil
	}
	fields, boosts := opts.fields, opts.boosts
	if n.field != "" {
		fields, boosts = []string{n.field}, []float64{1}
		if strings.Contains(n.field, "*") {
			sub := qsOptions{fields: fields, boosts: boosts, match: opts.match}
			if err := t.resolveFields(&sub); err != nil {
				return nil, err
			}
			fields, boosts = sub.fields, sub.boosts
		}
	}
	clauses := make([]query.Query, 0, len(fields))
	for i, f := range fields {
		q, err := t.buildLeaf(n, f, opts)
		if err != nil {
			if opts.match.lenient || opts.simple {
				continue
			}
			return nil, err
		}
		clauses = append(clauses, setBoost(q, boosts[i]*n.boost))
	}
	switch len(clauses) {
	case 0:
		return query.NewMatchNoneQuery(), nil
	case 1:
		return clauses[0], nil
	}
	if opts.sumFields {
		return query.NewDisjunctionQuery(clauses), nil
	}
	return scoring.NewDisMax(clauses, opts.tie), nil
}

func (t *translator) buildLeaf(n qsNode, field string, opts qsOptions) (query.Query, error) {
	ft := t.fieldType(field)
	textual := !isValueType(ft)
	lower := func(s string) string {
		if ft == "keyword" {
			return s
		}
		return strings.ToLower(s)
	}
	switch {
	case n.isRange:
		rb := rangeBounds{inclLower: n.inclLo, inclUpp: n.inclHi}
		if n.lo != "*" {
			rb.lower = jsonString(n.lo)
		}
		if n.hi != "*" {
			rb.upper = jsonString(n.hi)
		}
		return t.buildRange(field, rb)
	case n.phrase:
		return t.buildPhrase(field, n.text, opts.match.analyzer, n.slop, false, 1)
	case n.regex:
		if !textual {
			return nil, argErr("regular expression on field [%s] of type [%s]: only text and keyword fields take one", field, ft)
		}
		if err := checkRegexp(n.text); err != nil {
			return nil, err
		}
		q := query.NewRegexpQuery(n.text)
		q.SetField(field)
		return q, nil
	case strings.ContainsAny(n.text, "*?") && textual && !(opts.simple && !strings.HasSuffix(n.text, "*")):
		if !opts.allowLeading && (n.text[0] == '*' || n.text[0] == '?') {
			return nil, argErr("leading wildcard in [%s] is not allowed (allow_leading_wildcard is false)", n.text)
		}
		text := n.text
		if ft == "text" || ft == "" || opts.lowerWild {
			text = lower(text)
		}
		if i := strings.IndexAny(text, "*?"); i == len(text)-1 && text[i] == '*' {
			q := query.NewPrefixQuery(text[:i])
			q.SetField(field)
			return q, nil
		}
		q := query.NewWildcardQuery(text)
		q.SetField(field)
		return q, nil
	case n.fuzzy && textual:
		q := query.NewFuzzyQuery(lower(n.text))
		q.SetField(field)
		if n.autoFuzz {
			q.SetAutoFuzziness(true)
		} else {
			q.SetFuzziness(n.fuzziness)
		}
		return q, nil
	}
	m := opts.match
	m.text, m.boost, m.msm = n.text, 1, ""
	return t.buildMatch(field, m)
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
