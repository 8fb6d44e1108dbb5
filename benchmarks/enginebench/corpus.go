package enginebench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"regexp"
	"sort"
	"strings"
)

// Doc is one benchmark document: its id and its JSON source, as both sides
// index it.
type Doc struct {
	ID     string
	Source []byte
}

// LoadDocs reads JSON lines (one object per line with a string "id" field,
// the format of testdata/sample and scripts/sample-data.sh) and returns n
// documents: the first n of the file, or, when n exceeds the file, the file
// repeated with "-r<k>" appended to the ids of the k-th repetition. n <= 0
// means every document of the file once.
func LoadDocs(path string, n int) ([]Doc, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("corpus: %w; run scripts/sample-data.sh or pass -corpus testdata/sample/emails.ndjson", err)
	}
	defer f.Close()
	var base []Doc
	br := bufio.NewReaderSize(f, 1<<20)
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadBytes('\n')
		line = bytes.TrimSpace(line)
		if len(line) > 0 {
			var head struct {
				ID string `json:"id"`
			}
			if jerr := json.Unmarshal(line, &head); jerr != nil || head.ID == "" {
				return nil, fmt.Errorf("corpus %s line %d: want a JSON object with a string \"id\" field", path, lineNo)
			}
			base = append(base, Doc{ID: head.ID, Source: line})
			if n > 0 && len(base) == n {
				return base, nil
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("corpus %s: %w", path, err)
		}
	}
	if len(base) == 0 {
		return nil, fmt.Errorf("corpus %s holds no documents", path)
	}
	if n <= 0 || n <= len(base) {
		return base, nil
	}
	docs := make([]Doc, 0, n)
	docs = append(docs, base...)
	for k := 1; len(docs) < n; k++ {
		for _, d := range base {
			if len(docs) == n {
				break
			}
			var m map[string]any
			if err := json.Unmarshal(d.Source, &m); err != nil {
				return nil, fmt.Errorf("corpus %s: document %s: %w", path, d.ID, err)
			}
			id := fmt.Sprintf("%s-r%d", d.ID, k)
			m["id"] = id
			src, err := json.Marshal(m)
			if err != nil {
				return nil, fmt.Errorf("corpus %s: document %s: %w", path, d.ID, err)
			}
			docs = append(docs, Doc{ID: id, Source: src})
		}
	}
	return docs, nil
}

// QueryKind names a benchmarked query shape.
type QueryKind string

// The benchmarked query shapes.
const (
	KindTerm    QueryKind = "term"
	KindBoolean QueryKind = "boolean"
	KindPhrase  QueryKind = "phrase"
)

// Query is one benchmark query, as terms that both sides turn into their
// own query objects (see esBody and rawQuery), so the two run the same
// search.
type Query struct {
	Kind QueryKind
	// Term: Terms[0] on "body". Boolean: must Terms[0] on "body", should
	// Terms[1] on "subject", must_not Terms[2] on "body". Phrase: Terms[0]
	// (two words) as a phrase on "body".
	Terms []string
}

var (
	// tokenRe approximates the standard analyzer's Unicode word tokens.
	tokenRe  = regexp.MustCompile(`[\p{L}\p{N}_']+`)
	wordRe   = regexp.MustCompile(`^[a-z]{4,12}$`)
	phraseRe = regexp.MustCompile(`^[a-z]{3,12}$`)
)

// MakeQueries derives n queries of each kind from the documents' bodies:
// terms found in between 1% and 25% of the documents (so they match some
// but not most), and word pairs found in at least 0.5% of them. The choice
// is deterministic for a given corpus and seed.
func MakeQueries(docs []Doc, n int, seed uint64) (map[QueryKind][]Query, error) {
	wordDF := map[string]int{}
	pairDF := map[string]int{}
	for _, d := range docs {
		var src struct {
			Body string `json:"body"`
		}
		if err := json.Unmarshal(d.Source, &src); err != nil {
			return nil, fmt.Errorf("document %s: %w", d.ID, err)
		}
		body := strings.ToLower(src.Body)
		seen := map[string]bool{}
		locs := tokenRe.FindAllStringIndex(body, -1)
		for i, loc := range locs {
			w := body[loc[0]:loc[1]]
			if wordRe.MatchString(w) && !seen[w] {
				seen[w] = true
				wordDF[w]++
			}
			// A phrase: two tokens separated by exactly one space.
			if i+1 < len(locs) && locs[i+1][0] == loc[1]+1 && body[loc[1]] == ' ' {
				w2 := body[locs[i+1][0]:locs[i+1][1]]
				if p := w + " " + w2; phraseRe.MatchString(w) && phraseRe.MatchString(w2) && !seen[p] {
					seen[p] = true
					pairDF[p]++
				}
			}
		}
	}
	words := pick(wordDF, max(len(docs)/100, 2), max(len(docs)/4, 3))
	pairs := pick(pairDF, max(len(docs)/200, 2), len(docs))
	if len(words) < 3 || len(pairs) < 1 {
		return nil, fmt.Errorf("corpus of %d documents is too small to derive queries (%d usable words, %d usable phrases); use more documents", len(docs), len(words), len(pairs))
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := map[QueryKind][]Query{}
	for range n {
		out[KindTerm] = append(out[KindTerm], Query{Kind: KindTerm, Terms: []string{words[rng.IntN(len(words))]}})
		p := rng.Perm(len(words))
		out[KindBoolean] = append(out[KindBoolean], Query{Kind: KindBoolean, Terms: []string{words[p[0]], words[p[1]], words[p[2]]}})
		out[KindPhrase] = append(out[KindPhrase], Query{Kind: KindPhrase, Terms: []string{pairs[rng.IntN(len(pairs))]}})
	}
	return out, nil
}

// pick returns the keys with lo <= df <= hi, sorted for determinism.
func pick(df map[string]int, lo, hi int) []string {
	var out []string
	for k, v := range df {
		if v >= lo && v <= hi {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// esBody is the Elasticsearch search body of q.
func esBody(q Query, size int) []byte {
	term := func(field, value string) map[string]any {
		return map[string]any{"term": map[string]any{field: value}}
	}
	var query map[string]any
	switch q.Kind {
	case KindTerm:
		query = term("body", q.Terms[0])
	case KindBoolean:
		query = map[string]any{"bool": map[string]any{
			"must":     []any{term("body", q.Terms[0])},
			"should":   []any{term("subject", q.Terms[1])},
			"must_not": []any{term("body", q.Terms[2])},
		}}
	case KindPhrase:
		query = map[string]any{"match_phrase": map[string]any{"body": q.Terms[0]}}
	}
	b, _ := json.Marshal(map[string]any{"query": query, "size": size}) // maps of strings always marshal
	return b
}
