package auth

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"logs-*", "logs-2024", true},
		{"logs-*", "logs-", true},
		{"logs-*", "log-2024", false},
		{"*", "", true},
		{"", "", true},
		{"", "a", false},
		{"a", "", false},
		{"*-prod", "app-prod", true},
		{"*-prod", "app-prod-x", false},
		{"a*b*c", "aXXbYYc", true},
		{"a*b*c", "aXXbYYcZ", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "acb", false},
		{"lo?s", "logs", true},
		{"lo?s", "los", false},
		{"lo?s", "loggs", false},
		{"?", "é", true}, // one character, two bytes
		{"??", "é", false},
		{"é*", "éa", true},
		{"*é", "aé", true},
		{"indices:data/read/*", "indices:data/read/search", true},
		{"indices:data/read/*", "indices:data/write/index", false},
		{"indices:data/write/index*", "indices:data/write/index:op_type/create", true},
		{"**", "x", true},
		{"*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
	} {
		t.Run(tc.pattern+"~"+tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, globMatch(tc.pattern, tc.name))
		})
	}
}

func TestCompilePatterns(t *testing.T) {
	for _, tc := range []struct {
		name     string
		patterns []string
		match    []string
		miss     []string
		err      string
	}{
		{name: "exact", patterns: []string{"logs"}, match: []string{"logs"}, miss: []string{"logs2", "log", ""}},
		{name: "star", patterns: []string{"*"}, match: []string{"a", ".hidden", ""}},
		{name: "glob", patterns: []string{"logs-*", "metrics-?"}, match: []string{"logs-1", "metrics-a"}, miss: []string{"metrics-ab", "other"}},
		{name: "regexp is anchored", patterns: []string{"/logs-[0-9]+/"}, match: []string{"logs-1", "logs-2024"}, miss: []string{"logs-x", "xlogs-1", "logs-1x"}},
		{name: "regexp alternation is anchored as a whole", patterns: []string{"/a|b/"}, match: []string{"a", "b"}, miss: []string{"ab", "ba"}},
		{name: "bad regexp", patterns: []string{"/logs-[/"}, err: "not a valid regular expression"},
		{name: "empty pattern", patterns: []string{""}, err: "empty name pattern"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := compilePatterns(tc.patterns, true)
			if tc.err != "" {
				require.ErrorIs(t, err, ErrInvalidRole)
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			for _, n := range tc.match {
				require.True(t, p.match(n), n)
			}
			for _, n := range tc.miss {
				require.False(t, p.match(n), n)
			}
		})
	}
}
