package httpapi

import "sort"

// RoutePatterns lists every route pattern that has an authorization rule.
func RoutePatterns() []string {
	out := make([]string, 0, len(routeRules))
	for p := range routeRules {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// SetUndecidedHook makes s call f for a request it served 2xx without an
// authorization decision.
func SetUndecidedHook(s *Server, f func(pattern string)) { s.onUndecided = f }
