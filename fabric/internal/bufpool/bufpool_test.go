package bufpool

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGetPut(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		wantCap int
	}{
		{"empty", 0, 512},
		{"small", 100, 512},
		{"exact class", 4096, 4096},
		{"just above a class", 4097, 8192},
		{"largest class", 256 << 20, 256 << 20},
		{"above the largest class", 256<<20 + 1, 256<<20 + 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := Get(tc.n)
			require.Len(t, *b, tc.n)
			require.Equal(t, tc.wantCap, cap(*b))
			require.Equal(t, tc.wantCap, Cap(tc.n), "Cap says what Get holds")
			Put(b)
			again := Get(tc.n)
			require.Len(t, *again, tc.n)
		})
	}
}
