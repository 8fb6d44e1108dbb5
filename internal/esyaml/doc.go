// Package esyaml runs Elasticsearch's YAML REST tests (the format of
// rest-api-spec/test/**/*.yml in the Elasticsearch repository) against a
// server, and reports each test as passed, failed or skipped.
//
// The suite itself is Elasticsearch's and is not part of this repository:
// suite.txt lists the files (path and commit) that the acceptance run uses,
// to be fetched into a cache directory (see docs/es-yaml-tests.md).
//
// Supported: setup and teardown sections; do (with catch, headers,
// warnings and allowed_warnings, which are not checked); match (values,
// /regex/ in Java's COMMENTS mode), length, is_true, is_false, gt, gte, lt,
// lte, set, contains, close_to; skip (version ranges, features, known
// issues) and requires (cluster_features of the gte_vX.Y.Z form,
// test_runner_features); stash values ($name, ${name}) in values, keys and
// paths. APIs are mapped to HTTP routes by a table of their own (api.go)
// rather than the rest-api-spec JSON files; an API missing from it fails
// the test that calls it, naming the API.
//
// Between tests every index is deleted, as Elasticsearch's runner does.
package esyaml
