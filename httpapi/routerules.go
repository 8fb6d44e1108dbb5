package httpapi

import (
	"strings"

	"github.com/weftsearch/weft/security/auth"
)

// routeRuleSpecs maps every route to how it is authorized (see authz.go).
// A key is "METHODS PATTERN" with methods joined by |. Keep it in step
// with routes(): New refuses to build a server with security on when a
// registered route has no rule here.
var routeRuleSpecs = map[string]routeRule{
	"GET /{$}": cluster(auth.ActionMain),

	// Index administration.
	"PUT /{index}":                      indices(auth.ActionCreateIndex),
	"GET /{index}":                      indices(auth.ActionGetIndex),
	"DELETE /{index}":                   indices(auth.ActionDeleteIndex),
	"POST /{index}/_close":              indices(auth.ActionCloseIndex),
	"POST /{index}/_open":               indices(auth.ActionOpenIndex),
	"GET /_mapping":                     indices(auth.ActionGetMapping),
	"GET /{index}/_mapping":             indices(auth.ActionGetMapping),
	"PUT|POST /{index}/_mapping":        indices(auth.ActionPutMapping),
	"GET /_mappings":                    indices(auth.ActionGetMapping),
	"GET /{index}/_mappings":            indices(auth.ActionGetMapping),
	"PUT|POST /{index}/_mappings":       indices(auth.ActionPutMapping),
	"GET /_settings":                    indices(auth.ActionGetSettings),
	"GET /{index}/_settings":            indices(auth.ActionGetSettings),
	"PUT /{index}/_settings":            indices(auth.ActionUpdateSettings),
	"GET|POST /_refresh":                indices(auth.ActionRefresh),
	"GET|POST /{index}/_refresh":        indices(auth.ActionRefresh),
	"GET|POST /_analyze":                indices(auth.ActionAnalyze),
	"GET|POST /{index}/_analyze":        indices(auth.ActionAnalyze),
	"GET|POST /_validate/query":         indices(auth.ActionValidateQuery),
	"GET|POST /{index}/_validate/query": indices(auth.ActionValidateQuery),

	// Aliases.
	"PUT|POST /{index}/_alias/{name}":   indices(auth.ActionUpdateAliases),
	"PUT|POST /{index}/_aliases/{name}": indices(auth.ActionUpdateAliases),
	"DELETE /{index}/_alias/{name}":     indices(auth.ActionUpdateAliases),
	"DELETE /{index}/_aliases/{name}":   indices(auth.ActionUpdateAliases),
	"GET /_alias":                       indices(auth.ActionGetAliases),
	"GET /_alias/{name}":                indices(auth.ActionGetAliases),
	"GET /{index}/_alias":               indices(auth.ActionGetAliases),
	"GET /{index}/_alias/{name}":        indices(auth.ActionGetAliases),
	"POST /_aliases":                    indices(auth.ActionUpdateAliases),

	// Documents: writes are checked on the index each lands in, with
	// the action of its op type (_create and op_type=create: create_doc).
	"PUT|POST /{index}/_doc/{id}":    indices(auth.ActionIndexDoc),
	"POST /{index}/_doc":             indices(auth.ActionIndexDoc),
	"PUT|POST /{index}/_create/{id}": indices(auth.ActionCreateDoc),
	"GET /{index}/_doc/{id}":         indices(auth.ActionGet),
	"GET /{index}/_source/{id}":      indices(auth.ActionGet),
	"DELETE /{index}/_doc/{id}":      indices(auth.ActionDeleteDoc),
	"POST /{index}/_update/{id}":     indices(auth.ActionUpdateDoc),
	"GET|POST /_mget":                indices(auth.ActionMultiGet),
	"GET|POST /{index}/_mget":        indices(auth.ActionMultiGet),
	// Bulk: each item with its own action; a refused item fails alone.
	"PUT|POST /_bulk":                 self(auth.ActionBulk),
	"PUT|POST /{index}/_bulk":         self(auth.ActionBulk),
	"POST /{index}/_delete_by_query":  indices(auth.ActionDeleteByQuery),
	"POST /{index}/_update_by_query":  indices(auth.ActionUpdateByQuery),
	"POST /_reindex":                  self(auth.ActionIndexDoc),
	"GET|POST /{index}/_explain/{id}": indices(auth.ActionExplain),
	"GET|POST /_field_caps":           indices(auth.ActionFieldCaps),
	"GET|POST /{index}/_field_caps":   indices(auth.ActionFieldCaps),

	// Search.
	"GET|POST /_search":                    indices(auth.ActionSearch),
	"GET|POST /{index}/_search":            indices(auth.ActionSearch),
	"GET|POST /_count":                     indices(auth.ActionCount),
	"GET|POST /{index}/_count":             indices(auth.ActionCount),
	"GET|POST /_msearch":                   indices(auth.ActionSearch),
	"GET|POST /{index}/_msearch":           indices(auth.ActionSearch),
	"GET|POST /_search/scroll":             self(auth.ActionScroll),
	"GET|POST /_search/scroll/{scroll_id}": self(auth.ActionScroll),
	"DELETE /_search/scroll":               self(auth.ActionClearScroll),
	"DELETE /_search/scroll/{scroll_id}":   self(auth.ActionClearScroll),
	"POST /{index}/_pit":                   indices(auth.ActionOpenPointInTime),
	"DELETE /_pit":                         self(auth.ActionClosePointInTime),

	// Statistics.
	"GET /_stats":                  indices(auth.ActionIndicesStats),
	"GET /_stats/{metric}":         indices(auth.ActionIndicesStats),
	"GET /{index}/_stats":          indices(auth.ActionIndicesStats),
	"GET /{index}/_stats/{metric}": indices(auth.ActionIndicesStats),
	"GET /_nodes/stats":            cluster(auth.ActionNodesStats),
	"GET /_nodes/stats/{metric}":   cluster(auth.ActionNodesStats),

	// Cluster.
	"GET /_cluster/health":         cluster(auth.ActionClusterHealth),
	"GET /_cluster/health/{index}": cluster(auth.ActionClusterHealth),
	"GET /_nodes":                  cluster(auth.ActionNodesInfo),
	"GET /_nodes/{node_id}":        cluster(auth.ActionNodesInfo),
	"GET /_cluster/state":          cluster(auth.ActionClusterState),
	"POST /_cluster/reroute":       cluster(auth.ActionClusterReroute),
	"GET /_cluster/settings":       cluster(auth.ActionClusterGetSettings),
	"PUT /_cluster/settings":       cluster(auth.ActionClusterUpdateSettings),

	// _cat: the index ones list only the indices the principal may
	// monitor (or, for count, search).
	"GET /_cat/indices":           indices(auth.ActionIndicesStats),
	"GET /_cat/indices/{index}":   indices(auth.ActionIndicesStats),
	"GET /_cat/health":            cluster(auth.ActionClusterHealth),
	"GET /_cat/count":             indices(auth.ActionCount),
	"GET /_cat/count/{index}":     indices(auth.ActionCount),
	"GET /_cat/aliases":           indices(auth.ActionGetAliases),
	"GET /_cat/aliases/{name}":    indices(auth.ActionGetAliases),
	"GET /_cat/nodes":             cluster(auth.ActionNodesInfo),
	"GET /_cat/allocation":        cluster(auth.ActionNodesStats),
	"GET /_cat/allocation/{node}": cluster(auth.ActionNodesStats),
	"GET /_cat/shards":            indices(auth.ActionIndicesStats),
	"GET /_cat/shards/{index}":    indices(auth.ActionIndicesStats),
	"GET /_cat/recovery":          indices(auth.ActionIndicesRecovery),
	"GET /_cat/recovery/{index}":  indices(auth.ActionIndicesRecovery),

	// Weft's own: reports need monitor, pprof manage.
	"GET /_weft/fabric/devices":    cluster(auth.ActionWeftMonitor),
	"GET /_weft/fabric/conns":      cluster(auth.ActionWeftMonitor),
	"GET /_weft/raft":              cluster(auth.ActionWeftMonitor),
	"GET /metrics":                 cluster(auth.ActionWeftMetrics),
	"GET /debug/pprof/":            cluster(auth.ActionWeftPprof),
	"GET /debug/pprof/cmdline":     cluster(auth.ActionWeftPprof),
	"GET /debug/pprof/profile":     cluster(auth.ActionWeftPprof),
	"GET|POST /debug/pprof/symbol": cluster(auth.ActionWeftPprof),
	"GET /debug/pprof/trace":       cluster(auth.ActionWeftPprof),

	// Security (security.go).
	"GET /_security/_authenticate":              cluster(auth.ActionAuthenticate),
	"PUT|POST /_security/user/{name}":           cluster(auth.ActionPutUser),
	"GET /_security/user":                       cluster(auth.ActionGetUser),
	"GET /_security/user/{name}":                cluster(auth.ActionGetUser),
	"DELETE /_security/user/{name}":             cluster(auth.ActionDeleteUser),
	"PUT|POST /_security/user/{name}/_password": self(auth.ActionChangePassword),
	"PUT|POST /_security/user/_password":        self(auth.ActionChangePassword),
	"PUT|POST /_security/user/{name}/_enable":   cluster(auth.ActionSetEnabledUser),
	"PUT|POST /_security/user/{name}/_disable":  cluster(auth.ActionSetEnabledUser),
	"PUT|POST /_security/role/{name}":           cluster(auth.ActionPutRole),
	"GET /_security/role":                       cluster(auth.ActionGetRole),
	"GET /_security/role/{name}":                cluster(auth.ActionGetRole),
	"DELETE /_security/role/{name}":             cluster(auth.ActionDeleteRole),
	"PUT|POST /_security/api_key":               self(auth.ActionCreateAPIKey),
	"GET /_security/api_key":                    self(auth.ActionGetAPIKey),
	"DELETE /_security/api_key":                 self(auth.ActionInvalidateAPIKey),
}

// routeRules is routeRuleSpecs with one key per method.
var routeRules = func() map[string]routeRule {
	out := map[string]routeRule{}
	for spec, rule := range routeRuleSpecs {
		methods, path, _ := strings.Cut(spec, " ")
		for _, m := range strings.Split(methods, "|") {
			out[m+" "+path] = rule
		}
	}
	return out
}()
