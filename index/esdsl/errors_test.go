package esdsl

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func requireStatus(t *testing.T, err error, status int, reasonPart string) {
	t.Helper()
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, status, e.Status, e.Reason)
	require.Contains(t, e.Reason, reasonPart)
}
