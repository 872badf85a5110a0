package lessons

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Error is one problem in one content file: where it is and what is wrong.
type Error struct {
	File string // path inside the content FS
	Line int    // 1-based; 0 when the problem concerns the whole file
	Msg  string // what is wrong and what is allowed
}

// Error formats the problem as "file:line: msg" (or "file: msg" without a line).
func (e Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Errors is every problem found while loading a course, sorted by file and line.
type Errors []Error

// Error lists the problems, one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// sorted returns es ordered by file, then line, keeping the order of
// problems reported on the same line.
func (es Errors) sorted() Errors {
	slices.SortStableFunc(es, func(a, b Error) int {
		if c := cmp.Compare(a.File, b.File); c != 0 {
			return c
		}
		return cmp.Compare(a.Line, b.Line)
	})
	return es
}

// problems collects errors for one file.
type problems struct {
	file string
	errs Errors
}

func (p *problems) add(line int, format string, args ...any) {
	p.errs = append(p.errs, Error{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)})
}
