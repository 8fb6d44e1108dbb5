package index

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseMapping(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		types   map[string]string // path → FieldType
		errIs   error
		errHas  string
		dynamic string
	}{
		{name: "empty", raw: ``, types: map[string]string{"x": ""}, dynamic: DynamicTrue},
		{name: "all types", raw: `{"properties":{
			"t":{"type":"text","analyzer":"english","search_analyzer":"standard","fields":{"raw":{"type":"keyword","ignore_above":10}}},
			"k":{"type":"keyword"},"l":{"type":"long"},"i":{"type":"integer"},"s":{"type":"short"},"b":{"type":"byte"},
			"d":{"type":"double"},"f":{"type":"float"},"bo":{"type":"boolean"},"dt":{"type":"date","format":"epoch_millis"},
			"o":{"properties":{"n":{"type":"keyword"}}}}}`,
			types: map[string]string{"t": "text", "t.raw": "keyword", "k": "keyword", "l": "long", "i": "integer", "s": "short",
				"b": "byte", "d": "double", "f": "float", "bo": "boolean", "dt": "date", "o": "object", "o.n": "keyword", "o.x": ""},
			dynamic: DynamicTrue},
		{name: "dotted property name is an object path", raw: `{"properties":{"user.name":{"type":"text"}}}`,
			types: map[string]string{"user": "object", "user.name": "text"}, dynamic: DynamicTrue},
		{name: "strict", raw: `{"dynamic":"strict","properties":{}}`, dynamic: DynamicStrict},
		{name: "dynamic false", raw: `{"dynamic":false}`, dynamic: DynamicFalse},
		{name: "unknown type", raw: `{"properties":{"a":{"type":"geo_shape"}}}`, errIs: ErrInvalidMapping, errHas: "[geo_shape] declared on field [a]"},
		{name: "unknown parameter", raw: `{"properties":{"a":{"type":"keyword","analyzer":"standard"}}}`, errIs: ErrInvalidMapping, errHas: "unknown parameter [analyzer] on mapper [a]"},
		{name: "unknown analyzer", raw: `{"properties":{"a":{"type":"text","analyzer":"klingon"}}}`, errIs: ErrInvalidMapping, errHas: "analyzer [klingon] on field [a]"},
		{name: "no type", raw: `{"properties":{"a":{}}}`, errIs: ErrInvalidMapping, errHas: "no type specified for field [a]"},
		{name: "bad dynamic", raw: `{"dynamic":"sometimes"}`, errIs: ErrInvalidMapping, errHas: "dynamic"},
		{name: "bad date format", raw: `{"properties":{"d":{"type":"date","format":"bogus_format"}}}`, errIs: ErrInvalidMapping, errHas: "bogus_format"},
		{name: "not an object", raw: `[1]`, errIs: ErrInvalidMapping},
		{name: "unsupported root key", raw: `{"dynamic_templates":[]}`, errIs: ErrInvalidMapping, errHas: "dynamic_templates"},
		{name: "nested field error names path", raw: `{"properties":{"o":{"properties":{"n":{"type":"nope"}}}}}`, errIs: ErrInvalidMapping, errHas: "field [o.n]"},
		{name: "metadata name", raw: `{"properties":{"_id":{"type":"keyword"}}}`, errIs: ErrInvalidMapping, errHas: "reserved"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseMapping([]byte(tc.raw))
			if tc.errIs != nil {
				require.ErrorIs(t, err, tc.errIs)
				require.Contains(t, err.Error(), tc.errHas)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.dynamic, m.Dynamic())
			for p, typ := range tc.types {
				require.Equal(t, typ, m.FieldType(p), p)
			}
		})
	}
}

func TestMappingMarshalRoundTrip(t *testing.T) {
	raw := `{"dynamic":"strict","properties":{"t":{"type":"text","analyzer":"english","fields":{"k":{"type":"keyword","ignore_above":5}}},
		"o":{"properties":{"n":{"type":"long","store":true}}},"d":{"type":"date","format":"epoch_second"},"x":{"type":"keyword","index":false}}}`
	m, err := ParseMapping([]byte(raw))
	require.NoError(t, err)
	out, err := json.Marshal(m)
	require.NoError(t, err)
	require.JSONEq(t, `{"dynamic":"strict","properties":{"t":{"type":"text","analyzer":"english","fields":{"k":{"type":"keyword","ignore_above":5}}},
		"o":{"properties":{"n":{"type":"long","store":true}}},"d":{"type":"date","format":"epoch_second"},"x":{"type":"keyword","index":false}}}`, string(out))
	again, err := ParseMapping(out)
	require.NoError(t, err)
	out2, err := json.Marshal(again)
	require.NoError(t, err)
	require.JSONEq(t, string(out), string(out2))
}

