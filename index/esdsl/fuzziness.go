package esdsl

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/search/query"
)

// fuzziness is an Elasticsearch fuzziness value: a fixed number of edits
// (0, 1 or 2), or AUTO with its two term-length thresholds (AUTO is
// AUTO:3,6). Under AUTO:low,high a term shorter than low code points gets
// no edits, one shorter than high gets one, any other two, as
// Elasticsearch's Fuzziness.asDistance decides.
type fuzziness struct {
	edits     int
	auto      bool
	low, high int
}

// Elasticsearch's AUTO thresholds, which bleve's own auto fuzziness also
// uses (counting bytes rather than code points).
const (
	autoLowDefault  = 3
	autoHighDefault = 6
)

// autoFuzziness is plain AUTO.
var autoFuzziness = fuzziness{auto: true, low: autoLowDefault, high: autoHighDefault}

// enabled reports whether the fuzziness allows any edit at all.
func (f fuzziness) enabled() bool { return f.auto || f.edits > 0 }

// defaultAuto reports whether f is AUTO with the default thresholds, which
// bleve's auto fuzziness applies at search time on its own.
func (f fuzziness) defaultAuto() bool {
	return f.auto && f.low == autoLowDefault && f.high == autoHighDefault
}

// editsFor returns the edits f allows for term.
func (f fuzziness) editsFor(term string) int {
	if !f.auto {
		return f.edits
	}
	switch n := utf8.RuneCountInString(term); {
	case n < f.low:
		return 0
	case n < f.high:
		return 1
	default:
		return 2
	}
}

// fuzzyTerm returns the query for term under f: a term query when f allows
// no edit for it, a fuzzy query otherwise.
func (f fuzziness) fuzzyTerm(field, term string, prefix int) query.Query {
	edits := f.editsFor(term)
	if edits == 0 {
		tq := query.NewTermQuery(term)
		tq.SetField(field)
		return tq
	}
	fq := query.NewFuzzyQuery(term)
	fq.SetField(field)
	fq.SetFuzziness(edits)
	fq.SetPrefix(prefix)
	return fq
}

// parseFuzziness reads a fuzziness value as Elasticsearch's
// Fuzziness.fromString does, with its error texts: "AUTO", "AUTO:low,high"
// (case-insensitive), or a whole number of edits 0, 1 or 2 ("1", "1.0").
func parseFuzziness(s string) (fuzziness, error) {
	if s == "" {
		return fuzziness{}, argErr("fuzziness cannot be null or empty.")
	}
	u := strings.ToUpper(s)
	if u == "AUTO" {
		return autoFuzziness, nil
	}
	if rest, ok := strings.CutPrefix(u, "AUTO:"); ok {
		return parseCustomAuto(s, rest)
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 32)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return fuzziness{}, argErr("fuzziness cannot be [%s].", s)
	}
	if f != math.Trunc(f) {
		return fuzziness{}, argErr("fuzziness needs to be one of 0.0, 1.0 or 2.0 but was %v", f)
	}
	if f < 0 || f > 2 {
		return fuzziness{}, argErr("Valid edit distances are [0, 1, 2] but was [%d]", int64(f))
	}
	return fuzziness{edits: int(f)}, nil
}

// parseCustomAuto reads the "low,high" of AUTO:low,high (rest); s is the
// whole value, for errors.
func parseCustomAuto(s, rest string) (fuzziness, error) {
	parts := strings.Split(rest, ",")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1] // as Java's String.split drops them
	}
	if len(parts) != 2 {
		return fuzziness{}, invalid("parse_exception", "failed to find low and high distance values")
	}
	low, err1 := strconv.ParseInt(parts[0], 10, 32)
	high, err2 := strconv.ParseInt(parts[1], 10, 32)
	if err1 != nil || err2 != nil {
		return fuzziness{}, invalid("parse_exception", `failed to parse [`+s+`] as a "auto:int,int"`)
	}
	if low < 0 || high < 0 || low > high {
		return fuzziness{}, invalid("parse_exception", "fuzziness wrongly configured ["+s+"]. Must be 0 < lower value <= higher value.")
	}
	return fuzziness{auto: true, low: int(low), high: int(high)}, nil
}
