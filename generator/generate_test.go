package generator

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/streamgen/streamgen/generator/internal/gentest"
)

// TestDeterministic generates the map-order-sensitive case and every other
// case again: each run, in this process and in the one that wrote the
// golden files, gives the same bytes.
func TestDeterministic(t *testing.T) {
	first, err := goldenResults()
	if err != nil {
		t.Fatal(err)
	}
	root := gentest.RepoRoot(t)
	for run := range 2 {
		pkgs, err := Generate(context.Background(), Config{Dir: root}, "./testdata/map_order", "./testdata/publisher_names", "./testdata/both_brokers")
		if err != nil {
			t.Fatal(err)
		}
		if len(pkgs) != 3 {
			t.Fatalf("run %d: %d packages, want 3", run, len(pkgs))
		}
		for _, p := range pkgs {
			if p.Source == nil {
				t.Fatalf("run %d: %s generated nothing: %v", run, p.Path, p.Diagnostics)
			}
			if !bytes.Equal(p.Source, first[p.Dir].Source) {
				t.Errorf("run %d: %s differs from the first run", run, p.Path)
			}
			want, err := os.ReadFile(filepath.Join(p.Dir, "want", DefaultOutput))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(p.Source, want) {
				t.Errorf("run %d: %s differs from its golden file", run, p.Path)
			}
		}
	}
}

// TestImportPathPattern resolves an import path (not a directory): the
// stale generated file is found through the go command and left out.
func TestImportPathPattern(t *testing.T) {
	pkgs, err := Generate(context.Background(), Config{Dir: gentest.RepoRoot(t)}, "github.com/streamgen/streamgen/testdata/stale_tagged")
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 1 {
		t.Fatalf("%d packages, want 1", len(pkgs))
	}
	p := pkgs[0]
	if len(p.Diagnostics) > 0 || p.Source == nil {
		t.Fatalf("the stale file blocked generation: %v", p.Diagnostics)
	}
	if p.Existing == nil || !bytes.Contains(p.Existing, []byte("Issue")) {
		t.Errorf("the stale file on disk was not read as Existing")
	}
	if p.Current() {
		t.Error("a stale file reported as current")
	}
	want, err := os.ReadFile(filepath.Join(p.Dir, "want", DefaultOutput))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p.Source, want) {
		t.Error("output differs from the golden file")
	}
}

