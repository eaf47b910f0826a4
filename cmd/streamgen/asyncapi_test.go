package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/generator"
)

// TestRunAsyncAPIFlagMisuse: flags that do not go together are refused
// before anything is loaded, with status 2 and what to do.
func TestRunAsyncAPIFlagMisuse(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"title without -asyncapi", []string{"-asyncapi-title", "Shop", "."}, "streamgen: -asyncapi-title and -asyncapi-version are for the AsyncAPI document: add -asyncapi file"},
		{"version without -asyncapi", []string{"-asyncapi-version", "1.0.0", "."}, "add -asyncapi file"},
		{"empty file name", []string{"-asyncapi", "", "."}, "streamgen: -asyncapi needs a file name (.yaml, .yml or .json), or - for standard output"},
		{"with -o", []string{"-asyncapi", "api.yaml", "-o", "x_gen.go", "."}, "streamgen: -o names the generated Go file, which -asyncapi does not write: use one or the other"},
		{"check on stdout", []string{"-check", "-asyncapi", "-", "."}, "streamgen: -check compares the document with a file: give -asyncapi a file name, not -"},
		{"unknown extension", []string{"-asyncapi", "api.txt", "."}, "streamgen: -asyncapi api.txt: the document is YAML (.yaml or .yml) or JSON (.json): name the file with one of these extensions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := run(ctx, tc.args, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, output:\n%s\nwant exit 2 and %q", code, stderr.String(), tc.want)
			}
		})
	}
}

