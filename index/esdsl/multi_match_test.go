package esdsl

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// rankCase is a query run against the test index: the ids it must find
// (any order), and pairs of ids of which the first must rank above the
// second.
type rankCase struct {
	name  string
	body  string
	want  []string
	above [][2]string
}

func runRankCases(t *testing.T, tests []rankCase) {
	t.Helper()
	ti := newTestIndex(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := ti.search(t, tt.body, nil)
			ids := hitIDs(resp)
			require.ElementsMatch(t, tt.want, ids)
			scores := map[string]float64{}
			for _, h := range hitList(resp) {
				scores[h["_id"].(string)] = h["_score"].(float64)
			}
			for _, p := range tt.above {
				require.Greater(t, scores[p[0]], scores[p[1]], "%s must rank above %s (hits %v)", p[0], p[1], ids)
			}
		})
	}
}

func TestMultiMatchTypes(t *testing.T) {
	runRankCases(t, []rankCase{
		{name: "best_fields takes the best field", body: `{"query":{"multi_match":{"query":"smith fox","fields":["user.name^5","title"]}}}`,
			want: []string{"1", "3", "4", "5"}, above: [][2]string{{"3", "4"}, {"5", "4"}}},
		{name: "best_fields tie_breaker counts the other fields", body: `{"query":{"multi_match":{"query":"smith fox","fields":["user.name^5","title"],"tie_breaker":0.5}}}`,
			want: []string{"1", "3", "4", "5"}, above: [][2]string{{"1", "3"}, {"1", "5"}, {"3", "4"}}},
		{name: "best_fields operator and needs every term in one field", body: `{"query":{"multi_match":{"query":"alice fox","fields":["user.name","title"],"operator":"and"}}}`,
			want: []string{}},
		{name: "best_fields minimum_should_match per field", body: `{"query":{"multi_match":{"query":"quick brown lazy","fields":["title","body"],"minimum_should_match":2}}}`,
			want: []string{"1"}},
		{name: "best_fields fuzziness", body: `{"query":{"multi_match":{"query":"brwn","fields":["title","body"],"fuzziness":1}}}`,
			want: []string{"1", "3"}},
		{name: "field boost ranks its field first", body: `{"query":{"multi_match":{"query":"lazy bread","fields":["title^3","body"]}}}`,
			want: []string{"1", "2", "3"}, above: [][2]string{{"2", "1"}, {"3", "1"}}},
		{name: "most_fields sums the fields", body: `{"query":{"multi_match":{"query":"smith fox","type":"most_fields","fields":["user.name","title"]}}}`,
			want: []string{"1", "3", "4", "5"}, above: [][2]string{{"1", "3"}, {"1", "4"}, {"1", "5"}}},
		{name: "most_fields operator and per field", body: `{"query":{"multi_match":{"query":"lazy dog","type":"most_fields","fields":["title","body"],"operator":"and"}}}`,
			want: []string{"1", "2"}},
		{name: "cross_fields operator and across fields", body: `{"query":{"multi_match":{"query":"alice fox","type":"cross_fields","fields":["user.name","title"],"operator":"and"}}}`,
			want: []string{"1"}},
		{name: "cross_fields minimum_should_match counts terms", body: `{"query":{"multi_match":{"query":"quick brown bread","type":"cross_fields","fields":["title","body"],"minimum_should_match":2}}}`,
			want: []string{"1", "3"}},
		{name: "cross_fields or", body: `{"query":{"multi_match":{"query":"carol waves","type":"cross_fields","fields":["user.name^2","title"]}}}`,
			want: []string{"3", "6"}},
		{name: "cross_fields groups fields by analysis", body: `{"query":{"multi_match":{"query":"quick animal","type":"cross_fields","fields":["title","tags"],"operator":"and"}}}`,
			want: []string{}},
		{name: "cross_fields keyword group matches whole value", body: `{"query":{"multi_match":{"query":"animal","type":"cross_fields","fields":["title","tags"]}}}`,
			want: []string{"1", "2", "4"}},
		{name: "cross_fields value field is its own group", body: `{"query":{"multi_match":{"query":"300","type":"cross_fields","fields":["title","views"]}}}`,
			want: []string{"3"}},
		{name: "cross_fields lenient skips values that do not parse", body: `{"query":{"multi_match":{"query":"fox","type":"cross_fields","fields":["title","views"],"lenient":true}}}`,
			want: []string{"1", "4"}},
		{name: "cross_fields field pattern", body: `{"query":{"multi_match":{"query":"eve recipes","type":"cross_fields","fields":["user.*","title"],"operator":"and"}}}`,
			want: []string{"5"}},
		{name: "phrase", body: `{"query":{"multi_match":{"query":"lazy dog","type":"phrase","fields":["title","body"]}}}`,
			want: []string{"1", "2"}},
		{name: "phrase_prefix", body: `{"query":{"multi_match":{"query":"brown br","type":"phrase_prefix","fields":["title","body"]}}}`,
			want: []string{"3"}},
		{name: "phrase_prefix one term", body: `{"query":{"multi_match":{"query":"rec","type":"phrase_prefix","fields":["title^2","body"]}}}`,
			want: []string{"3", "5"}},
		{name: "phrase_prefix max_expansions", body: `{"query":{"multi_match":{"query":"re","type":"phrase_prefix","fields":["title"],"max_expansions":1}}}`,
			want: []string{"3"}},
		{name: "bool_prefix or", body: `{"query":{"multi_match":{"query":"quick br","type":"bool_prefix","fields":["title","body"]}}}`,
			want: []string{"1", "3", "5"}, above: [][2]string{{"1", "3"}, {"1", "5"}}},
		{name: "bool_prefix and", body: `{"query":{"multi_match":{"query":"quick br","type":"bool_prefix","fields":["title","body"],"operator":"and"}}}`,
			want: []string{"1"}},
		{name: "bool_prefix fuzziness spares the prefix", body: `{"query":{"multi_match":{"query":"quik bro","type":"bool_prefix","fields":["title"],"fuzziness":"AUTO","operator":"and"}}}`,
			want: []string{"1"}},
		{name: "bool_prefix minimum_should_match", body: `{"query":{"multi_match":{"query":"brown bread wh","type":"bool_prefix","fields":["body"],"minimum_should_match":3}}}`,
			want: []string{"3"}},
	})
}

