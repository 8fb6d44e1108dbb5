package node_test

import (
	"context"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/internal/testlog"
	"github.com/weftsearch/weft/node"
	"github.com/weftsearch/weft/security/auth"
)

// getAs sends GET url as user:password ("" user: no credentials) and
// returns the status and the WWW-Authenticate header.
func getAs(t testing.TB, c *http.Client, url, user, password string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// TestSecureNodeAuthenticatesEveryRequest: with security on, a request
// without credentials or with a wrong password is 401 with a
// WWW-Authenticate challenge, and the elastic user's password given at
// the cluster's first start lets it in; a given password is never
// printed.
func TestSecureNodeAuthenticatesEveryRequest(t *testing.T) {
	cfg := secureConfig(t.TempDir())
	cfg.Security.ElasticPassword = auth.Secret("first-password")
	var shown syncBuffer
	cfg.Security.Announce = &shown
	n := startNode(t, cfg)
	c := httpsClient(caPool(t, n))
	for _, path := range []string{"/", "/_cat/indices", "/_cluster/state", "/_weft/fabric/conns"} {
		status, challenge := getAs(t, c, n.URL()+path, "", "")
		require.Equal(t, http.StatusUnauthorized, status, path)
		require.Contains(t, challenge, "Basic", path)
		status, _ = getAs(t, c, n.URL()+path, "elastic", "wrong-password")
		require.Equal(t, http.StatusUnauthorized, status, path)
	}
	require.Eventually(t, func() bool {
		status, _ := getAs(t, c, n.URL()+"/", "elastic", "first-password")
		return status == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "the elastic user's password never took")
	require.Empty(t, shown.String(), "a given password was printed")
}

var shownPassword = regexp.MustCompile(`The password of the elastic user is:\s+(\S+)`)

// TestGeneratedElasticPasswordIsShownOnce: without WEFT_ELASTIC_PASSWORD
// the first start generates the elastic user's password and prints it
// once; it works, and a restart neither changes it nor prints it again.
// --reset-elastic-password then replaces it.
func TestGeneratedElasticPasswordIsShownOnce(t *testing.T) {
	dir := t.TempDir()
	cfg := secureConfig(dir)
	cfg.Security.ElasticPassword = ""
	var shown syncBuffer
	cfg.Security.Announce = &shown
	n, err := node.New(cfg, testlog.New(t))
	require.NoError(t, err)
	require.NoError(t, n.Start(context.Background()))
	var password string
	require.Eventually(t, func() bool {
		m := shownPassword.FindStringSubmatch(shown.String())
		if m != nil {
			password = m[1]
		}
		return m != nil
	}, 30*time.Second, 20*time.Millisecond, "no password was shown")
	c := httpsClient(caPool(t, n))
	status, _ := getAs(t, c, n.URL()+"/", "elastic", password)
	require.Equal(t, http.StatusOK, status)
	require.NoError(t, n.Shutdown(context.Background()))

	var again syncBuffer
	cfg.Security.Announce = &again
	n = startNode(t, cfg)
	c = httpsClient(caPool(t, n))
	status, _ = getAs(t, c, n.URL()+"/", "elastic", password)
	require.Equal(t, http.StatusOK, status, "a restart lost the password")
	require.NotContains(t, again.String(), "password", "a restart printed a password again")

	require.NoError(t, n.Shutdown(context.Background()))
	cfg.Security.ElasticPassword = auth.Secret("replaced-password")
	n = startNode(t, cfg)
	require.NoError(t, n.ResetElasticPassword(context.Background()))
	c = httpsClient(caPool(t, n))
	status, _ = getAs(t, c, n.URL()+"/", "elastic", password)
	require.Equal(t, http.StatusUnauthorized, status, "the old password still works after a reset")
	status, _ = getAs(t, c, n.URL()+"/", "elastic", "replaced-password")
	require.Equal(t, http.StatusOK, status)
}
