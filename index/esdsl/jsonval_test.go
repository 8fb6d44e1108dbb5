package esdsl

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// jsonvalSeeds are objects and arrays with the shapes decodeObject and
// decodeArray must split like encoding/json: nesting, strings holding
// brackets, quotes and escapes, escaped and non-ASCII keys, repeated keys,
// numbers, literals and whitespace everywhere.
var jsonvalSeeds = []string{
	`{}`,
	` { } `,
	`[]`,
	`[ ]`,
	`{"a":1}`,
	`{"query":{"bool":{"must":[{"term":{"body":"a"}}],"must_not":[{"term":{"body":"c"}}],"should":[{"term":{"title":"b"}}]}},"size":10}`,
	"{ \"a\" :\t[ 1 , 2.5e3 ,-0.1, true,false , null ,\"x\" ] ,\n\"b\":{ } }",
	`{"s":"brackets ] } [ { and \"quotes\" and \\ backslash","t":"\u00e9\ud83d\ude00"}`,
	`{"k\"ey":1,"k\\ey":2,"\u006b":3,"ключ":4,"k":5}`,
	`{"dup":1,"dup":{"x":[1,{"y":"]"}]}}`,
	`[{"a":[[],[{}]]},"]",-12,1e-7,{"b":"}"}]`,
	`[ "a" , [ "b" , { "c" : [ ] } ] ]`,
}

func decodeLikeEncodingJSON(t *testing.T, raw string) {
	t.Helper()
	switch kind(json.RawMessage(raw)) {
	case 'o':
		var want map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(raw), &want))
		got := decodeObject([]byte(raw))
		require.Len(t, got, len(want), "object %s", raw)
		for k, v := range want {
			require.Contains(t, got, k, "object %s", raw)
			require.Equal(t, string(v), string(got[k]), "object %s key %q", raw, k)
		}
	case 'a':
		var want []json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(raw), &want))
		got := decodeArray([]byte(raw))
		require.Len(t, got, len(want), "array %s", raw)
		for i := range want {
			require.Equal(t, string(want[i]), string(got[i]), "array %s element %d", raw, i)
		}
	}
}

func TestDecodeObjectAndArrayMatchEncodingJSON(t *testing.T) {
	for _, s := range jsonvalSeeds {
		t.Run(s, func(t *testing.T) { decodeLikeEncodingJSON(t, s) })
	}
}

func TestDecodedValuesDoNotShareTheBodysSpareBytes(t *testing.T) {
	body := []byte(`{"a":"x","b":"y"}`)
	o := decodeObject(body)
	_ = append(o["a"], "zzzz"...) // must copy, not write over "b"
	require.Equal(t, `"y"`, string(o["b"]))
	require.Equal(t, `{"a":"x","b":"y"}`, string(body))
}

// FuzzDecodeObject checks that decodeObject and decodeArray split every
// valid JSON object or array exactly as encoding/json does, and never panic
// on anything else.
func FuzzDecodeObject(f *testing.F) {
	for _, s := range jsonvalSeeds {
		f.Add(s)
	}
	f.Add(`{"a":`)
	f.Add(`["a",`)
	f.Add(`{"a" 1}`)
	f.Fuzz(func(t *testing.T, raw string) {
		if !json.Valid([]byte(raw)) {
			_ = decodeObject([]byte(raw))
			_ = decodeArray([]byte(raw))
			return
		}
		decodeLikeEncodingJSON(t, raw)
	})
}