func TestPrefixQueries(t *testing.T) {
	runRankCases(t, []rankCase{
		{name: "match_phrase_prefix", body: `{"query":{"match_phrase_prefix":{"body":"lazy d"}}}`, want: []string{"1", "2"}},
		{name: "match_phrase_prefix keeps order", body: `{"query":{"match_phrase_prefix":{"body":"dog la"}}}`, want: []string{}},
		{name: "match_phrase_prefix longer phrase", body: `{"query":{"match_phrase_prefix":{"body":{"query":"the quick brown f","boost":2}}}}`, want: []string{"1"}},
		{name: "match_phrase_prefix one term", body: `{"query":{"match_phrase_prefix":{"title":"recip"}}}`, want: []string{"3", "5"}},
		{name: "match_phrase_prefix max_expansions", body: `{"query":{"match_phrase_prefix":{"title":{"query":"recip","max_expansions":1}}}}`, want: []string{"3"}},
		{name: "match_phrase_prefix on keyword", body: `{"query":{"match_phrase_prefix":{"title.keyword":"Quick R"}}}`, want: []string{"5"}},
		{name: "match_phrase_prefix unknown prefix", body: `{"query":{"match_phrase_prefix":{"body":"lazy zz"}}}`, want: []string{}},
		{name: "match_phrase_prefix zero terms all", body: `{"query":{"match_phrase_prefix":{"body":{"query":"  ","zero_terms_query":"all"}}}}`, want: []string{"1", "2", "3", "4", "5", "6"}},
		{name: "match_phrase_prefix named", body: `{"query":{"match_phrase_prefix":{"body":{"query":"whole wh","_name":"p"}}}}`, want: []string{"3"}},
		{name: "match_bool_prefix", body: `{"query":{"match_bool_prefix":{"body":"fox ho"}}}`, want: []string{"1", "4"}, above: [][2]string{{"4", "1"}}},
		{name: "match_bool_prefix operator and", body: `{"query":{"match_bool_prefix":{"body":{"query":"fox ho","operator":"and"}}}}`, want: []string{"4"}},
		{name: "match_bool_prefix any order", body: `{"query":{"match_bool_prefix":{"body":{"query":"dog lazy sl","operator":"and"}}}}`, want: []string{"2"}},
		{name: "match_bool_prefix fuzziness", body: `{"query":{"match_bool_prefix":{"body":{"query":"hund ab","fuzziness":1,"operator":"and"}}}}`, want: []string{"4"}},
		{name: "match_bool_prefix on a number is exact", body: `{"query":{"match_bool_prefix":{"views":"10"}}}`, want: []string{"4"}},
	})
}

