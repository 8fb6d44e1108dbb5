package httpapi

import (
	"testing"

	"github.com/weftsearch/weft/security/auth"
)

// FuzzSecurityBodies feeds the /_security body parsers arbitrary bytes: they
// must not panic, and what they accept must hold their contracts (a
// password within the policy, an invalidation that selects something, a
// key with a name and no negative lifetime).
func FuzzSecurityBodies(f *testing.F) {
	for _, seed := range []string{
		`{"password":"secret-pw","roles":["a","b"],"full_name":"A B","email":"a@b.c","metadata":{"x":1},"enabled":false}`,
		`{"password":"abc"}`, `{"password_hash":"$2a$10$x"}`, `{"roles":[""]}`, `{"metadata":{"_x":1}}`,
		`{"name":"k","expiration":"1d","role_descriptors":{"r":{"cluster":["monitor"],"indices":[{"names":"logs-*","privileges":["read"]}]}},"metadata":{}}`,
		`{"name":"k","expiration":"-1d"}`, `{"name":"","role_descriptors":{"r":{"indices":[{"names":["/[/"],"privileges":["read"]}]}}}`,
		`{"ids":["a","b"]}`, `{"id":"a","ids":["b"]}`, `{"owner":true}`, `{"name":"x*","username":"u","realm_name":"native"}`,
		``, `{}`, `[]`, `null`, `{"password":null}`, `{"a":1}`, "{\"password\":\"\xff\xfe\xfd\xfc\xfb\xfa\"}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if b, err := parseUserBody(body); err == nil && b.Password != nil {
			if perr := auth.ValidatePassword(*b.Password); perr != nil {
				t.Fatalf("parseUserBody accepted a password the policy refuses: %v", perr)
			}
		}
		if pw, err := parsePasswordBody(body); err == nil {
			if perr := auth.ValidatePassword(pw); perr != nil {
				t.Fatalf("parsePasswordBody accepted a password the policy refuses: %v", perr)
			}
		}
		if req, err := parseAPIKeyBody(body); err == nil {
			if req.Name == "" || req.Expiration < 0 {
				t.Fatalf("parseAPIKeyBody accepted %+v", req)
			}
			for name, r := range req.RoleDescriptors {
				if verr := r.Validate(); verr != nil {
					t.Fatalf("parseAPIKeyBody accepted role descriptor %s: %v", name, verr)
				}
			}
		}
		if f, err := parseInvalidateBody(body); err == nil {
			if len(f.IDs) == 0 && f.Name == "" && !f.Owner && f.Username == "" && f.Realm == "" {
				t.Fatalf("parseInvalidateBody accepted a body that selects nothing: %q", body)
			}
		}
	})
}
