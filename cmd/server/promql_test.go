package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// selector is one series selector of a PromQL query: the metric it names
// ("" when it names none, as in {job="lab"}) and its label matchers.
type selector struct {
	metric   string
	matchers []matcher
}

// matcher is one label matcher: name op "value", op one of = != =~ !~.
type matcher struct {
	name, op, value string
}

// promqlNames are the words of PromQL that are never a metric: its
// aggregations, its functions, its binary operators and modifiers, and its
// number words. A word followed by "(" that is not among them is reported
// as an unknown function, so a misspelt function fails too.
var promqlNames = func() map[string]string {
	m := map[string]string{}
	for kind, words := range map[string]string{
		"aggregation": "sum min max avg group stddev stdvar count count_values bottomk topk quantile limitk limit_ratio",
		"function": "abs absent absent_over_time acos acosh asin asinh atan atanh avg_over_time ceil changes clamp clamp_max clamp_min " +
			"cos cosh count_over_time day_of_month day_of_week day_of_year days_in_month deg delta deriv " +
			"double_exponential_smoothing end exp floor histogram_avg histogram_count histogram_fraction histogram_quantile " +
			"histogram_stddev histogram_stdvar histogram_sum holt_winters hour idelta increase info irate label_join label_replace " +
			"last_over_time ln log10 log2 mad_over_time max_over_time min_over_time minute month pi predict_linear " +
			"present_over_time quantile_over_time rad rate resets round scalar sgn sin sinh sort sort_by_label " +
			"sort_by_label_desc sort_desc sqrt start stddev_over_time stdvar_over_time sum_over_time tan tanh time timestamp vector year",
		"label list": "by without on ignoring group_left group_right",
		"keyword":    "and or unless atan2 bool offset inf nan",
	} {
		for _, w := range strings.Fields(words) {
			m[w] = kind
		}
	}
	return m
}()

// promqlSelectors returns the series selectors of a PromQL expression as
// Grafana sends it: string literals, numbers, durations, ranges and
// subqueries ([5m], [$__rate_interval], [1m:1s]), the label lists of
// by/without/on/ignoring/group_left/group_right, Grafana's variables
// ($__rate_interval, ${job}) and comments are skipped; every other word is
// a metric name unless it is a PromQL word (promqlNames). A word followed
// by "(" must be a function or an aggregation, and parentheses must
// balance. It is no full parser: Prometheus's own may still refuse what
// it accepts.
func promqlSelectors(expr string) ([]selector, error) {
	var out []selector
	s := expr
	i, depth := 0, 0
	skipSpace := func() {
		for i < len(s) && strings.ContainsRune(" \t\r\n", rune(s[i])) {
			i++
		}
	}
	for i < len(s) {
		c := s[i]
		switch {
		case strings.ContainsRune(" \t\r\n", rune(c)):
			i++
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			_, n, err := promqlString(s[i:])
			if err != nil {
				return nil, fmt.Errorf("at %d: %w", i, err)
			}
			i += n
		case c == '$':
			i++
			if i < len(s) && s[i] == '{' {
				end := strings.IndexByte(s[i:], '}')
				if end < 0 {
					return nil, fmt.Errorf("at %d: ${ without }", i)
				}
				i += end + 1
				break
			}
			for i < len(s) && isWordByte(s[i]) {
				i++
			}
		case c == '[':
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("at %d: [ without ]", i)
			}
			i += end + 1
		case c == '{':
			ms, n, err := promqlMatchers(s[i:])
			if err != nil {
				return nil, fmt.Errorf("at %d: %w", i, err)
			}
			i += n
			sel := selector{matchers: ms}
			for _, m := range ms {
				if m.name == "__name__" && m.op == "=" {
					sel.metric = m.value
				}
			}
			out = append(out, sel)
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			// A number (0.99, 1e-3, 0x1f) or a duration (5m, 1h30m).
			for i < len(s) && (isWordByte(s[i]) || s[i] == '.') {
				i++
				if (s[i-1] == 'e' || s[i-1] == 'E') && i < len(s) && (s[i] == '+' || s[i] == '-') {
					i++
				}
			}
		case isWordByte(c):
			start := i
			for i < len(s) && isWordByte(s[i]) {
				i++
			}
			word := s[start:i]
			skipSpace()
			next := byte(0)
			if i < len(s) {
				next = s[i]
			}
			kind, known := promqlNames[word]
			switch {
			case kind == "label list":
				if next == '(' {
					end := strings.IndexByte(s[i:], ')')
					if end < 0 {
						return nil, fmt.Errorf("at %d: %s( without )", start, word)
					}
					i += end + 1
				}
			case known:
			case next == '(':
				return nil, fmt.Errorf("at %d: %s( is no PromQL function or aggregation", start, word)
			default:
				sel := selector{metric: word}
				if next == '{' {
					ms, n, err := promqlMatchers(s[i:])
					if err != nil {
						return nil, fmt.Errorf("at %d: %w", i, err)
					}
					i += n
					sel.matchers = ms
				}
				out = append(out, sel)
			}
		case c == '(' || c == ')':
			if c == '(' {
				depth++
			} else if depth--; depth < 0 {
				return nil, fmt.Errorf("at %d: ) without (", i)
			}
			i++
		default:
			i++ // an operator, a comma
		}
	}
	if depth > 0 {
		return nil, fmt.Errorf("%d ( without )", depth)
	}
	return out, nil
}

