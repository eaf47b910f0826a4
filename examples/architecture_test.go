package examples_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// modulePath is this module's path: the packages the architecture page
// names are under it.
const modulePath = "github.com/streamgen/streamgen"

// architecturePicture returns the nodes (id → package path) and the
// imports (from id → to ids) of the mermaid picture of
// docs/architecture.md. Dotted arrows, which are not imports, are left
// out.
func architecturePicture(t *testing.T) (nodes map[string]string, imports map[[2]string]bool) {
	t.Helper()
	page, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(page), "```mermaid\n")
	if !ok {
		t.Fatal("docs/architecture.md has no mermaid picture")
	}
	block, _, _ = strings.Cut(block, "```")
	node := regexp.MustCompile(`(\w+)\["([^"]+)"\]`)
	edge := regexp.MustCompile(`^(\w+) --> (\w+)$`)
	nodes, imports = map[string]string{}, map[[2]string]bool{}
	for l := range strings.SplitSeq(block, "\n") {
		l = strings.TrimSpace(l)
		for _, m := range node.FindAllStringSubmatch(l, -1) {
			if p, seen := nodes[m[1]]; seen && p != m[2] {
				t.Fatalf("the picture names %s both %s and %s", m[1], p, m[2])
			}
			nodes[m[1]] = m[2]
		}
		bare := node.ReplaceAllString(l, "$1")
		if m := edge.FindStringSubmatch(bare); m != nil {
			imports[[2]string{m[1], m[2]}] = true
		} else if strings.Contains(bare, "-->") {
			t.Fatalf("the picture's line %q is not an arrow this test reads (a --> b)", l)
		}
	}
	if len(nodes) < 10 || len(imports) < 15 {
		t.Fatalf("the picture has %d packages and %d imports; the extraction is broken", len(nodes), len(imports))
	}
	return nodes, imports
}

// The picture of docs/architecture.md is the code as it is: every package
// it names exists, every arrow is an import, and every import among the
// packages it names is an arrow.
func TestArchitecturePictureIsTheCode(t *testing.T) {
	nodes, drawn := architecturePicture(t)
	var paths []string
	idOf := map[string]string{}
	for id, p := range nodes {
		for edgeID := range drawn {
			if edgeID[0] == id || edgeID[1] == id {
				goto used
			}
		}
		t.Errorf("the picture names %s and draws no import of it", p)
	used:
		paths = append(paths, modulePath+"/"+p)
		idOf[modulePath+"/"+p] = id
	}
	for e := range drawn {
		for _, id := range e {
			if _, ok := nodes[id]; !ok {
				t.Errorf("the arrow %s --> %s names %s, which has no package", e[0], e[1], id)
			}
		}
	}
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedImports, Dir: repoRoot(t)}, paths...)
	if err != nil {
		t.Fatal(err)
	}
	real := map[[2]string]bool{}
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Errorf("the picture names %s: %v", p.PkgPath, e)
		}
		from := idOf[p.PkgPath]
		for imp := range p.Imports {
			if to, ok := idOf[imp]; ok {
				real[[2]string{from, to}] = true
			}
		}
	}
	if len(pkgs) != len(paths) {
		t.Errorf("loaded %d of the picture's %d packages", len(pkgs), len(paths))
	}
	for e := range drawn {
		if !real[e] {
			t.Errorf("the picture draws %s importing %s, which it does not", nodes[e[0]], nodes[e[1]])
		}
	}
	for e := range real {
		if !drawn[e] {
			t.Errorf("%s imports %s, which the picture does not draw", nodes[e[0]], nodes[e[1]])
		}
	}
}

// Every package and file the architecture page names in code spans
// exists: a package path, a file in it, or a file of a package named on
// the same line.
func TestArchitectureNamesExist(t *testing.T) {
	page, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	root := repoRoot(t)
	span := regexp.MustCompile("`((?:cmd|generator|runtime|examples|internal)(?:/[a-z0-9_]+)*(?:\\.go)?|[a-z0-9_]+\\.go)`")
	named := 0
	for l := range strings.SplitSeq(string(page), "\n") {
		var dirs []string // the packages named on the line, for its bare file names
		for _, m := range span.FindAllStringSubmatch(l, -1) {
			if !strings.HasSuffix(m[1], ".go") {
				dirs = append(dirs, m[1])
			}
		}
		for _, m := range span.FindAllStringSubmatch(l, -1) {
			named++
			name := m[1]
			if strings.Contains(name, "/") || !strings.HasSuffix(name, ".go") {
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(name))); err != nil {
					t.Errorf("docs/architecture.md names %s, which does not exist", name)
				}
				continue
			}
			found := false
			if name == "streamgen_gen.go" { // the generated file, as the orders example has it
				dirs = append(dirs, "examples/orders")
			}
			for _, d := range dirs {
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(d), name)); err == nil {
					found = true
				}
			}
			if !found {
				t.Errorf("docs/architecture.md names %s in the line of %v, none of which holds it:\n%s", name, dirs, l)
			}
		}
	}
	if named < 40 {
		t.Fatalf("found %d names on the architecture page; the extraction is broken", named)
	}
}