func TestMappingMerge(t *testing.T) {
	base := `{"properties":{"t":{"type":"text"},"o":{"properties":{"a":{"type":"keyword"}}}}}`
	tests := []struct {
		name   string
		update string
		errIs  error
		types  map[string]string
	}{
		{name: "add field", update: `{"properties":{"n":{"type":"long"}}}`, types: map[string]string{"n": "long", "t": "text"}},
		{name: "add sub-field", update: `{"properties":{"t":{"type":"text","fields":{"raw":{"type":"keyword"}}}}}`, types: map[string]string{"t.raw": "keyword"}},
		{name: "add to object", update: `{"properties":{"o":{"properties":{"b":{"type":"boolean"}}}}}`, types: map[string]string{"o.a": "keyword", "o.b": "boolean"}},
		{name: "same field again", update: `{"properties":{"t":{"type":"text"}}}`, types: map[string]string{"t": "text"}},
		{name: "type change", update: `{"properties":{"t":{"type":"keyword"}}}`, errIs: ErrMappingConflict},
		{name: "analyzer change", update: `{"properties":{"t":{"type":"text","analyzer":"english"}}}`, errIs: ErrMappingConflict},
		{name: "object to leaf", update: `{"properties":{"o":{"type":"long"}}}`, errIs: ErrMappingConflict},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseMapping([]byte(base))
			require.NoError(t, err)
			before, _ := json.Marshal(m)
			upd, err := ParseMapping([]byte(tc.update))
			require.NoError(t, err)
			err = m.Merge(upd)
			if tc.errIs != nil {
				require.ErrorIs(t, err, tc.errIs)
				after, _ := json.Marshal(m)
				require.JSONEq(t, string(before), string(after), "a failed merge changes nothing")
				return
			}
			require.NoError(t, err)
			for p, typ := range tc.types {
				require.Equal(t, typ, m.FieldType(p), p)
			}
		})
	}
}

func TestDynamicMapping(t *testing.T) {
	tests := []struct {
		name  string
		doc   string
		types map[string]string
	}{
		{name: "string becomes text with keyword", doc: `{"s":"hello"}`, types: map[string]string{"s": "text", "s.keyword": "keyword"}},
		{name: "whole number is long", doc: `{"n":42}`, types: map[string]string{"n": "long"}},
		{name: "fraction is float", doc: `{"n":4.2}`, types: map[string]string{"n": "float"}},
		{name: "exponent is float", doc: `{"n":1e3}`, types: map[string]string{"n": "float"}},
		{name: "boolean", doc: `{"b":true}`, types: map[string]string{"b": "boolean"}},
		{name: "date string", doc: `{"d":"2024-05-06T07:08:09Z"}`, types: map[string]string{"d": "date"}},
		{name: "date only", doc: `{"d":"2024-05-06"}`, types: map[string]string{"d": "date"}},
		{name: "numeric string stays text", doc: `{"z":"12345"}`, types: map[string]string{"z": "text"}},
		{name: "object", doc: `{"u":{"name":"x","age":3}}`, types: map[string]string{"u": "object", "u.name": "text", "u.name.keyword": "keyword", "u.age": "long"}},
		{name: "dotted key", doc: `{"a.b":1}`, types: map[string]string{"a": "object", "a.b": "long"}},
		{name: "array takes first element", doc: `{"tags":[null,"x","y"]}`, types: map[string]string{"tags": "text"}},
		{name: "null maps nothing", doc: `{"n":null,"e":[]}`, types: map[string]string{"n": "", "e": ""}},
	}
	an, err := newAnalyzerSet()
	require.NoError(t, err)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewDynamicMapping()
			_, err := m.buildDocument("1", []byte(tc.doc), an)
			require.NoError(t, err)
			for p, typ := range tc.types {
				require.Equal(t, typ, m.FieldType(p), p)
			}
		})
	}
	t.Run("keyword ignore_above 256 in the marshalled mapping", func(t *testing.T) {
		m := NewDynamicMapping()
		_, err := m.buildDocument("1", []byte(`{"s":"x"}`), an)
		require.NoError(t, err)
		out, err := json.Marshal(m)
		require.NoError(t, err)
		require.JSONEq(t, `{"properties":{"s":{"type":"text","fields":{"keyword":{"type":"keyword","ignore_above":256}}}}}`, string(out))
	})
}

