package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// binary is the streamgen command built once for the tests that run it.
var binary string

func TestMain(m *testing.M) { goleak.VerifyTestMain(withBinary{m}) }

// withBinary builds the streamgen command before the tests run and removes
// it after.
type withBinary struct{ m *testing.M }

func (w withBinary) Run() int {
	dir, err := os.MkdirTemp("", "streamgen-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "streamgen")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build streamgen: %v\n%s", err, out)
		return 1
	}
	return w.m.Run()
}

// repoRoot is the module root, two levels up.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// goEnv is the environment of commands run on the user's module.
func goEnv() []string {
	return append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
}

// result is what a command printed and how it exited.
type result struct {
	out  string
	code int
}

// command runs name args in dir and returns its combined output and exit
// status; it fails the test only when the command cannot be run at all.
func command(t *testing.T, dir, name string, args ...string) result {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = goEnv()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return result{string(out), 0}
	case errors.As(err, &exit):
		return result{string(out), exit.ExitCode()}
	}
	t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	return result{}
}

// mustRun runs a command that must succeed.
func mustRun(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	r := command(t, dir, name, args...)
	if r.code != 0 {
		t.Fatalf("%s %s in %s: exit %d\n%s", name, strings.Join(args, " "), dir, r.code, r.out)
	}
	return r.out
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// replaceIn replaces old by new in the file at path, once, or fails.
func replaceIn(t *testing.T, path, old, new string) {
	t.Helper()
	s := readFile(t, path)
	if !strings.Contains(s, old) {
		t.Fatalf("%s does not contain %q", path, old)
	}
	writeFile(t, path, strings.Replace(s, old, new, 1))
}

const userBilling = `// Package billing runs billing jobs.
package billing

//go:generate go tool streamgen

import (
	"context"
	"errors"
	"time"

	"github.com/streamgen/streamgen/runtime"
)

// Job is one billing job.
type Job struct {
	ID     uint64 ` + "`json:\"id\"`" + `
	Amount int64  ` + "`json:\"amount\"`" + `
}

//stream:subscriber "jobs" broker=zeromq max_attempts=5 out_retry=self
func Work(ctx context.Context, job Job) error {
	if job.Amount < 0 {
		return runtime.RetryAfter(30*time.Second, errors.New("negative amount"))
	}
	return nil
}
`

const userMain = `// Command shop wires the billing package.
package main

import (
	"context"
	"log"

	"example.com/shop/billing"
	"github.com/streamgen/streamgen/runtime"
)

func main() {
	app := runtime.NewApp("shop")
	var zq runtime.Broker
	billing.Mount(app, zq)
	if p, ok := zq.(runtime.Publisher); ok {
		if err := billing.PublishJob(context.Background(), p, billing.Job{ID: 1}); err != nil {
			log.Fatal(err)
		}
	}
}
`

// TestUserModule runs streamgen the way a user does, on a module outside
// the repository: as a go tool from go generate, then the built binary with
// -check, through a stale annotation, a stale signature, a broken
// annotation, and go run.
func TestUserModule(t *testing.T) {
	root := repoRoot(t)
	mod := t.TempDir()
	writeFile(t, filepath.Join(mod, "go.mod"), "module example.com/shop\n\ngo 1.26\n")
	writeFile(t, filepath.Join(mod, "go.sum"), readFile(t, filepath.Join(root, "go.sum")))
	mustRun(t, mod, "go", "mod", "edit",
		"-replace", "github.com/streamgen/streamgen="+root,
		"-require", "github.com/streamgen/streamgen@v0.0.0",
		"-tool", "github.com/streamgen/streamgen/cmd/streamgen")
	billingDir := filepath.Join(mod, "billing")
	billingGo := filepath.Join(billingDir, "billing.go")
	generated := filepath.Join(billingDir, "streamgen_gen.go")
	writeFile(t, billingGo, userBilling)
	writeFile(t, filepath.Join(mod, "cmd", "shop", "main.go"), userMain)
	// Record the requirements of the tool and the runtime in go.mod (go tool
	// does not add them itself), from the module cache.
	mustRun(t, mod, "go", "mod", "tidy")

	// go generate runs the tool, and the module builds and vets clean.
	mustRun(t, mod, "go", "generate", "./...")
	first := readFile(t, generated)
	if !strings.HasPrefix(first, "// Code generated by streamgen. DO NOT EDIT.\n") {
		t.Fatalf("generated file starts with %q", first[:min(len(first), 60)])
	}
	mustRun(t, mod, "go", "build", "./...")
	mustRun(t, mod, "go", "vet", "./...")
	// -version says the version the module requires.
	if out := mustRun(t, mod, "go", "tool", "streamgen", "-version"); out != "streamgen v0.0.0\n" {
		t.Errorf("go tool streamgen -version printed %q", out)
	}

	// -check: current.
	if r := command(t, billingDir, binary, "-check"); r.code != 0 || r.out != "" {
		t.Fatalf("-check on a current file: exit %d, output %q; want 0 and silence", r.code, r.out)
	}

	// -check after an annotation edit: stale, and nothing written.
	replaceIn(t, billingGo, "max_attempts=5", "max_attempts=6")
	r := command(t, billingDir, binary, "-check")
	if r.code != 1 || r.out != "streamgen_gen.go is stale: run go generate\n" {
		t.Fatalf("-check after an edit: exit %d, output %q", r.code, r.out)
	}
	if readFile(t, generated) != first {
		t.Fatal("-check wrote the file")
	}
	mustRun(t, mod, "go", "generate", "./...")
	if second := readFile(t, generated); second == first || !strings.Contains(second, "MaxAttempts: 6") {
		t.Fatal("go generate did not pick up the edit")
	}
	if r := command(t, billingDir, binary, "-check"); r.code != 0 {
		t.Fatalf("-check after regenerating: exit %d\n%s", r.code, r.out)
	}

	// A changed handler signature fails to compile, naming the guard.
	replaceIn(t, billingGo, "func Work(ctx context.Context, job Job) error", "func Work(ctx context.Context, job *Job) error")
	r = command(t, mod, "go", "build", "./...")
	if r.code == 0 || !strings.Contains(r.out, "streamgen_Work_changed_run_go_generate") {
		t.Fatalf("build with a stale signature: exit %d, want a failure naming the guard:\n%s", r.code, r.out)
	}
	// The stale file does not block regenerating it; the typed publisher
	// now takes *Job too.
	mustRun(t, mod, "go", "generate", "./...")
	replaceIn(t, filepath.Join(mod, "cmd", "shop", "main.go"), "billing.Job{ID: 1}", "&billing.Job{ID: 1}")
	mustRun(t, mod, "go", "build", "./...")
	if !strings.Contains(readFile(t, generated), "func(context.Context, *Job) error") {
		t.Fatal("the regenerated guard does not take *Job")
	}

	// A broken annotation: every problem printed relative to the current
	// directory, exit 1, the old file kept.
	before := readFile(t, generated)
	replaceIn(t, billingGo, "max_attempts=6 out_retry=self", "max_attemps=6 out_retry=self retry_delay=1s")
	r = command(t, mod, binary, "./billing")
	wantOut := `billing/billing.go:20:42: unknown key max_attemps; did you mean max_attempts?
billing/billing.go:20:71: subscription "jobs": retry_delay is for rabbitmq: on zeromq return runtime.RetryAfter(d, err) from the handler; remove retry_delay
`
	if r.code != 1 || r.out != wantOut {
		t.Errorf("broken annotation: exit %d, output:\n%s\nwant exit 1 and:\n%s", r.code, r.out, wantOut)
	}
	if readFile(t, generated) != before {
		t.Error("the old file was not kept")
	}
	replaceIn(t, billingGo, "max_attemps=6 out_retry=self retry_delay=1s", "max_attempts=6 out_retry=self")

	// -check with the file missing.
	if err := os.Remove(generated); err != nil {
		t.Fatal(err)
	}
	r = command(t, billingDir, binary, "-check")
	if r.code != 1 || r.out != "streamgen_gen.go is missing: run go generate\n" {
		t.Fatalf("-check without the file: exit %d, output %q", r.code, r.out)
	}

	// go run works too, with a package pattern and -o.
	mustRun(t, mod, "go", "run", "github.com/streamgen/streamgen/cmd/streamgen", "-o", "wiring_gen.go", "./billing")
	if !strings.Contains(readFile(t, filepath.Join(billingDir, "wiring_gen.go")), "func Mount(") {
		t.Error("go run with -o did not write wiring_gen.go")
	}
}

// TestRun drives the command in process on the repository's golden cases.
func TestRun(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // a line the output must contain
	}{
		{"bad flag", []string{"-nope"}, 2, "usage: streamgen [-check] [-o file] [-json-decoders=false] [packages]"},
		{"check missing", []string{"-check", "../../testdata/zeromq_basic"}, 1, "testdata/zeromq_basic/streamgen_gen.go is missing: run go generate"},
		{"check a file without the build constraint", []string{"-check", "../../testdata/untagged_file"}, 1, `testdata/untagged_file/streamgen_gen.go:1:1: streamgen_gen.go has no "//go:build !streamgen" line: an older streamgen wrote it`},
		{"check stale with the build constraint", []string{"-check", "../../testdata/stale_tagged"}, 1, "testdata/stale_tagged/streamgen_gen.go is stale: run go generate"},
		{"diagnostics", []string{"-check", "../../testdata/unknown_key"}, 1, "testdata/unknown_key/keys.go:8:28: unknown key max_attemps; did you mean max_attempts?"},
		{"no annotations", []string{"../../generator/testdata/noannotations"}, 1, "streamgen: package github.com/streamgen/streamgen/generator/testdata/noannotations has no //stream:subscriber or //stream:publisher directives"},
		{"bad output", []string{"-o", "x/y.go", "."}, 1, "streamgen: output \"x/y.go\" must be a file name"},
		{"no package", []string{"./does-not-exist"}, 1, "streamgen: ./does-not-exist: stat "},
		{"wildcard without annotations", []string{"../../internal/brokerurl/..."}, 1, "streamgen: no package matched by ../../internal/brokerurl/... has //stream:subscriber annotations"},
		{"wildcard matching nothing", []string{"../../generator/testdata/..."}, 1, "streamgen: no package matches ../../generator/testdata/..."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(ctx, tc.args, io.Discard, &stderr)
			if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, output:\n%s\nwant exit %d and a line containing %q", code, stderr.String(), tc.code, tc.want)
			}
			checkOnePrefix(t, stderr.String())
		})
	}
}

