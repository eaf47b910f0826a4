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
		{"func (w W) M() {}", "W.M"},
		{"func (w *G[T]) M() {}", "(*G[...]).M"},
		{"func (w G[K, V]) M() {}", "G[...].M"},
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

// TestSpacesAroundEquals: a key=value written with spaces around = is one
// error that says to remove them, at the key, and the value is read as if
// written without them (so nothing that depends on it is reported too).
func TestSpacesAroundEquals(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{`max_attempts = 3`, `"max_attempts = 3" has spaces around =: write max_attempts=3, without spaces`},
		{`max_attempts =3`, `"max_attempts =3" has spaces around =: write max_attempts=3, without spaces`},
		{`max_attempts= 3`, `"max_attempts= 3" has spaces around =: write max_attempts=3, without spaces`},
		{`dead_letter = "jobs.dead"`, `"dead_letter = \"jobs.dead\"" has spaces around =: write dead_letter="jobs.dead", without spaces`},
	} {
		src := "package p\n\n//stream:subscriber \"jobs\" prefetch=2 " + tc.args + " concurrency=4\nfunc Work() {}\n"
		_, afs, ds := scan(t, src)
		if len(ds) != 1 || ds[0].Msg != tc.want {
			t.Errorf("%s: diagnostics %v, want one: %s", tc.args, ds, tc.want)
			continue
		}
		if col := ds[0].Pos.Column; col != len(`//stream:subscriber "jobs" prefetch=2 `)+1 {
			t.Errorf("%s: at column %d, want the key's", tc.args, col)
		}
		ann := afs[0].ann
		if f := ann.fields; f.sub.Prefetch != 2 || f.sub.Concurrency != 4 || f.handler.Policy.MaxAttempts+len(f.handler.Policy.DeadLetter) == 0 {
			t.Errorf("%s: fields %+v, want prefetch, concurrency and the spaced key read", tc.args, f)
		}
	}
	// A lone "=value" has no key.
	_, _, ds := scan(t, "package p\n\n//stream:subscriber \"jobs\" =3\nfunc Work() {}\n")
	if len(ds) != 1 || ds[0].Msg != `"=3" has no key before =: write key=value without spaces, such as max_attempts=5` {
		t.Errorf("=3: %v", ds)
	}
	// "key= other=value" is a key without a value, not spacing.
	_, _, ds = scan(t, "package p\n\n//stream:subscriber \"jobs\" max_attempts= prefetch=2\nfunc Work() {}\n")
	if len(ds) != 1 || !strings.Contains(ds[0].Msg, "max_attempts has no value") {
		t.Errorf("a key without a value: %v", ds)
	}
}
