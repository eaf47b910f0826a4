// Package examples_test checks that the code in README.md and in the
// guide, docs/*.md, works as written (docs/development.md lists what each
// test checks).
//
// The rule for the code blocks of the README and the guide:
//
//   - Every ```go block is a complete Go file, starting with its package
//     clause.
//   - A block whose first line is "// file: <path>" belongs to the quick
//     start. The quick start is followed as a reader would: a new module
//     example.com/shop, the install commands for a local checkout (run as
//     written, with this checkout's path), the files written without that
//     line, then the quick start's commands (go mod tidy, go generate, go
//     vet, go test) as written, and streamgen -check ./...; nothing else
//     touches go.mod or go.sum. The sample error message of the guide is
//     checked against what streamgen really prints for that module.
//   - Every other ```go block is type-checked on its own; one that is a
//     test file (its package's name ends in _test) is also run with go
//     test, and one that is a program (package main with a func main) is
//     built and run (readme_run_test.go).
//   - Every ```python block must compile (python3 -m py_compile).
//
// A block that does not compile fails the test.
package examples_test

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"golang.org/x/tools/go/packages"

	"github.com/streamgen/streamgen/internal/brokerurl"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// docFiles are the README and the pages of the guide, relative to this
// package's directory, the README first.
func docFiles(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 10 {
		t.Fatalf("found %d pages in docs/; the glob is broken", len(pages))
	}
	return append([]string{"../README.md"}, pages...)
}

// docName is how messages name a file of docFiles: README.md,
// docs/retries.md.
func docName(path string) string { return strings.TrimPrefix(filepath.ToSlash(path), "../") }

// fileMarker starts a block that belongs to the quick-start module.
const fileMarker = "// file: "

// codeBlock is one fenced block of the README or a page of the guide.
type codeBlock struct {
	file string // as docName gives it
	lang string
	line int // of the opening fence, 1-based
	text string
}

// at names the block's place, file:line.
func (b codeBlock) at() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// readmeBlocks returns the fenced code blocks of the README and the guide.
func readmeBlocks(t *testing.T) []codeBlock {
	t.Helper()
	var blocks []codeBlock
	for _, path := range docFiles(t) {
		blocks = append(blocks, fileBlocks(t, path)...)
	}
	return blocks
}

// fileBlocks returns the fenced code blocks of one Markdown file.
func fileBlocks(t *testing.T, path string) []codeBlock {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	name := docName(path)
	var blocks []codeBlock
	var cur *codeBlock
	var body []string
	for i, line := range strings.Split(string(data), "\n") {
		fence := strings.HasPrefix(line, "```")
		switch {
		case cur == nil && fence:
			cur = &codeBlock{file: name, lang: strings.TrimSpace(strings.TrimPrefix(line, "```")), line: i + 1}
			body = nil
		case cur != nil && fence:
			if strings.TrimSpace(line) != "```" {
				t.Fatalf("%s:%d: a fence opens inside the block opened at line %d", name, i+1, cur.line)
			}
			cur.text = strings.Join(body, "\n") + "\n"
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			body = append(body, line)
		}
	}
	if cur != nil {
		t.Fatalf("%s: the block is never closed", cur.at())
	}
	return blocks
}

func blocksOf(t *testing.T, lang string) []codeBlock {
	t.Helper()
	var out []codeBlock
	for _, b := range readmeBlocks(t) {
		if b.lang == lang {
			out = append(out, b)
		}
	}
	return out
}

// quickStart splits the go blocks into the quick-start files (path →
// source, marker removed), which only the README holds, and the others.
func quickStart(t *testing.T) (files map[string]string, others []codeBlock) {
	t.Helper()
	files = map[string]string{}
	for _, b := range blocksOf(t, "go") {
		if path, ok := strings.CutPrefix(strings.SplitN(b.text, "\n", 2)[0], fileMarker); ok {
			if b.file != "README.md" {
				t.Fatalf("%s: a quick-start file belongs in the README", b.at())
			}
			if _, dup := files[path]; dup {
				t.Fatalf("%s: %s is written twice", b.at(), path)
			}
			files[path] = strings.SplitN(b.text, "\n", 2)[1]
			continue
		}
		others = append(others, b)
	}
	return files, others
}

// repoRoot is the root of this checkout.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// goEnv is the environment of the commands run in the quick-start module:
// the reader's, without a workspace and without GOFLAGS such as -mod=mod,
// which would let the go command mend a go.sum the steps left short.
func goEnv() []string { return append(os.Environ(), "GOFLAGS=", "GOWORK=off") }