// checkOnePrefix fails the test when a line of the command's output
// carries a package prefix after the command's own.
func checkOnePrefix(t *testing.T, out string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		for _, stutter := range []string{"streamgen: generator:", "streamgen: asyncapi:", "streamgen: streamgen:"} {
			if strings.HasPrefix(line, stutter) {
				t.Errorf("the prefix stutters: %s", line)
			}
		}
	}
}

// TestHelpAndVersion: -h prints the usage on standard output and exits 0;
// -version prints the module's version and exits 0, without loading
// anything; a wrong flag prints what is wrong and the usage on standard
// error and exits 2.
func TestHelpAndVersion(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string // a line each must contain ("" for empty)
	}{
		{[]string{"-h"}, 0, "usage: streamgen [-check] [-o file] [-json-decoders=false] [packages]", ""},
		{[]string{"-help"}, 0, "       streamgen -version", ""},
		{[]string{"-version"}, 0, "streamgen ", ""},
		{[]string{"-version", "./does-not-exist"}, 0, "streamgen ", ""},
		{[]string{"-nope"}, 2, "", "flag provided but not defined: -nope"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(ctx, tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) || (tc.stdout == "") != (stdout.Len() == 0) ||
			!strings.Contains(stderr.String(), tc.stderr) || (tc.stderr == "") != (stderr.Len() == 0) {
			t.Errorf("%v: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit %d, stdout with %q, stderr with %q", tc.args, code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderr)
		}
	}
	// The built binary says (devel) when built inside its own module; a
	// user's go tool says the required version (TestUserModule).
	if r := command(t, t.TempDir(), binary, "-version"); r.code != 0 || !strings.HasPrefix(r.out, "streamgen (devel)") {
		t.Errorf("-version: exit %d, %q", r.code, r.out)
	}
}

