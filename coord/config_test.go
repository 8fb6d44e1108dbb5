package coord_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/weftsearch/weft/coord"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*coord.Config)
		err  string
	}{
		{"default", func(*coord.Config) {}, ""},
		{"no shards", func(c *coord.Config) { c.MaxShards = 0 }, "MaxShards 0"},
		{"negative stats cache", func(c *coord.Config) { c.SearchStatsCacheBytes = -1 }, "SearchStatsCacheBytes -1"},
		{"no refresh timeout", func(c *coord.Config) { c.RefreshTimeout = 0 }, "RefreshTimeout 0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := coord.DefaultConfig()
			tc.mod(&c)
			err := c.Validate()
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
		})
	}
}