func TestNoAnnotations(t *testing.T) {
	pkgs, err := Generate(context.Background(), Config{Dir: "testdata/noannotations"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 1 {
		t.Fatalf("%d packages, want 1", len(pkgs))
	}
	p := pkgs[0]
	if p.Annotated || p.Source != nil || len(p.Diagnostics) > 0 {
		t.Errorf("Annotated=%v Source=%d bytes Diagnostics=%v; want an unannotated package with nothing to write", p.Annotated, len(p.Source), p.Diagnostics)
	}
	if p.Name != "noannotations" {
		t.Errorf("Name = %q", p.Name)
	}
	if err := p.Write(); err == nil {
		t.Error("Write with no Source succeeded")
	}
}

func TestOutputName(t *testing.T) {
	for _, bad := range []string{"sub/x.go", "x.txt", "x_test.go"} {
		if _, err := Generate(context.Background(), Config{Dir: "testdata/noannotations", Output: bad}); err == nil || !strings.Contains(err.Error(), "must be a file name") {
			t.Errorf("Output %q: err = %v, want it refused", bad, err)
		}
	}
	pkgs, err := Generate(context.Background(), Config{Dir: gentest.RepoRoot(t), Output: "wiring_gen.go"}, "./testdata/any_broker")
	if err != nil {
		t.Fatal(err)
	}
	if got := filepath.Base(pkgs[0].File); got != "wiring_gen.go" {
		t.Errorf("File = %s, want wiring_gen.go", pkgs[0].File)
	}
	if pkgs[0].Source == nil {
		t.Errorf("nothing generated: %v", pkgs[0].Diagnostics)
	}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := &Package{Path: "example.com/p", File: filepath.Join(dir, DefaultOutput), Source: []byte(Header + "\n\npackage p\n")}
	if p.Current() {
		t.Fatal("current before the file exists")
	}
	if err := p.Write(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p.File)
	if err != nil || !bytes.Equal(got, p.Source) {
		t.Fatalf("file holds %q (%v), want %q", got, err, p.Source)
	}
	fi, err := os.Stat(p.File)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	if !p.Current() {
		t.Error("not current after Write")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the file (no temporary left)", len(entries))
	}

	// A failed write keeps the old file.
	old := p.Source
	p.Source = []byte(Header + "\n\npackage p // new\n")
	p.File = filepath.Join(dir, "missing-dir", DefaultOutput)
	if err := p.Write(); err == nil || !strings.HasPrefix(err.Error(), "generator: write ") {
		t.Errorf("write into a missing directory: err = %v", err)
	}
	got, _ = os.ReadFile(filepath.Join(dir, DefaultOutput))
	if !bytes.Equal(got, old) {
		t.Error("the old file changed")
	}
}

// TestNoPackages: patterns that match no package are an error that says
// why, outside a module and in one.
func TestNoPackages(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "x.go"), []byte("package x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, patterns := range [][]string{nil, {"./does-not-exist"}} {
		pkgs, err := Generate(context.Background(), Config{Dir: outside}, patterns...)
		if err == nil || err.Error() != "generator: "+outside+" is not in a Go module (no go.mod in it or above): run streamgen in a module, or create one with go mod init" {
			t.Errorf("%v outside a module: %d packages, error %v", patterns, len(pkgs), err)
		}
	}
	mod := gentest.TempModule(t, "example.com/empty")
	if _, err := Generate(context.Background(), Config{Dir: mod, Env: gentest.GoEnv()}, "./..."); err == nil || err.Error() != "generator: no package matches ./..." {
		t.Errorf("./... in an empty module: error %v", err)
	}
}

func TestWithBuildTag(t *testing.T) {
	for _, tc := range []struct {
		flags, env, want []string
	}{
		{nil, []string{}, []string{"-tags=streamgen"}},
		{[]string{"-race"}, []string{}, []string{"-race", "-tags=streamgen"}},
		{[]string{"-tags=a,b"}, []string{}, []string{"-tags=a,b,streamgen"}},
		{[]string{"--tags=a"}, []string{}, []string{"--tags=a,streamgen"}},
		{[]string{"-tags", "a"}, []string{}, []string{"-tags", "a,streamgen"}},
		{[]string{"-tags=a", "-tags=b"}, []string{}, []string{"-tags=a", "-tags=b,streamgen"}}, // the last one counts
		{nil, []string{"GOFLAGS=-mod=mod -tags=x,y"}, []string{"-tags=x,y,streamgen"}},         // -tags would replace GOFLAGS' tags
		{[]string{"-tags=a"}, []string{"GOFLAGS=-tags=x"}, []string{"-tags=a,streamgen"}},
		{nil, []string{"GOFLAGS=-tags=x", "GOFLAGS=-mod=mod"}, []string{"-tags=streamgen"}}, // the last GOFLAGS counts
	} {
		if got := withBuildTag(tc.flags, tc.env); !slices.Equal(got, tc.want) {
			t.Errorf("withBuildTag(%q, %q) = %q, want %q", tc.flags, tc.env, got, tc.want)
		}
	}
}

// TestReadOutputs loads a package whose generated file has the build
// constraint, one whose file was written without it, and one whose file is
// not streamgen's: each file is read, and only the first is left out of the
// load, by the build tag.
func TestReadOutputs(t *testing.T) {
	root := gentest.RepoRoot(t)
	pkgs, err := packages.Load(&packages.Config{Mode: loadMode, Dir: root, BuildFlags: withBuildTag(nil, nil)},
		"./testdata/untagged_file", "./testdata/stale_tagged", "./testdata/foreign_file")
	if err != nil {
		t.Fatal(err)
	}
	olds, err := readOutputs(pkgs, DefaultOutput)
	if err != nil {
		t.Fatal(err)
	}
	file := func(c string) string { return filepath.Join(root, "testdata", c, DefaultOutput) }
	if len(olds) != 3 || !olds[file("untagged_file")].ours || !olds[file("stale_tagged")].ours || olds[file("foreign_file")].ours {
		t.Errorf("old outputs %v", olds)
	}
	for _, lp := range pkgs {
		if slices.Contains(lp.GoFiles, filepath.Join(lp.Dir, DefaultOutput)) != (filepath.Base(lp.Dir) != "stale_tagged") {
			t.Errorf("%s: files %v, ignored %v", lp.PkgPath, lp.GoFiles, lp.IgnoredFiles)
		}
	}
}
