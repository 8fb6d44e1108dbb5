package cluster

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weftsearch/weft/cluster/state"
	"github.com/weftsearch/weft/security/auth"
)

// passwordSink records the generated elastic passwords a node hands out.
type passwordSink struct {
	mu  sync.Mutex
	got []auth.Secret
}

func (p *passwordSink) record(s auth.Secret) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, s)
}

func (p *passwordSink) all() []auth.Secret {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]auth.Secret(nil), p.got...)
}

func elasticHash(s *state.State) string {
	u, _ := s.Security.User(auth.ElasticUser)
	return u.PasswordHash
}

// The first start generates the elastic password once and hands it out;
// a restart keeps it and hands out nothing; a reset replaces it.
func TestElasticPasswordIsGeneratedOnceAndSurvivesRestart(t *testing.T) {
	sink := &passwordSink{}
	cfg := Config{NodeID: "id-solo", NodeName: "solo", DataDir: t.TempDir(), Timing: LocalTiming(), Logger: testLogger(t),
		PasswordHasher: testHasher, ElasticPasswordGenerated: sink.record}
	raftDir := filepath.Join(cfg.DataDir, raftDirName)
	require.NoError(t, os.Mkdir(raftDir, 0o755)) // as an older version left it
	n := newTestNet(t)
	solo := n.start(cfg)
	fi, err := os.Stat(raftDir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "the Raft state holds password hashes: owner only")
	s := awaitState(t, solo.c, 10*time.Second, func(s *state.State) bool { return s.Security.ElasticPasswordSet() })
	eventually(t, 5*time.Second, "the generated password handed out", func() bool { return len(sink.all()) == 1 })
	password := sink.all()[0]
	require.Len(t, password.Reveal(), auth.GeneratedPasswordLength)
	hash := elasticHash(s)
	require.NoError(t, testHasher.Compare(hash, password.Reveal()))
	solo.stop(t)

	again := n.start(cfg)
	awaitState(t, again.c, 10*time.Second, func(s *state.State) bool { return again.c.Ready() && s.Security.ElasticPasswordSet() })
	// The restarted node leads and has run its leader loop at least once
	// more (it records its new Raft address) before we look again.
	awaitState(t, again.c, 10*time.Second, func(s *state.State) bool { nd, ok := s.Nodes["id-solo"]; return ok && nd.RaftAddr == again.c.rn.addr })
	require.Len(t, sink.all(), 1, "a later start never generates another password")
	require.Equal(t, hash, elasticHash(again.c.State()))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reset, err := again.c.ResetElasticPassword(ctx, "")
	require.NoError(t, err)
	require.NotEqual(t, password, reset)
	require.NoError(t, testHasher.Compare(elasticHash(again.c.State()), reset.Reveal()))
	require.Len(t, sink.all(), 1)
}

// A configured password (WEFT_ELASTIC_PASSWORD) is used at the first
// start; a later start with another one keeps the first.
func TestConfiguredElasticPasswordIsUsedOnlyAtTheFirstStart(t *testing.T) {
	sink := &passwordSink{}
	cfg := Config{NodeID: "id-solo", NodeName: "solo", DataDir: t.TempDir(), Timing: LocalTiming(), Logger: testLogger(t),
		PasswordHasher: testHasher, ElasticPassword: "first-password", ElasticPasswordGenerated: sink.record}
	n := newTestNet(t)
	solo := n.start(cfg)
	s := awaitState(t, solo.c, 10*time.Second, func(s *state.State) bool { return s.Security.ElasticPasswordSet() })
	require.NoError(t, testHasher.Compare(elasticHash(s), "first-password"))
	solo.stop(t)

	cfg.ElasticPassword = "second-password"
	again := n.start(cfg)
	awaitState(t, again.c, 10*time.Second, func(s *state.State) bool { nd, ok := s.Nodes["id-solo"]; return ok && nd.RaftAddr == again.c.rn.addr })
	require.NoError(t, testHasher.Compare(elasticHash(again.c.State()), "first-password"))
	require.Empty(t, sink.all(), "a configured password is not handed out")
}

func TestConfigRefusesAWeakElasticPassword(t *testing.T) {
	_, err := New(Config{NodeID: "id", NodeName: "n", DataDir: t.TempDir(), ElasticPassword: "short"})
	require.ErrorIs(t, err, auth.ErrPasswordPolicy)
	require.NotContains(t, err.Error(), "short")
}

