package esdsl

import (
	"math"
	"strconv"
)

// AppendJSON appends r as JSON to b without reflection, for the common
// reply: hits with _source and _score, no aggregations, highlights, sort
// values, explanations or shard failures, and ids, index names and other
// strings of printable ASCII needing no escapes. It reports false, with b
// unchanged, for any reply outside that shape; the caller then encodes r
// with a general JSON encoder, which gives the same bytes where both apply
// (the package's tests check that against encoding/json).
//
// The _source of each hit is appended as it is (it was validated as JSON
// when the document was written). The caller owns b.
func (r *SearchResponse) AppendJSON(b []byte) ([]byte, bool) {
	if !r.fastEncodable() {
		return b, false
	}
	out := append(b, `{"took":`...)
	out = strconv.AppendInt(out, r.Took, 10)
	out = append(out, `,"timed_out":`...)
	out = strconv.AppendBool(out, r.TimedOut)
	out = append(out, `,"_shards":{"total":`...)
	out = strconv.AppendInt(out, int64(r.Shards.Total), 10)
	out = append(out, `,"successful":`...)
	out = strconv.AppendInt(out, int64(r.Shards.Successful), 10)
	out = append(out, `,"skipped":`...)
	out = strconv.AppendInt(out, int64(r.Shards.Skipped), 10)
	out = append(out, `,"failed":`...)
	out = strconv.AppendInt(out, int64(r.Shards.Failed), 10)
	out = append(out, `},"hits":{`...)
	if t := r.Hits.Total; t != nil {
		out = append(out, `"total":`...)
		if t.asInt {
			out = strconv.AppendInt(out, t.Value, 10)
		} else {
			out = append(out, `{"value":`...)
			out = strconv.AppendInt(out, t.Value, 10)
			out = append(out, `,"relation":"`...)
			out = append(out, t.Relation...)
			out = append(out, `"}`...)
		}
		out = append(out, ',')
	}
	out = append(out, `"max_score":`...)
	out = appendFloatPtr(out, r.Hits.MaxScore)
	out = append(out, `,"hits":`...)
	if r.Hits.Hits == nil {
		out = append(out, "null"...)
	} else {
		out = append(out, '[')
		for i := range r.Hits.Hits {
			h := &r.Hits.Hits[i]
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, `{"_index":"`...)
			out = append(out, h.Index...)
			out = append(out, `","_id":"`...)
			out = append(out, h.ID...)
			out = append(out, `","_score":`...)
			out = appendFloatPtr(out, h.Score)
			if len(h.Source) > 0 {
				out = append(out, `,"_source":`...)
				out = append(out, h.Source...)
			}
			out = append(out, '}')
		}
		out = append(out, ']')
	}
	out = append(out, '}')
	if r.ScrollID != "" {
		out = append(out, `,"_scroll_id":"`...)
		out = append(out, r.ScrollID...)
		out = append(out, '"')
	}
	return append(out, '}'), true
}

// fastEncodable reports whether AppendJSON can encode r.
func (r *SearchResponse) fastEncodable() bool {
	if len(r.Aggregations) > 0 || len(r.Shards.Failures) > 0 || r.PitID != "" || !plainString(r.ScrollID) || !plainFloat(r.Hits.MaxScore) {
		return false
	}
	if t := r.Hits.Total; t != nil && !plainString(t.Relation) {
		return false
	}
	for i := range r.Hits.Hits {
		h := &r.Hits.Hits[i]
		if len(h.Highlight) > 0 || len(h.Fields) > 0 || h.Version != nil || h.SeqNo != nil || len(h.Sort) > 0 || h.Explanation != nil || len(h.MatchedQueries) > 0 || h.ID == "" ||
			!plainString(h.Index) || !plainString(h.ID) || !plainFloat(h.Score) {
			return false
		}
	}
	return true
}

// plainString reports whether s is encoded in JSON as its bytes in quotes:
// printable ASCII other than the quote and the backslash.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// plainFloat reports whether f is nil or a finite number that JSON encoders
// write in plain decimal notation (no exponent).
func plainFloat(f *float64) bool {
	if f == nil {
		return true
	}
	a := math.Abs(*f)
	return !math.IsNaN(a) && !math.IsInf(a, 0) && (a == 0 || (a >= 1e-6 && a < 1e21))
}

// appendFloatPtr appends *f as encoding/json writes a float64 in plain
// notation, or null for nil.
func appendFloatPtr(b []byte, f *float64) []byte {
	if f == nil {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, *f, 'f', -1, 64)
}
