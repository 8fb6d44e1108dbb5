package coord_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/coord"
)

func TestResolveVisibleFiltersOnlyWildcards(t *testing.T) {
	v := &state.State{Indices: map[string]*state.Index{
		"logs-a":   {Name: "logs-a", Aliases: map[string]state.Alias{"all-logs": {}}},
		"logs-b":   {Name: "logs-b", Aliases: map[string]state.Alias{"all-logs": {}}},
		"secret-1": {Name: "secret-1", Aliases: map[string]state.Alias{"all-logs": {}}},
	}}
	onlyLogs := func(ix string) bool { return strings.HasPrefix(ix, "logs-") }
	tests := []struct {
		name    string
		expr    string
		visible func(string) bool
		want    []string
	}{
		{name: "star without filter", expr: "*", want: []string{"logs-a", "logs-b", "secret-1"}},
		{name: "star filtered", expr: "*", visible: onlyLogs, want: []string{"logs-a", "logs-b"}},
		{name: "_all filtered", expr: "_all", visible: onlyLogs, want: []string{"logs-a", "logs-b"}},
		{name: "empty filtered", expr: "", visible: onlyLogs, want: []string{"logs-a", "logs-b"}},
		{name: "pattern through an alias filtered", expr: "all-*", visible: onlyLogs, want: []string{"logs-a", "logs-b"}},
		{name: "explicit name not filtered", expr: "secret-1", visible: onlyLogs, want: []string{"secret-1"}},
		{name: "explicit alias not filtered", expr: "all-logs", visible: onlyLogs, want: []string{"logs-a", "logs-b", "secret-1"}},
		{name: "nothing visible", expr: "secret-*", visible: onlyLogs, want: []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := coord.DefaultResolve
			o.Visible = tc.visible
			res, err := coord.Resolve(v, tc.expr, o)
			require.NoError(t, err)
			require.Equal(t, tc.want, res.Indices)
		})
	}
}

func TestResolveVisibleNothingMatchedIsNotFoundWithoutAllowNoIndices(t *testing.T) {
	v := &state.State{Indices: map[string]*state.Index{"secret-1": {Name: "secret-1"}}}
	o := coord.ResolveOptions{ExpandOpen: true, Visible: func(string) bool { return false }}
	_, err := coord.Resolve(v, "secret-*", o)
	require.ErrorIs(t, err, state.ErrIndexNotFound)
}