// goCommand runs the go command in dir, returning its combined output.
func goCommand(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = dir
	cmd.Env = goEnv()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// runShell runs the commands of an sh block in dir, as a reader
// pasting them into a shell would, failing the test at the first that
// fails. It returns their combined output.
func runShell(t *testing.T, dir string, b codeBlock) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "sh", "-e", "-x", "-c", b.text)
	cmd.Dir = dir
	cmd.Env = goEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the commands of %s failed (%v):\n%s", b.at(), err, out)
	}
	return string(out)
}

// shellBlock returns the one sh block of the README and the guide holding
// text.
func shellBlock(t *testing.T, text string) codeBlock {
	t.Helper()
	var found []codeBlock
	for _, b := range blocksOf(t, "sh") {
		if strings.Contains(b.text, text) {
			found = append(found, b)
		}
	}
	if len(found) != 1 {
		t.Fatalf("the README and the guide have %d sh blocks holding %q, want 1", len(found), text)
	}
	return found[0]
}

func mustGo(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := goCommand(t, dir, args...)
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// The quick start, as a reader follows it: a module with the README's
// files, streamgen added as a tool of a local checkout as the guide's
// install says, go generate, go vet, and the README's test.
func TestReadmeQuickStartGeneratesBuildsAndPasses(t *testing.T) {
	files, _ := quickStart(t)
	want := []string{"billing/billing.go", "billing/billing_test.go", "cmd/billing/main.go"}
	if got := slices.Sorted(func(yield func(string) bool) {
		for p := range files {
			if !yield(p) {
				return
			}
		}
	}); !slices.Equal(got, want) {
		t.Fatalf("the README's quick-start files are %v, want %v", got, want)
	}
	root := repoRoot(t)
	mod := t.TempDir()
	write := func(path, content string) {
		t.Helper()
		full := filepath.Join(mod, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustGo(t, mod, "mod", "init", "example.com/shop")

	// The install commands for a local checkout, with this checkout's path.
	install := shellBlock(t, "go mod edit -replace github.com/streamgen/streamgen=/path/to/streamgen")
	install.text = strings.ReplaceAll(install.text, "/path/to/streamgen", root)
	runShell(t, mod, install)
	for path, src := range files {
		write(path, src)
	}
	// The quick start's commands, in the README's order.
	commands := shellBlock(t, "go generate ./...")
	for _, want := range []string{"go mod tidy", "go generate ./...", "go vet ./...", "go test ./..."} {
		if !strings.Contains(commands.text, want) {
			t.Fatalf("%s: the quick start's commands do not run %s:\n%s", commands.at(), want, commands.text)
		}
	}
	out := runShell(t, mod, commands)
	if _, err := os.Stat(filepath.Join(mod, "billing", "streamgen_gen.go")); err != nil {
		t.Fatalf("go generate wrote no billing/streamgen_gen.go: %v", err)
	}
	if !strings.Contains(out, "ok  \texample.com/shop/billing") {
		t.Fatalf("the README's test did not pass:\n%s", out)
	}
	mustGo(t, mod, "build", "./...")
	mustGo(t, mod, "tool", "streamgen", "-check", "./...")

	// The error the guide shows, for retry_delay=1s added to the handler,
	// is what streamgen prints, and all it prints.
	var shown string
	for _, b := range blocksOf(t, "text") {
		if strings.HasPrefix(b.text, "billing.go:") {
			shown = strings.TrimSpace(b.text)
		}
	}
	if shown == "" {
		t.Fatal("the guide shows no error message of streamgen")
	}
	billing := files["billing/billing.go"]
	if !strings.Contains(billing, "out_retry=self") {
		t.Fatal("the quick start's handler has no out_retry=self to add to")
	}
	write("billing/billing.go", strings.Replace(billing, "out_retry=self", "out_retry=self retry_delay=1s", 1))
	out, err := goCommand(t, mod, "generate", "./...")
	if err == nil {
		t.Fatalf("go generate accepted retry_delay on a zeromq handler:\n%s", out)
	}
	if first := strings.SplitN(out, "\n", 2)[0]; first != shown {
		t.Fatalf("the guide shows\n\t%s\nbut streamgen printed\n%s", shown, out)
	}
	if _, err := os.Stat(filepath.Join(mod, "billing", "streamgen_gen.go")); err != nil {
		t.Fatalf("the generated file is gone after a failed run: %v", err)
	}
}

// Every other Go block, of the README and of every page of the guide,
// compiles on its own.
func TestReadmeGoBlocksTypeCheck(t *testing.T) {
	_, blocks := quickStart(t)
	if len(blocks) < 30 {
		t.Fatalf("found %d standalone Go blocks in the README and the guide; the extraction is broken", len(blocks))
	}
	fset := token.NewFileSet()
	files := make([]*ast.File, len(blocks))
	imports := map[string]bool{}
	for i, b := range blocks {
		if !strings.HasPrefix(b.text, "package ") {
			t.Errorf("%s: a Go block must be a complete file starting with its package clause, or a quick-start file marked %q", b.at(), fileMarker)
			continue
		}
		f, err := parser.ParseFile(fset, "block", b.text, parser.ParseComments)
		if err != nil {
			t.Errorf("the Go block at %s does not parse: %v", b.at(), err)
			continue
		}
		files[i] = f
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			imports[p] = true
		}
	}
	if t.Failed() {
		return
	}
	loaded, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedTypes, Dir: repoRoot(t), Tests: false},
		slices.Sorted(func(yield func(string) bool) {
			for p := range imports {
				if !yield(p) {
					return
				}
			}
		})...)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]*types.Package{}
	for _, p := range loaded {
		for _, e := range p.Errors {
			t.Errorf("the README or the guide imports %s: %v", p.PkgPath, e)
		}
		byPath[p.PkgPath] = p.Types
	}
	importer := importerFunc(func(path string) (*types.Package, error) {
		if p := byPath[path]; p != nil {
			return p, nil
		}
		return nil, os.ErrNotExist
	})
	for i, f := range files {
		var errs []string
		conf := types.Config{Importer: importer, Error: func(err error) {
			if te, ok := err.(types.Error); ok {
				// Point at the file's line: the block starts after its fence.
				p := te.Fset.Position(te.Pos)
				errs = append(errs, fmt.Sprintf("%s:%d:%d: %s", blocks[i].file, blocks[i].line+p.Line, p.Column, te.Msg))
				return
			}
			errs = append(errs, err.Error())
		}}
		_, _ = conf.Check(f.Name.Name, fset, []*ast.File{f}, nil)
		if len(errs) > 0 {
			t.Errorf("the Go block at %s does not compile:\n\t%s", blocks[i].at(), strings.Join(errs, "\n\t"))
		}
	}
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// python is the interpreter the zeromq interop test uses too.
const python = "/usr/bin/python3"

