package esdsl

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/blevesearch/bleve/v2/search/query"
)

// Every query object is read the same way: its keys in sorted order (so an
// error names the same key every time), boost and _name handled here, every
// other key by the query's own table of params, and any key not in that
// table refused by name. A query file only says which keys it takes and
// where their values go.

// param reads one parameter's value; where names it in errors
// ("match.operator").
type param func(v json.RawMessage, where string) error

// params maps parameter names to their readers.
type params map[string]param

// common holds the parameters every query accepts.
type common struct {
	boost float64
	name  string // _name: reported in a hit's matched_queries
}

func newCommon() common { return common{boost: 1} }

// read reads one query's parameter object o; where names the query.
func (ps params) read(o object, where string, c *common) error {
	for _, k := range o.sortedKeys() {
		v := o[k]
		at := where + "." + k
		switch k {
		case "boost":
			b, err := asFloat(v, at)
			if err != nil {
				return err
			}
			if b < 0 || math.IsNaN(b) || math.IsInf(b, 0) {
				return argErr("[%s] boost must be a finite number >= 0, got %v", where, b)
			}
			c.boost = b
			continue
		case "_name":
			s, err := asString(v, at)
			if err != nil {
				return err
			}
			c.name = s
			continue
		}
		p, ok := ps[k]
		if !ok {
			return unknownKey(where, k)
		}
		if err := p(v, at); err != nil {
			return err
		}
	}
	return nil
}

// readObject reads body, which must be an object, through ps.
func (ps params) readObject(body json.RawMessage, where string, c *common) error {
	o, err := asObject(body, where)
	if err != nil {
		return err
	}
	return ps.read(o, where, c)
}

// readField reads a field-keyed query, {"FIELD": value} or
// {"FIELD": {"<param>": ..}}: a value that is not an object goes to the
// param named short ("query", "value"); an object's keys go through ps. It
// returns the field name.
func (ps params) readField(body json.RawMessage, where, short string, c *common) (string, error) {
	o, err := asObject(body, where)
	if err != nil {
		return "", err
	}
	field, v, _, err := fieldAndParams(o, where)
	if err != nil {
		return "", err
	}
	if kind(v) != 'o' {
		return field, ps[short](v, where+"."+field)
	}
	p, _ := asObject(v, where+"."+field)
	return field, ps.read(p, where, c)
}

// The readers below store a parameter's value in *dst.

func strParam(dst *string) param {
	return func(v json.RawMessage, where string) (err error) {
		*dst, err = asString(v, where)
		return err
	}
}

// scalarParam accepts a string, number or boolean as text.
func scalarParam(dst *string) param {
	return func(v json.RawMessage, where string) (err error) {
		*dst, err = asScalarString(v, where)
		return err
	}
}

func intParam(dst *int) param {
	return func(v json.RawMessage, where string) (err error) {
		*dst, err = asInt(v, where)
		return err
	}
}

func boolParam(dst *bool) param {
	return func(v json.RawMessage, where string) (err error) {
		*dst, err = asBool(v, where)
		return err
	}
}

// rawParam keeps the value as it is, for the query to interpret.
func rawParam(dst *json.RawMessage) param {
	return func(v json.RawMessage, _ string) error {
		*dst = v
		return nil
	}
}

// checked wraps p with a check of the value it stored.
func checked(p param, check func(where string) error) param {
	return func(v json.RawMessage, where string) error {
		if err := p(v, where); err != nil {
			return err
		}
		return check(where)
	}
}

// ignoredString, ignoredInt and ignoredBool accept a parameter that has
// nothing to do here once its type is checked.
var (
	ignoredString param = func(v json.RawMessage, where string) error { _, err := asString(v, where); return err }
	ignoredInt    param = func(v json.RawMessage, where string) error { _, err := asInt(v, where); return err }
	ignoredBool   param = func(v json.RawMessage, where string) error { _, err := asBool(v, where); return err }
)

// queriesParam translates an array of queries (or a single one).
func (t *translator) queriesParam(dst *[]query.Query) param {
	return func(v json.RawMessage, where string) error {
		arr, err := asArray(v, where, true)
		if err != nil {
			return err
		}
		for i, e := range arr {
			q, err := t.query(e, where+"["+strconv.Itoa(i)+"]")
			if err != nil {
				return err
			}
			*dst = append(*dst, q)
		}
		return nil
	}
}

// queryParam translates one query.
func (t *translator) queryParam(dst *query.Query) param {
	return func(v json.RawMessage, where string) (err error) {
		*dst, err = t.query(v, where)
		return err
	}
}

// apply sets c's boost on q (1 leaves q as it is) and records a named
// query for matched_queries.
func (t *translator) apply(q query.Query, c common) query.Query {
	q = setBoost(q, c.boost)
	if c.name != "" {
		t.named = append(t.named, namedQuery{name: c.name, q: q})
	}
	return q
}
