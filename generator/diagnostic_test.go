package generator

import (
	"go/token"
	"path/filepath"
	"testing"
)

func TestDiagnosticFormat(t *testing.T) {
	dir := filepath.FromSlash("/home/me/billing")
	d := Diagnostic{
		Pos: token.Position{Filename: filepath.Join(dir, "work.go"), Line: 12, Column: 4},
		Msg: "prefetch=10 disagrees",
		Related: []Related{{
			Pos:  token.Position{Filename: filepath.Join(dir, "sub", "other.go"), Line: 3, Column: 9},
			What: "prefetch=5 is set on Other",
		}},
	}
	for _, tc := range []struct {
		dir, want string
	}{
		{dir, "work.go:12:4: prefetch=10 disagrees; prefetch=5 is set on Other at " + filepath.Join("sub", "other.go") + ":3:9"},
		{"", filepath.Join(dir, "work.go") + ":12:4: prefetch=10 disagrees; prefetch=5 is set on Other at " + filepath.Join(dir, "sub", "other.go") + ":3:9"},
	} {
		if got := d.Format(tc.dir); got != tc.want {
			t.Errorf("Format(%q) = %q, want %q", tc.dir, got, tc.want)
		}
	}
	if got, want := (Diagnostic{Msg: "no Go files"}).String(), "no Go files"; got != want {
		t.Errorf("without a position: %q, want %q", got, want)
	}
	noCol := Diagnostic{Pos: token.Position{Filename: filepath.Join(dir, "a.go"), Line: 2}, Msg: "m"}
	if got, want := noCol.Format(dir), "a.go:2: m"; got != want {
		t.Errorf("without a column: %q, want %q", got, want)
	}
}

func TestRelativePath(t *testing.T) {
	base := filepath.FromSlash("/a/b/c")
	for _, tc := range []struct{ path, want string }{
		{filepath.FromSlash("/a/b/c/x.go"), "x.go"},
		{filepath.FromSlash("/a/b/c/d/x.go"), filepath.FromSlash("d/x.go")},
		{filepath.FromSlash("/a/b/x.go"), filepath.FromSlash("../x.go")},
		// Relative would be longer than absolute: keep absolute.
		{filepath.FromSlash("/z.go"), filepath.FromSlash("/z.go")},
		{"rel.go", "rel.go"},
	} {
		if got := RelativePath(base, tc.path); got != tc.want {
			t.Errorf("RelativePath(%q, %q) = %q, want %q", base, tc.path, got, tc.want)
		}
	}
	if got := RelativePath("", "/x/y.go"); got != "/x/y.go" {
		t.Errorf("with no dir: %q", got)
	}
}

func TestParsePosition(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want token.Position
	}{
		{"/x/a.go:3:7", token.Position{Filename: "/x/a.go", Line: 3, Column: 7}},
		{"/x/a.go:3", token.Position{Filename: "/x/a.go", Line: 3}},
		{"/x/a.go", token.Position{Filename: "/x/a.go"}},
		{"", token.Position{}},
		{"-", token.Position{}},
	} {
		if got := parsePosition(tc.in); got != tc.want {
			t.Errorf("parsePosition(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestCompilerErrors(t *testing.T) {
	text := "# example.com/p\n" +
		"./a.go:3:2: undefined: Mount\n" +
		"./a.go:4:9: undefined: helper\n" +
		"something without a position\n"
	got := compilerErrors(text, "/src/p", map[string]bool{"Mount": true})
	want := []Diagnostic{
		{Pos: token.Position{Filename: filepath.Join("/src/p", "a.go"), Line: 4, Column: 9}, Msg: "undefined: helper"},
		{Msg: "something without a position"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d diagnostics %v, want %v", len(got), got, want)
	}
	for i := range want {
		if got[i].Pos != want[i].Pos || got[i].Msg != want[i].Msg {
			t.Errorf("diagnostic %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestSortDiagnosticsKeepsOrderAtOnePosition(t *testing.T) {
	at := func(file string, line, col int, msg string) Diagnostic {
		return Diagnostic{Pos: token.Position{Filename: file, Line: line, Column: col}, Msg: msg}
	}
	ds := []Diagnostic{at("b.go", 1, 1, "z"), at("a.go", 2, 5, "second"), at("a.go", 2, 5, "first?"), at("a.go", 1, 9, "x")}
	sortDiagnostics(ds)
	var got []string
	for _, d := range ds {
		got = append(got, d.Msg)
	}
	want := []string{"x", "second", "first?", "z"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}