// streamgen -h lists every subcommand, from the table main runs them by;
// and each runs from the built binary, its own -h exiting 0.
func TestHelpListsTheSubcommands(t *testing.T) {
	r := command(t, t.TempDir(), binary, "-h")
	if r.code != 0 {
		t.Fatalf("-h: exit %d\n%s", r.code, r.out)
	}
	cmds := subcommands()
	if len(cmds) == 0 {
		t.Fatal("no subcommands")
	}
	for _, sc := range cmds {
		if !strings.Contains(r.out, "       streamgen "+sc.usage+"\n") || !regexp.MustCompile(`(?m)^  `+sc.name+` +`+regexp.QuoteMeta(sc.summary)+`$`).MatchString(r.out) {
			t.Errorf("-h does not list %s (%s):\n%s", sc.name, sc.summary, r.out)
		}
		if h := command(t, t.TempDir(), binary, sc.name, "-h"); h.code != 0 || !strings.Contains(h.out, "usage: streamgen "+sc.name) {
			t.Errorf("streamgen %s -h: exit %d\n%s", sc.name, h.code, h.out)
		}
	}
	if !strings.Contains(r.out, "streamgen dlq COMMAND") {
		t.Errorf("-h does not mention streamgen dlq:\n%s", r.out)
	}
}