func TestFuzzinessAutoThresholds(t *testing.T) {
	runRankCases(t, []rankCase{
		// "quik" has 4 code points: one edit under AUTO:4,8, none under AUTO:5,8.
		{name: "match AUTO:4,8", body: `{"query":{"match":{"title":{"query":"quik","fuzziness":"AUTO:4,8"}}}}`, want: []string{"1", "5"}},
		{name: "match AUTO:5,8", body: `{"query":{"match":{"title":{"query":"quik","fuzziness":"AUTO:5,8"}}}}`, want: []string{}},
		// "quk" has 3: two edits under AUTO:2,3, one under AUTO.
		{name: "match AUTO:2,3 two edits", body: `{"query":{"match":{"title":{"query":"quk","fuzziness":"auto:2,3"}}}}`, want: []string{"1", "5"}},
		{name: "match AUTO one edit", body: `{"query":{"match":{"title":{"query":"quk","fuzziness":"AUTO"}}}}`, want: []string{}},
		{name: "match AUTO:4,8 per term with and", body: `{"query":{"match":{"body":{"query":"lazi dg","fuzziness":"AUTO:4,8","operator":"and"}}}}`, want: []string{}},
		{name: "match AUTO:2,8 per term with and", body: `{"query":{"match":{"body":{"query":"lazi dg","fuzziness":"AUTO:2,8","operator":"and"}}}}`, want: []string{"1", "2"}},
		{name: "match AUTO:4,8 with minimum_should_match", body: `{"query":{"match":{"body":{"query":"lazi brwn bred","fuzziness":"AUTO:4,8","minimum_should_match":2}}}}`, want: []string{"1", "3"}},
		{name: "fuzzy AUTO:4,8", body: `{"query":{"fuzzy":{"body":{"value":"hund","fuzziness":"AUTO:4,8"}}}}`, want: []string{"4"}},
		{name: "fuzzy AUTO:5,8", body: `{"query":{"fuzzy":{"body":{"value":"hund","fuzziness":"AUTO:5,8"}}}}`, want: []string{}},
		{name: "multi_match AUTO:4,8", body: `{"query":{"multi_match":{"query":"quik","fields":["title","body"],"fuzziness":"AUTO:4,8"}}}`, want: []string{"1", "5"}},
		{name: "query_string fuzziness AUTO:4,8", body: `{"query":{"query_string":{"query":"quik","fields":["title"],"fuzziness":"AUTO:4,8"}}}`, want: []string{"1", "5"}},
	})
}

// The requests the search UIs send by default, as they send them.
func TestSearchUIRequests(t *testing.T) {
	const fields = `["title^3","body","user.name"]`
	runRankCases(t, []rankCase{
		// @elastic/search-ui's Elasticsearch connector, while the user
		// types "quick bro".
		{name: "search-ui default query", body: `{"query":{"bool":{"should":[` +
			`{"multi_match":{"query":"quick bro","fields":` + fields + `,"type":"best_fields","operator":"and"}},` +
			`{"multi_match":{"query":"quick bro","fields":` + fields + `,"type":"cross_fields"}},` +
			`{"multi_match":{"query":"quick bro","fields":` + fields + `,"type":"phrase_prefix"}}]}},` +
			`"from":0,"size":20,"_source":{"includes":["title","body"]},"highlight":{"fields":{"title":{},"body":{}}}}`,
			want: []string{"1", "5"}, above: [][2]string{{"1", "5"}}},
		{name: "search-ui complete words", body: `{"query":{"bool":{"should":[` +
			`{"multi_match":{"query":"smith recipes","fields":` + fields + `,"type":"best_fields","operator":"and"}},` +
			`{"multi_match":{"query":"smith recipes","fields":` + fields + `,"type":"cross_fields"}},` +
			`{"multi_match":{"query":"smith recipes","fields":` + fields + `,"type":"phrase_prefix"}}]}}}`,
			want: []string{"1", "3", "5"}, above: [][2]string{{"5", "1"}, {"5", "3"}}},
		// Searchkit's InstantSearch adapter, with a typo and as a prefix.
		{name: "searchkit typo", body: `{"query":{"bool":{"should":[` +
			`{"multi_match":{"query":"quik","fields":` + fields + `,"fuzziness":"AUTO:4,8"}},` +
			`{"multi_match":{"query":"quik","fields":` + fields + `,"type":"bool_prefix"}}]}},"size":20}`,
			want: []string{"1", "5"}},
		{name: "searchkit prefix", body: `{"query":{"bool":{"should":[` +
			`{"multi_match":{"query":"bro","fields":` + fields + `,"fuzziness":"AUTO:4,8"}},` +
			`{"multi_match":{"query":"bro","fields":` + fields + `,"type":"bool_prefix"}}]}},"size":20}`,
			want: []string{"1", "3"}},
		{name: "searchkit two words", body: `{"query":{"bool":{"should":[` +
			`{"multi_match":{"query":"lazy do","fields":` + fields + `,"fuzziness":"AUTO:4,8"}},` +
			`{"multi_match":{"query":"lazy do","fields":` + fields + `,"type":"bool_prefix"}}]}},"size":20}`,
			want: []string{"1", "2"}, above: [][2]string{{"2", "1"}}},
	})
}

