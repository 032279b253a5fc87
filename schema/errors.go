package schema

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Pos is a position in a schema file. Line and Col are 1-based; a zero
// Line means the position is unknown (the error then names the file only).
type Pos struct {
	Line, Col int
}

// Error is one problem in a schema, at a position.
type Error struct {
	File string
	Pos  Pos
	Msg  string
}

// Error formats the problem as FILE:LINE:COL: message.
func (e *Error) Error() string {
	if e.Pos.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Pos.Line, e.Pos.Col, e.Msg)
}

// ErrorList is every problem found in a schema, sorted by position.
type ErrorList []*Error

// Error returns one problem per line.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// sortErrors orders errors by file, line, column and message, and drops
// exact duplicates (one mistake reached by two checks).
func sortErrors(l ErrorList) ErrorList {
	slices.SortStableFunc(l, func(a, b *Error) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Col, b.Pos.Col),
			cmp.Compare(a.Msg, b.Msg),
		)
	})
	return slices.CompactFunc(l, func(a, b *Error) bool { return *a == *b })
}

// errs collects errors while a schema is loaded.
type errs struct {
	file string
	list ErrorList
}

func (e *errs) add(p Pos, format string, args ...any) {
	e.list = append(e.list, &Error{File: e.file, Pos: p, Msg: fmt.Sprintf(format, args...)})
}

// err returns the sorted list, or nil when there is none.
func (e *errs) err() error {
	if len(e.list) == 0 {
		return nil
	}
	return sortErrors(e.list)
}
