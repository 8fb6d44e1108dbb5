package clusterbench

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/weftsearch/weft/benchmarks/enginebench"
)

// Query is one benchmark search: a name and an Elasticsearch query object.
type Query struct {
	Name  string
	Query json.RawMessage
}

// LoadQueries returns the queries of path (a JSON object of name → query,
// as testdata/sample/queries.json), sorted by name, followed by generated
// match queries on "body": words and word pairs of docs' bodies that match
// some but not most documents (enginebench.MakeQueries' term and boolean
// terms), alternating one word and two. The choice is deterministic for a
// corpus and seed.
func LoadQueries(path string, docs []enginebench.Doc, generated int, seed uint64) ([]Query, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("queries: %w", err)
	}
	var byName map[string]json.RawMessage
	if err := json.Unmarshal(raw, &byName); err != nil {
		return nil, fmt.Errorf("queries %s: want a JSON object of name → Elasticsearch query: %w", path, err)
	}
	var out []Query
	for name, q := range byName {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(q, &obj); err != nil || len(obj) != 1 {
			return nil, fmt.Errorf("queries %s: %q is not a query object with one key", path, name)
		}
		out = append(out, Query{Name: name, Query: q})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if generated == 0 {
		return out, nil
	}
	made, err := enginebench.MakeQueries(docs, generated, seed)
	if err != nil {
		return nil, err
	}
	for i := range generated {
		var text string
		if i%2 == 0 {
			text = made[enginebench.KindTerm][i].Terms[0]
		} else {
			text = strings.Join(made[enginebench.KindBoolean][i].Terms[:2], " ")
		}
		q, _ := json.Marshal(map[string]any{"match": map[string]any{"body": text}}) // strings always marshal
		out = append(out, Query{Name: "generated match " + text, Query: q})
	}
	return out, nil
}

// searchBody is the request body of q: the top size hits with _source.
func searchBody(q Query, size int) []byte {
	b, _ := json.Marshal(map[string]any{"query": q.Query, "size": size, "_source": true}) // raw JSON and ints always marshal
	return b
}