func TestSearchAsYouTypeErrors(t *testing.T) {
	fields := &testFields{types: testTypes, m: testMapping(t)}
	tests := []struct {
		name, body, typ, reason string
	}{
		{name: "fuzziness with cross_fields", body: `{"query":{"multi_match":{"query":"x","fields":["title"],"type":"cross_fields","fuzziness":"AUTO"}}}`,
			typ: "parsing_exception", reason: "Fuzziness not allowed for type [cross_fields]"},
		{name: "fuzziness with phrase", body: `{"query":{"multi_match":{"query":"x","fields":["title"],"type":"phrase","fuzziness":1}}}`,
			typ: "parsing_exception", reason: "Fuzziness not allowed for type [phrase]"},
		{name: "fuzziness with phrase_prefix", body: `{"query":{"multi_match":{"query":"x","fields":["title"],"type":"phrase_prefix","fuzziness":"AUTO:4,8"}}}`,
			typ: "parsing_exception", reason: "Fuzziness not allowed for type [phrase_prefix]"},
		{name: "slop with bool_prefix", body: `{"query":{"multi_match":{"query":"x","fields":["title"],"type":"bool_prefix","slop":0}}}`,
			typ: "parsing_exception", reason: "[slop] not allowed for type [bool_prefix]"},
		{name: "unknown type", body: `{"query":{"multi_match":{"query":"x","type":"best_field"}}}`,
			typ: "parse_exception", reason: "failed to parse [multi_match] query type [best_field]. unknown type."},
		{name: "negative slop", body: `{"query":{"multi_match":{"query":"x","fields":["title"],"type":"phrase","slop":-1}}}`,
			typ: "illegal_argument_exception", reason: "No negative slop allowed."},
		{name: "AUTO without high", body: `{"query":{"match":{"title":{"query":"x","fuzziness":"AUTO:4"}}}}`,
			typ: "parse_exception", reason: "failed to find low and high distance values"},
		{name: "AUTO with three values", body: `{"query":{"fuzzy":{"title":{"value":"x","fuzziness":"AUTO:1,2,3"}}}}`,
			typ: "parse_exception", reason: "failed to find low and high distance values"},
		{name: "AUTO not numbers", body: `{"query":{"multi_match":{"query":"x","fields":["title"],"fuzziness":"AUTO:a,8"}}}`,
			typ: "parse_exception", reason: `failed to parse [AUTO:a,8] as a "auto:int,int"`},
		{name: "AUTO low above high", body: `{"query":{"match_bool_prefix":{"title":{"query":"x","fuzziness":"AUTO:8,4"}}}}`,
			typ: "parse_exception", reason: "fuzziness wrongly configured [AUTO:8,4]. Must be 0 < lower value <= higher value."},
		{name: "AUTO negative", body: `{"query":{"match":{"title":{"query":"x","fuzziness":"AUTO:-1,6"}}}}`,
			typ: "parse_exception", reason: "fuzziness wrongly configured [AUTO:-1,6]"},
		{name: "fuzziness word", body: `{"query":{"match":{"title":{"query":"x","fuzziness":"fuzzy"}}}}`,
			typ: "illegal_argument_exception", reason: "fuzziness cannot be [fuzzy]."},
		{name: "fuzziness fraction", body: `{"query":{"match":{"title":{"query":"x","fuzziness":1.5}}}}`,
			typ: "illegal_argument_exception", reason: "fuzziness needs to be one of 0.0, 1.0 or 2.0 but was 1.5"},
		{name: "fuzziness empty", body: `{"query":{"match":{"title":{"query":"x","fuzziness":""}}}}`,
			typ: "illegal_argument_exception", reason: "fuzziness cannot be null or empty."},
		{name: "match_phrase_prefix on a number", body: `{"query":{"match_phrase_prefix":{"views":"10"}}}`,
			typ: "illegal_argument_exception", reason: "can only use prefix queries on keyword and text fields, not on [views]"},
		{name: "match_phrase_prefix negative max_expansions", body: `{"query":{"match_phrase_prefix":{"title":{"query":"x","max_expansions":-1}}}}`,
			typ: "illegal_argument_exception", reason: "No negative maxExpansions allowed."},
		{name: "match_phrase_prefix without query", body: `{"query":{"match_phrase_prefix":{"title":{"slop":0}}}}`,
			typ: "parsing_exception", reason: "needs [query]"},
		{name: "match_phrase_prefix unknown key", body: `{"query":{"match_phrase_prefix":{"title":{"query":"x","operator":"and"}}}}`,
			typ: "parsing_exception", reason: "[operator]"},
		{name: "match_bool_prefix unknown key", body: `{"query":{"match_bool_prefix":{"title":{"query":"x","zero_terms_query":"all"}}}}`,
			typ: "parsing_exception", reason: "[zero_terms_query]"},
		{name: "match_bool_prefix without query", body: `{"query":{"match_bool_prefix":{"title":{"operator":"and"}}}}`,
			typ: "parsing_exception", reason: "needs [query]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSearch([]byte(tt.body), nil, fields)
			var e *Error
			require.True(t, errors.As(err, &e), "error %v", err)
			require.ErrorIs(t, err, ErrInvalidRequest)
			require.Equal(t, tt.typ, e.Type, e.Reason)
			require.Contains(t, e.Reason, tt.reason)
		})
	}
}