func TestDynamicSettings(t *testing.T) {
	an, err := newAnalyzerSet()
	require.NoError(t, err)
	tests := []struct {
		name    string
		mapping string
		doc     string
		errIs   error
		errHas  string
		types   map[string]string
	}{
		{name: "false ignores new fields", mapping: `{"dynamic":false,"properties":{"a":{"type":"keyword"}}}`, doc: `{"a":"x","b":"y"}`, types: map[string]string{"a": "keyword", "b": ""}},
		{name: "strict rejects new fields", mapping: `{"dynamic":"strict","properties":{"a":{"type":"keyword"}}}`, doc: `{"a":"x","b":"y"}`, errIs: ErrStrictDynamic, errHas: "dynamic introduction of [b] within [_doc]"},
		{name: "strict object inside dynamic root", mapping: `{"properties":{"o":{"dynamic":"strict","properties":{}}}}`, doc: `{"o":{"c":1}}`, errIs: ErrStrictDynamic, errHas: "[c] within [o]"},
		{name: "dynamic object inside strict root", mapping: `{"dynamic":"strict","properties":{"o":{"dynamic":true,"properties":{}}}}`, doc: `{"o":{"c":1}}`, types: map[string]string{"o.c": "long"}},
		{name: "string into long", mapping: `{"properties":{"n":{"type":"long"}}}`, doc: `{"n":"abc"}`, errIs: ErrDocParse, errHas: "failed to parse field [n] of type [long]"},
		{name: "numeric string into long is coerced", mapping: `{"properties":{"n":{"type":"long"}}}`, doc: `{"n":"12"}`, types: map[string]string{"n": "long"}},
		{name: "out of range integer", mapping: `{"properties":{"n":{"type":"byte"}}}`, doc: `{"n":300}`, errIs: ErrDocParse, errHas: "out of range"},
		{name: "bad boolean", mapping: `{"properties":{"b":{"type":"boolean"}}}`, doc: `{"b":"yes"}`, errIs: ErrDocParse},
		{name: "bad date", mapping: `{"properties":{"d":{"type":"date"}}}`, doc: `{"d":"yesterday"}`, errIs: ErrDocParse},
		{name: "epoch millis date", mapping: `{"properties":{"d":{"type":"date"}}}`, doc: `{"d":1700000000000}`, types: map[string]string{"d": "date"}},
		{name: "object into leaf", mapping: `{"properties":{"k":{"type":"keyword"}}}`, doc: `{"k":{"a":1}}`, errIs: ErrDocParse},
		{name: "value into object", mapping: `{"properties":{"o":{"properties":{}}}}`, doc: `{"o":3}`, errIs: ErrDocParse, errHas: "object mapping for [o]"},
		{name: "metadata field in source", mapping: ``, doc: `{"_id":"x"}`, errIs: ErrDocParse, errHas: "metadata field"},
		{name: "not an object", mapping: ``, doc: `[1,2]`, errIs: ErrDocParse},
		{name: "trailing data", mapping: ``, doc: `{"a":1} {"b":2}`, errIs: ErrDocParse},
		{name: "malformed", mapping: ``, doc: `{"a":`, errIs: ErrDocParse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseMapping([]byte(tc.mapping))
			require.NoError(t, err)
			v := m.Version()
			_, err = m.buildDocument("1", []byte(tc.doc), an)
			if tc.errIs != nil {
				require.ErrorIs(t, err, tc.errIs)
				require.Contains(t, err.Error(), tc.errHas)
				require.Equal(t, v, m.Version(), "a rejected document adds no fields")
				return
			}
			require.NoError(t, err)
			for p, typ := range tc.types {
				require.Equal(t, typ, m.FieldType(p), p)
			}
		})
	}
}

func TestMappingAnalyze(t *testing.T) {
	m, err := ParseMapping([]byte(`{"properties":{"t":{"type":"text"},"e":{"type":"text","analyzer":"english"},
		"s":{"type":"text","analyzer":"english","search_analyzer":"whitespace"},"k":{"type":"keyword"},"d":{"type":"date","format":"epoch_second"}}}`))
	require.NoError(t, err)
	tests := []struct {
		path, analyzer, text string
		want                 []string
	}{
		{"t", "", "The Quick fox", []string{"the", "quick", "fox"}},
		{"e", "", "The running dogs", []string{"run", "dog"}},
		{"s", "", "The Dogs", []string{"The", "Dogs"}},
		{"k", "", "New York", []string{"New York"}},
		{"unmapped", "", "A b", []string{"a", "b"}},
		{"t", "keyword", "A b", []string{"A b"}},
		{"t", "simple", "x1y", []string{"x", "y"}},
	}
	for _, tc := range tests {
		t.Run(tc.path+"/"+tc.analyzer, func(t *testing.T) {
			got, err := m.Analyze(tc.path, tc.analyzer, tc.text)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	_, err = m.Analyze("t", "klingon", "x")
	require.ErrorIs(t, err, ErrInvalidMapping)
	require.Equal(t, "epoch_second", m.DateFormat("d"))
	require.Equal(t, "", m.DateFormat("t"))
	n, ok := BleveAnalyzerName("standard")
	require.True(t, ok)
	require.Equal(t, bleveStandard, n)
	_, ok = BleveAnalyzerName("klingon")
	require.False(t, ok)
}
