package bytesize

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "512": 512, "40mb": 40 << 20, "40MB": 40 << 20, " 1 gb ": 1 << 30, "2kb": 2048, "7b": 7, "1tb": 1 << 40} {
		got, err := Parse(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "mb", "-1", "1.5mb", "40 megabytes", "9999999999tb"} {
		_, err := Parse(in)
		require.Error(t, err, in)
	}
}
