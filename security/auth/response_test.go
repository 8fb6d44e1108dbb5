package auth

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestErrorResponses(t *testing.T) {
	forbidden := CheckCluster(Principal{Username: "bob"}, ActionClusterUpdateSettings)
	for _, tc := range []struct {
		name  string
		err   error
		creds Credentials
		want  string
	}{
		{name: "missing credentials", err: ErrNoCredentials,
			want: `{"error":{"root_cause":[{"type":"security_exception","reason":"missing authentication credentials for REST request [/]","header":{"WWW-Authenticate":["Basic realm=\"security\", charset=\"UTF-8\"","ApiKey"]}}],"type":"security_exception","reason":"missing authentication credentials for REST request [/]","header":{"WWW-Authenticate":["Basic realm=\"security\", charset=\"UTF-8\"","ApiKey"]}},"status":401}`},
		{name: "wrong password", err: ErrAuthenticationFailed, creds: BasicCredentials("bob", "pw"),
			want: `{"error":{"root_cause":[{"type":"security_exception","reason":"unable to authenticate user [bob] for REST request [/]","header":{"WWW-Authenticate":["Basic realm=\"security\", charset=\"UTF-8\"","ApiKey"]}}],"type":"security_exception","reason":"unable to authenticate user [bob] for REST request [/]","header":{"WWW-Authenticate":["Basic realm=\"security\", charset=\"UTF-8\"","ApiKey"]}},"status":401}`},
		{name: "bad api key", err: ErrAuthenticationFailed, creds: APIKeyCredentials("id", "k"),
			want: `{"error":{"root_cause":[{"type":"security_exception","reason":"unable to authenticate with provided credentials and anonymous access is not allowed for this request","header":{"WWW-Authenticate":["Basic realm=\"security\", charset=\"UTF-8\"","ApiKey"]}}],"type":"security_exception","reason":"unable to authenticate with provided credentials and anonymous access is not allowed for this request","header":{"WWW-Authenticate":["Basic realm=\"security\", charset=\"UTF-8\"","ApiKey"]}},"status":401}`},
		{name: "malformed header", err: &CredentialsError{Scheme: "Basic", Reason: "invalid basic authentication header encoding"},
			want: `{"error":{"root_cause":[{"type":"security_exception","reason":"invalid basic authentication header encoding","header":{"WWW-Authenticate":["Basic realm=\"security\", charset=\"UTF-8\"","ApiKey"]}}],"type":"security_exception","reason":"invalid basic authentication header encoding","header":{"WWW-Authenticate":["Basic realm=\"security\", charset=\"UTF-8\"","ApiKey"]}},"status":401}`},
		{name: "forbidden", err: forbidden,
			want: `{"error":{"root_cause":[{"type":"security_exception","reason":"action [cluster:admin/settings/update] is unauthorized for user [bob] with effective roles [], this action is granted by the cluster privileges [manage,all]"}],"type":"security_exception","reason":"action [cluster:admin/settings/update] is unauthorized for user [bob] with effective roles [], this action is granted by the cluster privileges [manage,all]"},"status":403}`},
		{name: "wrapped forbidden", err: errors.Join(errors.New("ctx"), forbidden),
			want: `{"error":{"root_cause":[{"type":"security_exception","reason":"action [cluster:admin/settings/update] is unauthorized for user [bob] with effective roles [], this action is granted by the cluster privileges [manage,all]"}],"type":"security_exception","reason":"action [cluster:admin/settings/update] is unauthorized for user [bob] with effective roles [], this action is granted by the cluster privileges [manage,all]"},"status":403}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, ok := ResponseFor(tc.err, "/", tc.creds)
			require.True(t, ok)
			b, err := json.Marshal(resp)
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(b))
		})
	}
	_, ok := ResponseFor(errors.New("disk full"), "/", Credentials{})
	require.False(t, ok, "not this package's error")
}

func TestAuthenticated(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Principal
		want string
	}{
		{name: "native", p: Principal{Username: "bob", Realm: RealmNative, Roles: []string{"r1"}, FullName: "Bob B"},
			want: `{"username":"bob","roles":["r1"],"full_name":"Bob B","email":null,"metadata":{},"enabled":true,"authentication_realm":{"name":"default_native","type":"native"},"lookup_realm":{"name":"default_native","type":"native"},"authentication_type":"realm"}`},
		{name: "reserved", p: Principal{Username: "elastic", Realm: RealmReserved, Roles: []string{"superuser"}},
			want: `{"username":"elastic","roles":["superuser"],"full_name":null,"email":null,"metadata":{"_reserved":true},"enabled":true,"authentication_realm":{"name":"reserved","type":"reserved"},"lookup_realm":{"name":"reserved","type":"reserved"},"authentication_type":"realm"}`},
		{name: "api key", p: Principal{Username: "bob", Realm: RealmAPIKey, Roles: []string{"r1"}, APIKeyID: "k1", APIKeyName: "ci"},
			want: `{"username":"bob","roles":[],"full_name":null,"email":null,"metadata":{},"enabled":true,"authentication_realm":{"name":"_es_api_key","type":"_es_api_key"},"lookup_realm":{"name":"_es_api_key","type":"_es_api_key"},"authentication_type":"api_key","api_key":{"id":"k1","name":"ci"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(Authenticated(tc.p))
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(b))
		})
	}
}