// Security proposals from a follower are forwarded to the leader, apply on
// every node, and the FSM's answers (results and sentinels) come back.
func TestSecurityProposalsFromAFollower(t *testing.T) {
	n := newTestNet(t)
	nodes := n.startInitial("n1", "n2", "n3")
	lead := leader(t, nodes)
	var follower *testNode
	for _, tn := range nodes {
		if tn != lead {
			follower = tn
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fc := follower.c

	created, err := fc.PutUser(ctx, auth.User{Username: "alice", PasswordHash: hashOf(t, "alice-pw"), Roles: []string{"reader"}, Enabled: true})
	require.NoError(t, err)
	require.True(t, created)
	created, err = fc.PutUser(ctx, auth.User{Username: "alice", Roles: []string{"reader", "writer"}, Enabled: true})
	require.NoError(t, err)
	require.False(t, created)
	_, err = fc.PutUser(ctx, auth.User{Username: "bob", PasswordHash: "not-a-hash", Enabled: true})
	require.ErrorIs(t, err, ErrInvalidCommand)
	require.ErrorIs(t, fc.SetUserEnabled(ctx, "nobody", true), ErrUserNotFound)
	require.NoError(t, fc.SetPassword(ctx, "alice", hashOf(t, "alice-new")))

	created, err = fc.PutRole(ctx, "reader", auth.Role{Indices: []auth.IndexPrivileges{{Names: []string{"logs-*"}, Privileges: []string{"read"}}}})
	require.NoError(t, err)
	require.True(t, created)
	_, err = fc.PutRole(ctx, "bad", auth.Role{Cluster: []string{"no_such_privilege"}})
	require.ErrorIs(t, err, ErrInvalidCommand)
	require.ErrorIs(t, err, auth.ErrInvalidRole)
	_, err = fc.PutRole(ctx, "superuser", auth.Role{})
	require.ErrorIs(t, err, ErrInvalidCommand)

	owner := auth.Principal{Username: "alice", Realm: auth.RealmNative}
	key, secret, err := auth.NewAPIKey(auth.CreateAPIKeyRequest{Name: "ci"}, owner, map[string]auth.Role{}, time.Now())
	require.NoError(t, err)
	require.NoError(t, fc.CreateAPIKey(ctx, key))
	invalidated, previously, err := fc.InvalidateAPIKeys(ctx, state.APIKeyFilter{Owner: "alice"})
	require.NoError(t, err)
	require.Equal(t, []string{key.ID}, invalidated)
	require.Empty(t, previously)
	require.NoError(t, fc.SetElasticPassword(ctx, hashOf(t, "elastic-pw")))

	found, err := fc.DeleteRole(ctx, "reader")
	require.NoError(t, err)
	require.True(t, found)
	found, err = fc.DeleteUser(ctx, "nobody")
	require.NoError(t, err)
	require.False(t, found)
	_, err = fc.DeleteUser(ctx, auth.ElasticUser)
	require.ErrorIs(t, err, ErrInvalidCommand)

	// Every node holds the same records, and authenticates with them.
	for _, tn := range nodes {
		s := awaitState(t, tn.c, 10*time.Second, func(s *state.State) bool { return s.Security.ElasticPasswordSet() })
		k, ok := s.Security.APIKey(key.ID)
		require.True(t, ok)
		require.True(t, k.Invalidated)
		require.NotContains(t, s.Security.RoleNames(), "reader")
		a, err := auth.NewAuthenticator(tn.c.SecurityStore(), auth.Config{Hasher: testHasher})
		require.NoError(t, err)
		p, err := a.Authenticate(ctx, auth.BasicCredentials("alice", "alice-new"))
		require.NoError(t, err)
		require.Equal(t, []string{"reader", "writer"}, p.Roles)
		_, err = a.Authenticate(ctx, auth.BasicCredentials(auth.ElasticUser, "elastic-pw"))
		require.NoError(t, err)
		_, err = a.Authenticate(ctx, auth.APIKeyCredentials(secret.ID, secret.APIKey))
		require.ErrorIs(t, err, auth.ErrAuthenticationFailed, "the key is invalidated")
	}
}
