package adaptive

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBufPoolClasses(t *testing.T) {
	var bp bufPool
	for _, n := range []int{0, 1, headerSize, headerSize + 64, headerSize + 65, headerSize + 1<<20, headerSize + 64<<20, headerSize + 64<<20 + 1} {
		bp.put(bp.get(n)) // a pooled buffer of another length comes back resized
		pb := bp.get(n)
		b := *pb
		require.Len(t, b, n)
		require.GreaterOrEqual(t, cap(b), n)
		if n <= headerSize+64<<20 {
			require.LessOrEqual(t, cap(b), max(2*(n-headerSize), 64)+headerSize, "size %d wastes its class", n)
		}
		bp.put(pb)
	}
}
