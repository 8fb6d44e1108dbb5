package esdsl

import "strings"

// didYouMean returns " did you mean [x]?" naming the candidates closest to
// name (as Elasticsearch suggests for unknown names: similarity above 0.7
// by edit distance), or "" when none is close.
func didYouMean(name string, candidates []string) string {
	var close []string
	for _, c := range candidates {
		longest := max(len(c), len(name))
		if longest > 0 && 1-float64(editDistance(name, c))/float64(longest) > 0.7 {
			close = append(close, c)
		}
	}
	switch len(close) {
	case 0:
		return ""
	case 1:
		return " did you mean [" + close[0] + "]?"
	}
	return " did you mean any of [" + strings.Join(close, ", ") + "]?"
}

// editDistance is the Levenshtein distance of two strings (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