// Every Python block compiles.
func TestReadmePythonBlocksCompile(t *testing.T) {
	blocks := blocksOf(t, "python")
	if len(blocks) == 0 {
		t.Fatal("found no Python block in the README and the guide; the extraction is broken")
	}
	dir := t.TempDir()
	for i, b := range blocks {
		path := filepath.Join(dir, "block_"+strconv.Itoa(i)+".py")
		if err := os.WriteFile(path, []byte(b.text), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(t.Context(), python, "-m", "py_compile", path)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Errorf("the Python block at %s does not compile (%v):\n%s", b.at(), err, out.String())
		}
	}
}

// The guide's orders main (the one that names its connection "orders",
// as the command does) is configured as examples/orders/cmd/orders is: a
// -url flag whose default is brokerurl.EnvVar, else the local broker.
func TestReadmeOrdersMainReadsTheCommandsSettings(t *testing.T) {
	var mains []codeBlock
	for _, b := range blocksOf(t, "go") {
		if strings.Contains(b.text, `"github.com/streamgen/streamgen/examples/orders"`) && strings.Contains(b.text, `rabbitmq.WithConnectionName("orders")`) {
			mains = append(mains, b)
		}
	}
	if len(mains) != 1 {
		t.Fatalf("the README and the guide have %d orders main blocks, want 1", len(mains))
	}
	cmd, err := os.ReadFile(filepath.Join(repoRoot(t), "examples", "orders", "cmd", "orders", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct{ in, text string }{
		{string(cmd), `fs.StringVar(&cfg.url, "url", brokerurl.RabbitMQ()`},
		{mains[0].text, `flag.String("url", cmp.Or(os.Getenv("` + brokerurl.EnvVar + `"), "` + brokerurl.DefaultRabbitMQ + `")`},
	} {
		if !strings.Contains(want.in, want.text) {
			t.Errorf("want %s in:\n%s", want.text, want.in)
		}
	}
}
