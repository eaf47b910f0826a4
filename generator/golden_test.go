package generator

import (
	"bytes"
	"context"
	"flag"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/streamgen/streamgen/generator/internal/gentest"
)

var update = flag.Bool("update", false, "rewrite the wanted output of the golden cases under testdata")

// goldenCase is a directory under testdata: an input package and, in want/,
// the generated file or the diagnostics it must produce.
type goldenCase struct {
	name string
	dir  string // absolute
}

func (c goldenCase) wantFile() string   { return filepath.Join(c.dir, "want", DefaultOutput) }
func (c goldenCase) wantErrors() string { return filepath.Join(c.dir, "want", "errors.txt") }

// generates reports whether the case wants a generated file (rather than
// diagnostics).
func (c goldenCase) generates(t *testing.T) bool {
	_, err := os.Stat(c.wantFile())
	return err == nil
}

// goldenCases lists the case directories under testdata.
func goldenCases(t testing.TB) []goldenCase {
	t.Helper()
	root := gentest.RepoRoot(t)
	entries, err := os.ReadDir(filepath.Join(root, "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []goldenCase
	for _, e := range entries {
		if e.IsDir() {
			cases = append(cases, goldenCase{name: e.Name(), dir: filepath.Join(root, "testdata", e.Name())})
		}
	}
	if len(cases) == 0 {
		t.Fatal("no golden cases under testdata")
	}
	return cases
}

// goldenResults generates every case once per test binary: one load for
// all of them keeps the tests fast.
var goldenResults = sync.OnceValues(func() (map[string]*Package, error) {
	root, err := filepath.Abs("..")
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(filepath.Join(root, "testdata"))
	if err != nil {
		return nil, err
	}
	var patterns []string
	for _, e := range entries {
		if e.IsDir() {
			patterns = append(patterns, "./testdata/"+e.Name())
		}
	}
	pkgs, err := Generate(context.Background(), Config{Dir: root}, patterns...)
	if err != nil {
		return nil, err
	}
	byDir := map[string]*Package{}
	for _, p := range pkgs {
		byDir[p.Dir] = p
	}
	return byDir, nil
})

func TestGolden(t *testing.T) {
	results, err := goldenResults()
	if err != nil {
		t.Fatal(err)
	}
	generating, failing := 0, 0
	for _, c := range goldenCases(t) {
		t.Run(c.name, func(t *testing.T) {
			p := results[c.dir]
			if p == nil {
				t.Fatalf("no package was loaded from %s", c.dir)
			}
			var got []string
			for _, d := range p.Diagnostics {
				got = append(got, d.Format(c.dir))
			}
			gotErrors := strings.Join(got, "\n")
			if gotErrors != "" {
				gotErrors += "\n"
			}
			if *update {
				updateCase(t, c, p, gotErrors)
			}
			if c.generates(t) {
				generating++
				want, err := os.ReadFile(c.wantFile())
				if err != nil {
					t.Fatal(err)
				}
				if gotErrors != "" {
					t.Fatalf("diagnostics, want %s:\n%s", c.wantFile(), gotErrors)
				}
				if !bytes.Equal(p.Source, want) {
					t.Errorf("generated file differs from %s (go test ./generator -update rewrites it):\n%s", c.wantFile(), gentest.LineDiff(string(want), string(p.Source)))
				}
				if !bytes.HasPrefix(want, []byte(Header+"\n")) {
					t.Errorf("the first line is not %q", Header)
				}
				formatted, err := format.Source(want)
				if err != nil || !bytes.Equal(formatted, want) {
					t.Errorf("the generated file is not gofmt'd (%v):\n%s", err, gentest.LineDiff(string(formatted), string(want)))
				}
				return
			}
			failing++
			want, err := os.ReadFile(c.wantErrors())
			if err != nil {
				t.Fatalf("case has neither want/%s nor want/errors.txt: %v", DefaultOutput, err)
			}
			if p.Source != nil {
				t.Errorf("a file was generated for a case that wants diagnostics")
			}
			if gotErrors != string(want) {
				t.Errorf("diagnostics differ from %s:\n%s", c.wantErrors(), gentest.LineDiff(string(want), gotErrors))
			}
		})
	}
	if !*update && !t.Failed() && (generating < 12 || failing < 12) {
		t.Errorf("%d generating and %d failing golden cases, want at least 12 of each", generating, failing)
	}
}

// updateCase rewrites the wanted output of a case from what was produced.
func updateCase(t *testing.T, c goldenCase, p *Package, gotErrors string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(c.dir, "want"), 0o755); err != nil {
		t.Fatal(err)
	}
	write, remove := c.wantErrors(), c.wantFile()
	content := []byte(gotErrors)
	if gotErrors == "" {
		write, remove, content = c.wantFile(), c.wantErrors(), p.Source
	}
	if err := os.WriteFile(write, content, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(remove); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
}

// TestGoldenOutputsCompile type-checks every generating case together with
// its wanted file: a golden output that does not compile is no golden.
func TestGoldenOutputsCompile(t *testing.T) {
	root := gentest.RepoRoot(t)
	overlay := map[string][]byte{}
	var patterns []string
	for _, c := range goldenCases(t) {
		if !c.generates(t) {
			continue
		}
		want, err := os.ReadFile(c.wantFile())
		if err != nil {
			t.Fatal(err)
		}
		overlay[filepath.Join(c.dir, DefaultOutput)] = want
		patterns = append(patterns, "./testdata/"+c.name)
	}
	pkgs, err := packages.Load(&packages.Config{
		Mode:    packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
		Dir:     root,
		Overlay: overlay,
	}, patterns...)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != len(patterns) {
		t.Fatalf("loaded %d packages, want %d", len(pkgs), len(patterns))
	}
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Errorf("%s: %s", p.PkgPath, e)
		}
		names := []string{}
		for _, f := range p.GoFiles {
			names = append(names, filepath.Base(f))
		}
		if !slices.Contains(names, DefaultOutput) {
			t.Errorf("%s: the wanted file was not part of the package (files %v)", p.PkgPath, names)
		}
		// A package with subscribers gets Mount; one that only declares
		// publishers gets none.
		subscribes := false
		for _, f := range p.Syntax {
			for _, g := range f.Comments {
				subscribes = subscribes || strings.Contains(commentText(g), "//"+directive+" ")
			}
		}
		if declared := p.Types != nil && p.Types.Scope().Lookup(mountName) != nil; declared != subscribes {
			t.Errorf("%s: Mount declared %v with the wanted file in place, want %v", p.PkgPath, declared, subscribes)
		}
	}
}

