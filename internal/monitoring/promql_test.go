package monitoring

import (
	"fmt"
	"strings"
	"unicode"
)

// promqlFuncs are the PromQL functions and aggregations the rules and the
// dashboard may call; anything else followed by "(" is refused, so that a
// misspelt metric name cannot pass as a function.
var promqlFuncs = map[string]bool{
	"sum": true, "count": true, "avg": true, "max": true, "min": true, "time": true, "vector": true,
	"rate": true, "increase": true, "max_over_time": true, "min_over_time": true, "avg_over_time": true,
	"absent": true, "topk": true, "bottomk": true, "changes": true, "clamp_min": true,
}

// promqlKeywords are binary operators and modifiers; those in
// promqlLabelLists take a parenthesized list of label names.
var promqlKeywords = map[string]bool{
	"and": true, "or": true, "unless": true, "bool": true, "offset": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}
var promqlLabelLists = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// metricNames returns the metric names expr selects: the identifiers that
// are not functions, keywords, label names (inside {...} or a by/on list),
// strings, numbers or durations.
func metricNames(expr string) ([]string, error) {
	var names []string
	rs := []rune(expr)
	isIdentStart := func(r rune) bool { return r == '_' || r == ':' || unicode.IsLetter(r) }
	isIdent := func(r rune) bool { return isIdentStart(r) || unicode.IsDigit(r) }
	skipString := func(i int) (int, error) {
		q := rs[i]
		for j := i + 1; j < len(rs); j++ {
			if rs[j] == '\\' && q != '`' {
				j++
				continue
			}
			if rs[j] == q {
				return j + 1, nil
			}
		}
		return 0, fmt.Errorf("unterminated string in %q", expr)
	}
	skipTo := func(i int, open, close rune) (int, error) {
		for j := i + 1; j < len(rs); j++ {
			switch {
			case rs[j] == '"' || rs[j] == '\'' || rs[j] == '`':
				k, err := skipString(j)
				if err != nil {
					return 0, err
				}
				j = k - 1
			case rs[j] == close:
				return j + 1, nil
			case rs[j] == open:
				return 0, fmt.Errorf("nested %c in %q", open, expr)
			}
		}
		return 0, fmt.Errorf("unclosed %c in %q", open, expr)
	}
	nextNonSpace := func(i int) int {
		for i < len(rs) && unicode.IsSpace(rs[i]) {
			i++
		}
		return i
	}
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case unicode.IsSpace(r):
			i++
		case r == '"' || r == '\'' || r == '`':
			j, err := skipString(i)
			if err != nil {
				return nil, err
			}
			i = j
		case r == '{':
			j, err := skipTo(i, '{', '}')
			if err != nil {
				return nil, err
			}
			i = j
		case r == '[':
			j, err := skipTo(i, '[', ']')
			if err != nil {
				return nil, err
			}
			i = j
		case unicode.IsDigit(r) || (r == '.' && i+1 < len(rs) && unicode.IsDigit(rs[i+1])):
			for i < len(rs) && (isIdent(rs[i]) || rs[i] == '.') {
				i++
			}
		case isIdentStart(r):
			j := i
			for j < len(rs) && isIdent(rs[j]) {
				j++
			}
			word := string(rs[i:j])
			k := nextNonSpace(j)
			switch {
			case promqlLabelLists[word]:
				if k < len(rs) && rs[k] == '(' {
					end, err := skipTo(k, '(', ')')
					if err != nil {
						return nil, err
					}
					j = end
				}
			case promqlKeywords[strings.ToLower(word)], promqlFuncs[word]:
			case k < len(rs) && rs[k] == '(':
				if !promqlFuncs[word] {
					return nil, fmt.Errorf("%q calls %s(), not a PromQL function this test knows", expr, word)
				}
			default:
				names = append(names, word)
			}
			i = j
		case strings.ContainsRune("()+-*/%^<>=!,", r):
			i++
		default:
			return nil, fmt.Errorf("unexpected %q in %q", r, expr)
		}
	}
	return names, nil
}