func isWordByte(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// promqlString reads the string literal s starts with and returns its
// value and length.
func promqlString(s string) (string, int, error) {
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if q != '`' {
				i++
			}
		case q:
			lit := s[:i+1]
			if q == '\'' {
				lit = `"` + strings.ReplaceAll(strings.ReplaceAll(s[1:i], `\'`, `'`), `"`, `\"`) + `"`
			}
			v, err := strconv.Unquote(lit)
			return v, i + 1, err
		}
	}
	return "", 0, fmt.Errorf("string %.20q… never ends", s)
}

// promqlMatchers reads the {name op "value", …} s starts with and returns
// its matchers and length.
func promqlMatchers(s string) ([]matcher, int, error) {
	var ms []matcher
	i := 1
	skipSpace := func() {
		for i < len(s) && strings.ContainsRune(" \t\r\n", rune(s[i])) {
			i++
		}
	}
	for {
		skipSpace()
		if i < len(s) && s[i] == '}' {
			return ms, i + 1, nil
		}
		start := i
		for i < len(s) && isWordByte(s[i]) {
			i++
		}
		if start == i {
			return nil, 0, fmt.Errorf("label matchers %q: want a label name at %d", s, i)
		}
		m := matcher{name: s[start:i]}
		skipSpace()
		for _, op := range []string{"=~", "!~", "!=", "="} {
			if strings.HasPrefix(s[i:], op) {
				m.op = op
				i += len(op)
				break
			}
		}
		if m.op == "" {
			return nil, 0, fmt.Errorf("label matchers %q: want =, !=, =~ or !~ after %s", s, m.name)
		}
		skipSpace()
		if i >= len(s) || !strings.ContainsRune(`"'`+"`", rune(s[i])) {
			return nil, 0, fmt.Errorf("label matchers %q: want a quoted value for %s", s, m.name)
		}
		v, n, err := promqlString(s[i:])
		if err != nil {
			return nil, 0, err
		}
		m.value = v
		i += n
		ms = append(ms, m)
		skipSpace()
		if i < len(s) && s[i] == ',' {
			i++
		} else if i >= len(s) || s[i] != '}' {
			return nil, 0, fmt.Errorf("label matchers %q: want , or } after %s", s, m.name)
		}
	}
}

// TestPromQLSelectors: the metric names and matchers read from queries of
// the shapes the dashboard uses, and the mistakes that must be errors.
func TestPromQLSelectors(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string // metric{matcher…} as selectorString writes it
		err  string   // part of the error; "" for none
	}{
		// A gauge, its job named.
		{`admit_limit{job="lab"}`, []string{`admit_limit{job="lab"}`}, ""},
		// A quantile from histogram buckets: the function, the aggregation,
		// its by (le) and Grafana's range variable are not metrics; 0.99 is
		// a number.
		{`histogram_quantile(0.99, sum by (le) (rate(admit_queue_seconds_bucket{job="proxy"}[$__rate_interval])))`,
			[]string{`admit_queue_seconds_bucket{job="proxy"}`}, ""},
		// by after the aggregation's parenthesis, a label value holding
		// braces and a comma, an offset's duration and a number with an
		// exponent.
		{`sum(rate(capacitylab_http_requests_total{job="server", route="/a{b},c"}[5m] offset 1h30m)) by (route) * 1e-3`,
			[]string{`capacitylab_http_requests_total{job="server",route="/a{b},c"}`}, ""},
		// Two selectors joined by a binary operator with on(…) and
		// group_left(…); a regex matcher; single quotes.
		{`lab_queued{job=~'la.'} / on (instance) group_left (x) lab_workers{job!="proxy"}`,
			[]string{`lab_queued{job=~"la."}`, `lab_workers{job!="proxy"}`}, ""},
		// A selector with no metric word, naming it by __name__; a subquery's
		// range; a Grafana variable in braces; a comment.
		{"max_over_time({__name__=\"lab_in_service\", job=\"${job}\"}[1m:1s]) # the most in service\n",
			[]string{`lab_in_service{__name__="lab_in_service",job="${job}"}`}, ""},
		// and/or/unless and bool are operators, not metrics.
		{`lab_queued{job="lab"} > bool 0 and lab_workers{job="lab"} or vector(0)`,
			[]string{`lab_queued{job="lab"}`, `lab_workers{job="lab"}`}, ""},
		// A misspelt function is an error, not a metric nor silence.
		{`histogram_quantil(0.5, admit_queue_seconds_bucket{job="lab"})`, nil, "histogram_quantil( is no PromQL function"},
		// Unbalanced parentheses are errors.
		{`rate(lab_done_total{job="lab"}[1m]`, nil, "1 ( without )"},
		{`sum(rate(lab_done_total{job="lab"}[1m])))`, nil, ") without ("},
		// Broken matchers are errors.
		{`admit_limit{job="lab"`, nil, "want , or } after job"},
		{`admit_limit{,}`, nil, "want a label name"},
		{`admit_limit{job lab}`, nil, "want =, !=, =~ or !~"},
		{`admit_limit{job=lab}`, nil, "want a quoted value"},
		{`admit_limit{job="lab}`, nil, "never ends"},
	} {
		sels, err := promqlSelectors(tc.expr)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("promqlSelectors(%q) = %v, %v; want an error containing %q", tc.expr, sels, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("promqlSelectors(%q): %v", tc.expr, err)
			continue
		}
		var got []string
		for _, s := range sels {
			got = append(got, selectorString(s))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("promqlSelectors(%q) =\n  %q\nwant\n  %q", tc.expr, got, tc.want)
		}
	}
}

// selectorString writes a selector back as PromQL, its matchers in order.
func selectorString(s selector) string {
	var ms []string
	for _, m := range s.matchers {
		ms = append(ms, m.name+m.op+strconv.Quote(m.value))
	}
	return s.metric + "{" + strings.Join(ms, ",") + "}"
}