func TestVersionLine(t *testing.T) {
	for _, tc := range []struct {
		info *debug.BuildInfo
		want string
	}{
		{&debug.BuildInfo{Main: debug.Module{Path: "github.com/streamgen/streamgen", Version: "v1.4.2"}}, "streamgen v1.4.2"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "streamgen (devel)"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}},
			"streamgen (devel) (commit 0123456789ab, modified)"},
		{&debug.BuildInfo{}, "streamgen (devel)"},
		{nil, "streamgen (unknown version: built without module information)"},
	} {
		if got := versionLine(tc.info); got != tc.want {
			t.Errorf("versionLine(%+v) = %q, want %q", tc.info, got, tc.want)
		}
	}
}

// TestOutsideAModule: streamgen in a directory that is in no module, with
// the default pattern or a directory that does not exist, says so and
// exits 1 (it used to print nothing and exit 0).
func TestOutsideAModule(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "x.go"), "package x\n")
	for _, args := range [][]string{nil, {"./does-not-exist"}, {"."}} {
		r := command(t, dir, binary, args...)
		want := "streamgen: " + dir + " is not in a Go module (no go.mod in it or above): run streamgen in a module, or create one with go mod init\n"
		if r.code != 1 || r.out != want {
			t.Errorf("streamgen %v outside a module: exit %d, output %q; want exit 1 and %q", args, r.code, r.out, want)
		}
	}
	// Inside a module, a pattern that matches nothing is an error too.
	mod := t.TempDir()
	writeFile(t, filepath.Join(mod, "go.mod"), "module example.com/empty\n\ngo 1.26\n")
	if r := command(t, mod, binary, "./..."); r.code != 1 || r.out != "streamgen: no package matches ./...\n" {
		t.Errorf("./... in an empty module: exit %d, output %q", r.code, r.out)
	}
}
