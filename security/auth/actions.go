package auth

// Action is an Elasticsearch action name, such as indices:data/read/search:
// what a request does, which the privileges are sets of. The constants
// below are the catalogue the HTTP API maps its endpoints to; any other
// name is checked by the same rules.
type Action string

// Scope says whether an action is authorized against the cluster
// privileges (CheckCluster) or the index privileges of named indices
// (CheckIndices).
type Scope int

const (
	// ScopeCluster actions are checked with CheckCluster.
	ScopeCluster Scope = iota + 1
	// ScopeIndices actions are checked with CheckIndices on the concrete
	// indices, after alias and wildcard resolution.
	ScopeIndices
)

// Index actions: check with CheckIndices (and FilterIndices for
// wildcards).
const (
	ActionSearch          Action = "indices:data/read/search"
	ActionMultiSearch     Action = "indices:data/read/msearch"
	ActionCount           Action = "indices:data/read/search" // _count runs a search, as in Elasticsearch
	ActionScroll          Action = "indices:data/read/scroll"
	ActionClearScroll     Action = "indices:data/read/scroll/clear"
	ActionOpenPointInTime Action = "indices:data/read/open_point_in_time"
	// ActionClosePointInTime names no index: check it with CheckIndices(p,
	// ActionClosePointInTime, nil), which holds for a principal with read on
	// any index. The same holds for ActionScroll and ActionClearScroll,
	// whose contexts the caller must also tie to the principal that opened
	// them.
	ActionClosePointInTime Action = "indices:data/read/close_point_in_time"
	ActionGet              Action = "indices:data/read/get"
	ActionMultiGet         Action = "indices:data/read/mget"
	ActionExplain          Action = "indices:data/read/explain"
	ActionTermVectors      Action = "indices:data/read/tv"
	ActionFieldCaps        Action = "indices:data/read/field_caps"
	ActionIndexDoc         Action = "indices:data/write/index"
	// ActionCreateDoc is an index request with op_type=create (PUT
	// _create/{id}, a bulk "create" item): create_doc grants it but not
	// ActionIndexDoc.
	ActionCreateDoc     Action = "indices:data/write/index:op_type/create"
	ActionUpdateDoc     Action = "indices:data/write/update"
	ActionDeleteDoc     Action = "indices:data/write/delete"
	ActionBulk          Action = "indices:data/write/bulk"
	ActionDeleteByQuery Action = "indices:data/write/delete/byquery"
	ActionUpdateByQuery Action = "indices:data/write/update/byquery"
	ActionCreateIndex   Action = "indices:admin/create"
	// ActionAutoCreateIndex is creating an index by writing to it.
	ActionAutoCreateIndex   Action = "indices:admin/auto_create"
	ActionDeleteIndex       Action = "indices:admin/delete"
	ActionGetIndex          Action = "indices:admin/get"
	ActionOpenIndex         Action = "indices:admin/open"
	ActionCloseIndex        Action = "indices:admin/close"
	ActionPutMapping        Action = "indices:admin/mapping/put"
	ActionAutoPutMapping    Action = "indices:admin/mapping/auto_put"
	ActionGetMapping        Action = "indices:admin/mappings/get"
	ActionGetFieldMapping   Action = "indices:admin/mappings/fields/get"
	ActionGetSettings       Action = "indices:monitor/settings/get"
	ActionUpdateSettings    Action = "indices:admin/settings/update"
	ActionUpdateAliases     Action = "indices:admin/aliases"
	ActionGetAliases        Action = "indices:admin/aliases/get"
	ActionRefresh           Action = "indices:admin/refresh"
	ActionFlush             Action = "indices:admin/flush"
	ActionForceMerge        Action = "indices:admin/forcemerge"
	ActionAnalyze           Action = "indices:admin/analyze"
	ActionValidateQuery     Action = "indices:admin/validate/query"
	ActionResolveIndex      Action = "indices:admin/resolve/index"
	ActionSearchShards      Action = "indices:admin/shards/search_shards"
	ActionIndicesStats      Action = "indices:monitor/stats"
	ActionIndicesRecovery   Action = "indices:monitor/recovery"
	ActionIndicesSegments   Action = "indices:monitor/segments"
	ActionIndicesShardStore Action = "indices:monitor/shard_stores"
)