// commentText returns the comments of g as written, directives included.
func commentText(g *ast.CommentGroup) string {
	var b strings.Builder
	for _, c := range g.List {
		b.WriteString(c.Text)
		b.WriteString("\n")
	}
	return b.String()
}

// No generated publisher sends to a queue by name when the queue is bound
// to an exchange: such a message would go around the exchange, and the
// other queues bound to it would never see it.
func TestGeneratedPublishersNeverGoAroundAnExchange(t *testing.T) {
	results, err := goldenResults()
	if err != nil {
		t.Fatal(err)
	}
	boundCases := 0
	for dir, p := range results {
		if p.Source == nil {
			continue
		}
		bound := map[string]string{}
		for _, s := range p.Subscriptions {
			if s.Runtime.Exchange != "" {
				bound[s.Runtime.Name] = s.Runtime.Exchange
			}
		}
		if len(bound) == 0 {
			continue
		}
		boundCases++
		f, err := parser.ParseFile(token.NewFileSet(), p.File, p.Source, 0)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			var queue ast.Expr
			switch sel.Sel.Name {
			case "Queue":
				if len(call.Args) == 1 {
					queue = call.Args[0]
				}
			}
			if lit, ok := queue.(*ast.BasicLit); ok {
				name, _ := strconv.Unquote(lit.Value)
				if ex, ok := bound[name]; ok {
					t.Errorf("%s: a generated publisher sends to queue %q by name, around the exchange %s it is bound to", filepath.Base(dir), name, ex)
				}
			}
			return true
		})
	}
	if boundCases < 3 {
		t.Errorf("%d generating golden cases have a subscription bound to an exchange, want at least 3", boundCases)
	}
}
