package index

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreCurrent())
}

// FuzzParseMapping: mapping bodies come from PUT /{index} and PUT _mapping.
// Any input either fails with ErrInvalidMapping or gives a mapping whose
// JSON form parses back to the same JSON.
func FuzzParseMapping(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `{"dynamic":"strict"}`, `{"properties":{"a":{"type":"text","fields":{"k":{"type":"keyword"}}}}}`,
		`{"properties":{"o":{"properties":{"n":{"type":"long"}}},"d":{"type":"date","format":"epoch_millis"}}}`,
		`{"properties":{"a.b":{"type":"keyword","ignore_above":3}}}`, `{"properties":{"a":{"type":"nope"}}}`, `[`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		m, err := ParseMapping([]byte(raw))
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidMapping)
			return
		}
		out, err := json.Marshal(m)
		require.NoError(t, err)
		again, err := ParseMapping(out)
		require.NoError(t, err, "%s", out)
		out2, err := json.Marshal(again)
		require.NoError(t, err)
		require.JSONEq(t, string(out), string(out2))
		_, err = m.bleveMapping(true)
		require.NoError(t, err)
	})
}

// FuzzBuildDocument: document sources come from index and bulk requests.
// Any input either fails with a document error or builds a document.
func FuzzBuildDocument(f *testing.F) {
	for _, s := range []string{
		`{"a":"text","n":1,"f":1.5,"b":true,"d":"2024-01-01","o":{"x":[1,2]},"arr":[{"y":"z"}]}`,
		`{"n":"abc"}`, `{"k":{"deep":{"er":null}}}`, `{"a.b.c":1}`, `[]`, `{"":1}`, `{"_id":1}`, `{"n":1e400}`,
	} {
		f.Add(s)
	}
	an, err := newAnalyzerSet()
	require.NoError(f, err)
	base := `{"properties":{"n":{"type":"long"},"k":{"type":"keyword"},"d":{"type":"date"},"s":{"dynamic":"strict","properties":{}}}}`
	f.Fuzz(func(t *testing.T, src string) {
		m, err := ParseMapping([]byte(base))
		require.NoError(t, err)
		d, err := m.buildDocument("id", []byte(src), an)
		if err != nil {
			require.True(t, errors.Is(err, ErrDocParse) || errors.Is(err, ErrStrictDynamic), "%v", err)
			return
		}
		require.Equal(t, "id", d.ID())
		_, err = json.Marshal(m)
		require.NoError(t, err)
	})
}
