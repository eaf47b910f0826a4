package generator

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// scan parses src and scans it for annotations.
func scan(t *testing.T, src string) (*token.FileSet, []annotatedFunc, []Diagnostic) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	ds := &diagnostics{fset: fset}
	return fset, scanFile(f, ds), ds.list
}

func TestParseAnnotation(t *testing.T) {
	src := "package p\n\n" +
		"// Work works.\n" +
		"//\n" +
		"//stream:subscriber \"jobs\" max_attempts=5 dead_letter=\"jobs.dead\" retry_delay=1s,10s\n" +
		"func Work() {}\n"
	fset, afs, ds := scan(t, src)
	if len(ds) > 0 {
		t.Fatalf("diagnostics: %v", ds)
	}
	if len(afs) != 1 || afs[0].fn.Name.Name != "Work" {
		t.Fatalf("annotations %+v, want one on Work", afs)
	}
	ann := afs[0].ann
	if ann.name != "jobs" {
		t.Errorf("name %q", ann.name)
	}
	col := func(p token.Pos) int { return fset.Position(p).Column }
	if col(ann.slash) != 1 || col(ann.namePos) != 21 {
		t.Errorf("directive at column %d, name at %d; want 1 and 21", col(ann.slash), col(ann.namePos))
	}
	line := "//stream:subscriber \"jobs\" max_attempts=5 dead_letter=\"jobs.dead\" retry_delay=1s,10s"
	want := []struct{ key, value string }{{"max_attempts", "5"}, {"dead_letter", "jobs.dead"}, {"retry_delay", "1s,10s"}}
	if len(ann.args) != len(want) {
		t.Fatalf("args %+v", ann.args)
	}
	for i, w := range want {
		a := ann.args[i]
		if a.key != w.key || a.value != w.value {
			t.Errorf("arg %d = %s=%q, want %s=%q", i, a.key, a.value, w.key, w.value)
		}
		if got, want := col(a.pos), strings.Index(line, w.key+"=")+1; got != want {
			t.Errorf("%s at column %d, want %d", w.key, got, want)
		}
	}
	if p := ann.fields.handler.Policy; p.MaxAttempts != 5 || p.DeadLetter != "jobs.dead" || len(ann.fields.sub.RetryDelays) != 2 {
		t.Errorf("fields %+v", ann.fields)
	}
}

func TestScanFileIgnoresOtherComments(t *testing.T) {
	src := "package p\n\n" +
		"//go:generate go tool streamgen\n\n" +
		"// Work mentions stream:subscriber in prose, and a //stream:subscriber\n" +
		"// directive in the middle of a line is no directive.\n" +
		"//\n" +
		"//lint:ignore U1000 unused\n" +
		"func Work() {}\n"
	_, afs, ds := scan(t, src)
	if len(afs) != 0 || len(ds) != 0 {
		t.Errorf("annotations %v, diagnostics %v; want none", afs, ds)
	}
}

func TestScanFileSeveralOnOneFunction(t *testing.T) {
	src := "package p\n\n" +
		"//stream:subscriber \"a\"\n" +
		"//stream:subscriber \"b\" prefetch=2\n" +
		"func Work() {}\n"
	_, afs, ds := scan(t, src)
	if len(ds) != 0 || len(afs) != 2 || afs[0].ann.name != "a" || afs[1].ann.name != "b" || afs[0].fn != afs[1].fn {
		t.Errorf("annotations %+v, diagnostics %v; want a and b on Work", afs, ds)
	}
}

func TestRecvString(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"func (w *W) M() {}", "(*W).M"},
		{"func (w W) M() {}", "(W).M"},
		{"func (w *G[T]) M() {}", "(*G[...]).M"},
		{"func (w G[K, V]) M() {}", "(G[...]).M"},
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", "package p\n"+tc.src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := methodName(f.Decls[0].(*ast.FuncDecl)); got != tc.want {
			t.Errorf("methodName(%s) = %q, want %q", tc.src, got, tc.want)
		}
	}
}
