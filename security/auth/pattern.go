package auth

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// namePattern matches names (index names, action names) against a set of
// patterns: exact names, globs with * (any run) and ? (one character), and
// /regular expressions/ anchored to the whole name.
type namePattern struct {
	any     bool
	exact   map[string]struct{}
	globs   []string
	regexps []*regexp.Regexp
}

// compilePatterns compiles patterns; regexp (whether /re/ is allowed) is
// true for index names, false for action names.
func compilePatterns(patterns []string, allowRegexp bool) (namePattern, error) {
	var p namePattern
	for _, s := range patterns {
		switch {
		case s == "":
			return namePattern{}, fmt.Errorf("%w: an empty name pattern; use an index name, a pattern with * or ?, or a /regular expression/", ErrInvalidRole)
		case s == "*":
			p.any = true
		case allowRegexp && len(s) >= 2 && s[0] == '/' && s[len(s)-1] == '/':
			re, err := regexp.Compile(`^(?:` + s[1:len(s)-1] + `)$`)
			if err != nil {
				return namePattern{}, fmt.Errorf("%w: name pattern [%s] is not a valid regular expression: %v", ErrInvalidRole, s, err)
			}
			p.regexps = append(p.regexps, re)
		case strings.ContainsAny(s, "*?"):
			p.globs = append(p.globs, s)
		default:
			if p.exact == nil {
				p.exact = map[string]struct{}{}
			}
			p.exact[s] = struct{}{}
		}
	}
	return p, nil
}

func (p *namePattern) match(name string) bool {
	if p.any {
		return true
	}
	if _, ok := p.exact[name]; ok {
		return true
	}
	for _, g := range p.globs {
		if globMatch(g, name) {
			return true
		}
	}
	for _, re := range p.regexps {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

// globMatch reports whether name matches pattern, where * matches any run of
// characters (also none) and ? exactly one character. It runs in
// O(len(pattern)·len(name)) at worst, with no recursion.
func globMatch(pattern, name string) bool {
	px, nx := 0, 0
	starPx, starNx := -1, 0 // where to resume after the last *
	for px < len(pattern) || nx < len(name) {
		if px < len(pattern) {
			switch c := pattern[px]; c {
			case '*':
				starPx, starNx = px, nx
				px++
				continue
			case '?':
				if nx < len(name) {
					_, size := utf8.DecodeRuneInString(name[nx:])
					px, nx = px+1, nx+size
					continue
				}
			default:
				if nx < len(name) && name[nx] == c {
					px, nx = px+1, nx+1
					continue
				}
			}
		}
		if starPx < 0 || starNx >= len(name) {
			return false
		}
		// Let the last * swallow one more character and try again.
		_, size := utf8.DecodeRuneInString(name[starNx:])
		starNx += size
		px, nx = starPx+1, starNx
	}
	return true
}