// TestRunAsyncAPI writes the document of a golden case, checks it, finds it
// stale and missing, writes JSON, and reports problems and an unwritable
// file like the rest of the command.
func TestRunAsyncAPI(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	doc := filepath.Join(dir, "asyncapi.yaml")
	golden := readFile(t, filepath.Join(repoRoot(t), "testdata", "zeromq_basic", "want", "asyncapi.yaml"))
	runOK := func(args ...string) {
		t.Helper()
		var stderr bytes.Buffer
		if code := run(ctx, args, io.Discard, &stderr); code != 0 || stderr.Len() > 0 {
			t.Fatalf("streamgen %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
		}
	}
	runFails := func(code int, want string, args ...string) {
		t.Helper()
		var stderr bytes.Buffer
		if got := run(ctx, args, io.Discard, &stderr); got != code || !strings.Contains(stderr.String(), want) {
			t.Errorf("streamgen %s: exit %d, output:\n%s\nwant exit %d and %q", strings.Join(args, " "), got, stderr.String(), code, want)
		}
	}

	runOK("-asyncapi", doc, "../../testdata/zeromq_basic")
	if got := readFile(t, doc); got != golden {
		t.Fatalf("the document is not the golden one:\n%s", got)
	}
	if _, err := os.Stat("../../testdata/zeromq_basic/streamgen_gen.go"); err == nil {
		t.Error("-asyncapi wrote the Go file")
	}
	runOK("-check", "-asyncapi", doc, "../../testdata/zeromq_basic")

	writeFile(t, doc, strings.Replace(golden, "max-attempts: 5", "max-attempts: 4", 1))
	runFails(1, "asyncapi.yaml is stale: run go generate", "-check", "-asyncapi", doc, "../../testdata/zeromq_basic")
	if !strings.Contains(readFile(t, doc), "max-attempts: 4") {
		t.Error("-check wrote the document")
	}
	runOK("-asyncapi", doc, "../../testdata/zeromq_basic")
	if readFile(t, doc) != golden {
		t.Error("a stale document was not rewritten")
	}
	if err := os.Remove(doc); err != nil {
		t.Fatal(err)
	}
	runFails(1, "asyncapi.yaml is missing: run go generate", "-check", "-asyncapi", doc, "../../testdata/zeromq_basic")

	// JSON, with a title and a version.
	jsonDoc := filepath.Join(dir, "asyncapi.json")
	runOK("-asyncapi", jsonDoc, "-asyncapi-title", "Billing", "-asyncapi-version", "2.0.1", "../../testdata/zeromq_basic")
	var parsed struct {
		AsyncAPI string `json:"asyncapi"`
		Info     struct{ Title, Version string }
	}
	if err := json.Unmarshal([]byte(readFile(t, jsonDoc)), &parsed); err != nil {
		t.Fatal(err)
	}
	if parsed.AsyncAPI != "3.0.0" || parsed.Info.Title != "Billing" || parsed.Info.Version != "2.0.1" {
		t.Errorf("the JSON document starts %+v", parsed)
	}

	// Problems in the package: printed as always, no document.
	bad := filepath.Join(dir, "bad.yaml")
	runFails(1, "testdata/unknown_key/keys.go:8:28: unknown key max_attemps; did you mean max_attempts?", "-asyncapi", bad, "../../testdata/unknown_key")
	if _, err := os.Stat(bad); err == nil {
		t.Error("a document was written for a package with problems")
	}

	// A directory that does not exist.
	runFails(1, "streamgen: cannot write "+filepath.Join(dir, "no", "such", "dir", "api.yaml")+": no such file or directory",
		"-asyncapi", filepath.Join(dir, "no", "such", "dir", "api.yaml"), "../../testdata/zeromq_basic")
	// A directory where the document goes: the rename over it fails.
	taken := filepath.Join(dir, "taken.yaml")
	if err := os.MkdirAll(filepath.Join(taken, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	runFails(1, "streamgen: cannot write "+taken+": file exists",
		"-asyncapi", taken, "../../testdata/zeromq_basic")
}

// TestAsyncAPIToStandardOutput: "-" writes the YAML document to the given
// output and no file.
func TestAsyncAPIToStandardOutput(t *testing.T) {
	ctx := context.Background()
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := generator.Generate(ctx, generator.Config{Dir: cwd}, "../../testdata/zeromq_basic")
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	f := &asyncAPIFlags{file: "-"}
	if code := f.write(ctx, pkgs, false, cwd, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	if want := readFile(t, filepath.Join(repoRoot(t), "testdata", "zeromq_basic", "want", "asyncapi.yaml")); stdout.String() != want {
		t.Errorf("standard output:\n%s\nwant the golden document", stdout.String())
	}
}

// TestExampleDocumentsAreCurrent: the AsyncAPI documents committed next to
// the examples are what streamgen writes for them now.
func TestExampleDocumentsAreCurrent(t *testing.T) {
	ctx := context.Background()
	for _, example := range []string{"billing", "orders", "pricing"} {
		var stderr bytes.Buffer
		dir := filepath.Join("..", "..", "examples", example)
		if code := run(ctx, []string{"-check", "-asyncapi", filepath.Join(dir, "asyncapi.yaml"), dir}, io.Discard, &stderr); code != 0 {
			t.Errorf("examples/%s/asyncapi.yaml: exit %d\n%s(run go generate ./examples/...)", example, code, stderr.String())
		}
	}
}

// TestDocsAsyncAPIExcerpt: each YAML block docs/asyncapi.md shows is a
// piece of the example's document the text names last before it
// (examples/<name>/asyncapi.yaml), as it is: the billing example's, and
// the pricing example's reply.
func TestDocsAsyncAPIExcerpt(t *testing.T) {
	root := repoRoot(t)
	page := readFile(t, filepath.Join(root, "docs", "asyncapi.md"))
	source := regexp.MustCompile(`examples/([a-z]+)/asyncapi\.yaml`)
	var seen []string
	example, rest := "", page
	for {
		before, block, ok := strings.Cut(rest, "\n```yaml\n")
		if !ok {
			break
		}
		block, rest, _ = strings.Cut(block, "```\n")
		if names := source.FindAllStringSubmatch(before, -1); len(names) > 0 {
			example = names[len(names)-1][1]
		}
		if example == "" {
			t.Fatalf("docs/asyncapi.md names no examples/<name>/asyncapi.yaml before the block:\n%s", block)
		}
		seen = append(seen, example)
		if len(block) < 100 || !strings.Contains(readFile(t, filepath.Join(root, "examples", example, "asyncapi.yaml")), block) {
			t.Errorf("the excerpt of docs/asyncapi.md is not in examples/%s/asyncapi.yaml:\n%s", example, block)
		}
	}
	if !slices.Contains(seen, "billing") || !slices.Contains(seen, "pricing") {
		t.Errorf("docs/asyncapi.md shows excerpts of %v, want billing's and pricing's", seen)
	}
}
