package esyaml

import (
	"net/http"
	"strings"
)

// route is one URL form of an API: its path with {part} placeholders and
// the methods it takes, preferred first.
type route struct {
	path    string
	methods []string
}

// apis maps an API name, as the do sections write it, to its routes, the
// most specific first: the first route whose parts are all given is used.
var apis = map[string][]route{
	"info":                       {{"/", get}},
	"ping":                       {{"/", head}},
	"index":                      {{"/{index}/_doc/{id}", []string{http.MethodPut}}, {"/{index}/_doc", post}},
	"create":                     {{"/{index}/_create/{id}", []string{http.MethodPut}}},
	"get":                        {{"/{index}/_doc/{id}", get}},
	"exists":                     {{"/{index}/_doc/{id}", head}},
	"get_source":                 {{"/{index}/_source/{id}", get}},
	"exists_source":              {{"/{index}/_source/{id}", head}},
	"delete":                     {{"/{index}/_doc/{id}", del}},
	"update":                     {{"/{index}/_update/{id}", post}},
	"explain":                    {{"/{index}/_explain/{id}", getPost}},
	"mget":                       {{"/{index}/_mget", getPost}, {"/_mget", getPost}},
	"bulk":                       {{"/{index}/_bulk", post}, {"/_bulk", post}},
	"search":                     {{"/{index}/_search", getPost}, {"/_search", getPost}},
	"msearch":                    {{"/{index}/_msearch", getPost}, {"/_msearch", getPost}},
	"count":                      {{"/{index}/_count", getPost}, {"/_count", getPost}},
	"scroll":                     {{"/_search/scroll/{scroll_id}", getPost}, {"/_search/scroll", getPost}},
	"clear_scroll":               {{"/_search/scroll/{scroll_id}", del}, {"/_search/scroll", del}},
	"field_caps":                 {{"/{index}/_field_caps", getPost}, {"/_field_caps", getPost}},
	"delete_by_query":            {{"/{index}/_delete_by_query", post}},
	"update_by_query":            {{"/{index}/_update_by_query", post}},
	"reindex":                    {{"/_reindex", post}},
	"open_point_in_time":         {{"/{index}/_pit", post}},
	"close_point_in_time":        {{"/_pit", del}},
	"indices.create":             {{"/{index}", []string{http.MethodPut}}},
	"indices.delete":             {{"/{index}", del}},
	"indices.exists":             {{"/{index}", head}},
	"indices.get":                {{"/{index}", get}},
	"indices.get_mapping":        {{"/{index}/_mapping", get}, {"/_mapping", get}},
	"indices.put_mapping":        {{"/{index}/_mapping", []string{http.MethodPut}}},
	"indices.refresh":            {{"/{index}/_refresh", post}, {"/_refresh", post}},
	"indices.get_settings":       {{"/{index}/_settings/{name}", get}, {"/{index}/_settings", get}, {"/_settings/{name}", get}, {"/_settings", get}},
	"indices.put_settings":       {{"/{index}/_settings", []string{http.MethodPut}}, {"/_settings", []string{http.MethodPut}}},
	"indices.close":              {{"/{index}/_close", post}},
	"indices.open":               {{"/{index}/_open", post}},
	"indices.put_alias":          {{"/{index}/_alias/{name}", []string{http.MethodPut}}},
	"indices.delete_alias":       {{"/{index}/_alias/{name}", del}},
	"indices.get_alias":          {{"/{index}/_alias/{name}", get}, {"/_alias/{name}", get}, {"/{index}/_alias", get}, {"/_alias", get}},
	"indices.exists_alias":       {{"/{index}/_alias/{name}", head}, {"/_alias/{name}", head}},
	"indices.update_aliases":     {{"/_aliases", post}},
	"indices.analyze":            {{"/{index}/_analyze", getPost}, {"/_analyze", getPost}},
	"indices.validate_query":     {{"/{index}/_validate/query", getPost}, {"/_validate/query", getPost}},
	"indices.stats":              {{"/{index}/_stats/{metric}", get}, {"/_stats/{metric}", get}, {"/{index}/_stats", get}, {"/_stats", get}},
	"indices.put_template":       {{"/_template/{name}", []string{http.MethodPut}}},
	"indices.put_index_template": {{"/_index_template/{name}", []string{http.MethodPut}}},
	"cat.indices":                {{"/_cat/indices/{index}", get}, {"/_cat/indices", get}},
	"cat.count":                  {{"/_cat/count/{index}", get}, {"/_cat/count", get}},
	"cat.aliases":                {{"/_cat/aliases/{name}", get}, {"/_cat/aliases", get}},
	"cat.health":                 {{"/_cat/health", get}},
	"cluster.health":             {{"/_cluster/health/{index}", get}, {"/_cluster/health", get}},
	"cluster.put_settings":       {{"/_cluster/settings", []string{http.MethodPut}}},
	"cluster.get_settings":       {{"/_cluster/settings", get}},
}

var (
	get     = []string{http.MethodGet}
	head    = []string{http.MethodHead}
	post    = []string{http.MethodPost}
	del     = []string{http.MethodDelete}
	getPost = []string{http.MethodGet, http.MethodPost}
)

// parts returns the {part} names of a route's path.
func (r route) parts() []string {
	var out []string
	for s := r.path; ; {
		i := strings.IndexByte(s, '{')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(s[i:], '}')
		out = append(out, s[i+1:i+j])
		s = s[i+j+1:]
	}
}
