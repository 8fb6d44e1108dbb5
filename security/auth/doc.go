// Package auth decides who a request comes from and what it may do, with
// Elasticsearch's semantics: Basic and ApiKey credentials, native and
// reserved users, roles with cluster and index privileges on index-name
// patterns, API keys limited by a snapshot of their owner's roles, and the
// 401 and 403 security_exception bodies.
//
// It is HTTP-agnostic and holds no state of its own beyond a bounded cache
// of verified passwords: users, roles and API keys are read through Store,
// which the cluster's Raft state implements. The models (User, Role,
// APIKey) are JSON so they can live in that state; secrets are kept only as
// hashes. Subpackage authhttp is the HTTP middleware.
//
// The flow of a request:
//
//	creds, err := auth.ParseAuthorization(r.Header.Get("Authorization"))
//	p, err := authenticator.Authenticate(ctx, creds)     // 401 on error
//	err = auth.CheckIndices(p, auth.ActionSearch, concrete) // 403 on error
package auth
