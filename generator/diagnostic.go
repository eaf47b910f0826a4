package generator

import (
	"cmp"
	"fmt"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
)

// Diagnostic is one problem found in a package: a position and a message
// that says what is wrong and how to fix it. Positions hold absolute file
// names; Format writes them relative to a directory, as the compiler does.
type Diagnostic struct {
	// Pos is where the problem is. Its Filename is empty for problems that
	// have no place in a file (a package that cannot be listed, say).
	Pos token.Position
	// Msg says what is wrong and how to fix it.
	Msg string
	// Related points at a second place the problem involves, for example
	// the other handler of a duplicate; its What says what is there.
	Related []Related
}

// Related is a second place a Diagnostic refers to.
type Related struct {
	Pos  token.Position
	What string
}

// String formats the diagnostic with absolute paths.
func (d Diagnostic) String() string { return d.Format("") }

// Format writes the diagnostic as "file:line:col: message", with the file
// relative to dir when that is shorter (dir "" keeps paths as they are).
// Related places follow the message as "; <what> at file:line:col".
func (d Diagnostic) Format(dir string) string {
	var b strings.Builder
	if d.Pos.Filename != "" {
		b.WriteString(formatPosition(d.Pos, dir))
		b.WriteString(": ")
	}
	b.WriteString(d.Msg)
	for _, r := range d.Related {
		fmt.Fprintf(&b, "; %s at %s", r.What, formatPosition(r.Pos, dir))
	}
	return b.String()
}

// formatPosition writes file:line:col with the file relative to dir.
func formatPosition(p token.Position, dir string) string {
	s := RelativePath(dir, p.Filename)
	if p.Line > 0 {
		s += fmt.Sprintf(":%d", p.Line)
		if p.Column > 0 {
			s += fmt.Sprintf(":%d", p.Column)
		}
	}
	return s
}

// RelativePath returns path relative to dir when that is shorter than path,
// else path. With dir "" it returns path.
func RelativePath(dir, path string) string {
	if dir == "" || !filepath.IsAbs(path) {
		return path
	}
	rel, err := filepath.Rel(dir, path)
	if err != nil || len(rel) >= len(path) {
		return path
	}
	return rel
}

// sortDiagnostics orders diagnostics by file, line and column; those at one
// position keep the order they were found in (a type's fields in
// declaration order, say), which is the same on every run.
func sortDiagnostics(ds []Diagnostic) {
	slices.SortStableFunc(ds, func(a, b Diagnostic) int {
		return cmp.Or(
			cmp.Compare(a.Pos.Filename, b.Pos.Filename),
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Column, b.Pos.Column),
		)
	})
}

// diagnostics collects the problems of one package.
type diagnostics struct {
	fset *token.FileSet
	list []Diagnostic
}

// add records a problem at pos.
func (ds *diagnostics) add(pos token.Pos, format string, args ...any) *Diagnostic {
	ds.list = append(ds.list, Diagnostic{Pos: ds.fset.Position(pos), Msg: fmt.Sprintf(format, args...)})
	return &ds.list[len(ds.list)-1]
}

// addRelated records a problem at pos that involves a second place.
func (ds *diagnostics) addRelated(pos, related token.Pos, what string, format string, args ...any) {
	d := ds.add(pos, format, args...)
	d.Related = append(d.Related, Related{Pos: ds.fset.Position(related), What: what})
}