// Without the Analyzer ability the queries that need the terms before
// the search refuse, saying why; the others still run.
func TestSearchAsYouTypeWithoutAnalyzer(t *testing.T) {
	bare := fieldTypesOnly(testTypes)
	for _, body := range []string{
		`{"query":{"multi_match":{"query":"x","fields":["title","body"],"type":"cross_fields"}}}`,
		`{"query":{"match_bool_prefix":{"title":"x y"}}}`,
		`{"query":{"match":{"title":{"query":"x","fuzziness":"AUTO:4,8"}}}}`,
	} {
		_, err := ParseSearch([]byte(body), nil, bare)
		requireKind(t, err, ErrInvalidRequest, "needs the index's analyzer")
	}
	for _, body := range []string{
		`{"query":{"match_phrase_prefix":{"title":"quick b"}}}`,
		`{"query":{"fuzzy":{"title":{"value":"quik","fuzziness":"AUTO:4,8"}}}}`,
		`{"query":{"match":{"title":{"query":"quik","fuzziness":"AUTO"}}}}`,
	} {
		_, err := ParseSearch([]byte(body), nil, bare)
		require.NoError(t, err, body)
	}
}

// fieldTypesOnly is a Fields without any optional ability.
type fieldTypesOnly map[string]string

func (f fieldTypesOnly) FieldType(path string) string { return f[path] }

func TestFuzzinessEditsFor(t *testing.T) {
	tests := []struct {
		spec  string
		term  string
		edits int
	}{
		{"AUTO", "ab", 0}, {"AUTO", "abc", 1}, {"AUTO", "abcde", 1}, {"AUTO", "abcdef", 2},
		{"AUTO:4,8", "abc", 0}, {"AUTO:4,8", "abcd", 1}, {"AUTO:4,8", "abcdefg", 1}, {"AUTO:4,8", "abcdefgh", 2},
		{"auto:0,0", "", 2}, {"AUTO:3,3", "ab", 0}, {"AUTO:3,3", "abc", 2},
		// Code points, not bytes: "héllo" is 5 letters in 6 bytes.
		{"AUTO", "héllo", 1}, {"AUTO:3,6", "naïve", 1},
		{"0", "abcdefgh", 0}, {"1", "a", 1}, {"2.0", "a", 2},
	}
	for _, tt := range tests {
		f, err := parseFuzziness(tt.spec)
		require.NoError(t, err, tt.spec)
		require.Equal(t, tt.edits, f.editsFor(tt.term), "%s on %q", tt.spec, tt.term)
	}
}