// Cluster actions: check with CheckCluster.
const (
	ActionMain                  Action = "cluster:monitor/main" // GET /
	ActionClusterHealth         Action = "cluster:monitor/health"
	ActionClusterState          Action = "cluster:monitor/state"
	ActionClusterStats          Action = "cluster:monitor/stats"
	ActionClusterGetSettings    Action = "cluster:monitor/settings"
	ActionClusterUpdateSettings Action = "cluster:admin/settings/update"
	ActionClusterReroute        Action = "cluster:admin/reroute"
	ActionAllocationExplain     Action = "cluster:monitor/allocation/explain"
	ActionNodesInfo             Action = "cluster:monitor/nodes/info"
	ActionNodesStats            Action = "cluster:monitor/nodes/stats"
	ActionNodesHotThreads       Action = "cluster:monitor/nodes/hot_threads"
	ActionPendingTasks          Action = "cluster:monitor/task"
	ActionTasksList             Action = "cluster:monitor/tasks/lists"
	ActionPutIndexTemplate      Action = "indices:admin/index_template/put"
	ActionGetIndexTemplate      Action = "indices:admin/index_template/get"
	ActionDeleteIndexTemplate   Action = "indices:admin/index_template/delete"

	// Weft's own endpoints. Reports (/_weft/..., /metrics) need monitor;
	// what changes the node or exposes its memory (pprof) needs manage.
	ActionWeftMonitor Action = "cluster:monitor/weft/report"
	ActionWeftMetrics Action = "cluster:monitor/weft/metrics"
	ActionWeftAdmin   Action = "cluster:admin/weft/manage"
	ActionWeftPprof   Action = "cluster:admin/weft/pprof"

	// Security APIs (manage_security; API keys also manage_api_key, and
	// the caller's own keys manage_own_api_key through CheckOwnAPIKeys).
	ActionAuthenticate     Action = "cluster:admin/xpack/security/user/authenticate" // every principal may
	ActionPutUser          Action = "cluster:admin/xpack/security/user/put"
	ActionGetUser          Action = "cluster:admin/xpack/security/user/get"
	ActionDeleteUser       Action = "cluster:admin/xpack/security/user/delete"
	ActionChangePassword   Action = "cluster:admin/xpack/security/user/change_password" // see CheckChangePassword
	ActionSetEnabledUser   Action = "cluster:admin/xpack/security/user/set_enabled"
	ActionPutRole          Action = "cluster:admin/xpack/security/role/put"
	ActionGetRole          Action = "cluster:admin/xpack/security/role/get"
	ActionDeleteRole       Action = "cluster:admin/xpack/security/role/delete"
	ActionCreateAPIKey     Action = "cluster:admin/xpack/security/api_key/create"
	ActionGetAPIKey        Action = "cluster:admin/xpack/security/api_key/get"
	ActionInvalidateAPIKey Action = "cluster:admin/xpack/security/api_key/invalidate"
	ActionClearRealmCache  Action = "cluster:admin/xpack/security/realm/cache/clear"
)

// Catalogue lists the actions above with their scope, for documentation
// and for tests that every action is granted by some privilege.
func Catalogue() map[Action]Scope {
	idx := []Action{
		ActionSearch, ActionMultiSearch, ActionScroll, ActionClearScroll, ActionOpenPointInTime, ActionClosePointInTime,
		ActionGet, ActionMultiGet, ActionExplain, ActionTermVectors, ActionFieldCaps,
		ActionIndexDoc, ActionCreateDoc, ActionUpdateDoc, ActionDeleteDoc, ActionBulk,
		ActionDeleteByQuery, ActionUpdateByQuery, ActionCreateIndex, ActionAutoCreateIndex,
		ActionDeleteIndex, ActionGetIndex, ActionOpenIndex, ActionCloseIndex, ActionPutMapping,
		ActionAutoPutMapping, ActionGetMapping, ActionGetFieldMapping, ActionGetSettings,
		ActionUpdateSettings, ActionUpdateAliases, ActionGetAliases, ActionRefresh, ActionFlush,
		ActionForceMerge, ActionAnalyze, ActionValidateQuery, ActionResolveIndex, ActionSearchShards,
		ActionIndicesStats, ActionIndicesRecovery, ActionIndicesSegments, ActionIndicesShardStore,
	}
	cl := []Action{
		ActionMain, ActionClusterHealth, ActionClusterState, ActionClusterStats, ActionClusterGetSettings,
		ActionClusterUpdateSettings, ActionClusterReroute, ActionAllocationExplain, ActionNodesInfo,
		ActionNodesStats, ActionNodesHotThreads, ActionPendingTasks, ActionTasksList,
		ActionPutIndexTemplate, ActionGetIndexTemplate, ActionDeleteIndexTemplate,
		ActionWeftMonitor, ActionWeftMetrics, ActionWeftAdmin, ActionWeftPprof,
		ActionAuthenticate, ActionPutUser, ActionGetUser, ActionDeleteUser, ActionChangePassword, ActionSetEnabledUser,
		ActionPutRole, ActionGetRole, ActionDeleteRole, ActionCreateAPIKey, ActionGetAPIKey,
		ActionInvalidateAPIKey, ActionClearRealmCache,
	}
	m := make(map[Action]Scope, len(idx)+len(cl))
	for _, a := range idx {
		m[a] = ScopeIndices
	}
	for _, a := range cl {
		m[a] = ScopeCluster
	}
	return m
}
