package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Deps returns the packages pkg (a pattern relative to the module's root,
// such as ./runtime/rabbitmq) links whose import paths start with prefix,
// as go list -deps lists them: a test that a package links no heavy
// dependency it does not need.
func Deps(t testing.TB, pkg, prefix string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go") // go test puts the one that runs the tests first on the PATH
	if err != nil {
		t.Fatalf("no go command to list dependencies with: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-deps", pkg)
	cmd.Dir = moduleRoot()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	var found []string
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, prefix) {
			found = append(found, strings.TrimSpace(line))
		}
	}
	return found
}

// moduleRoot is the module's root folder: the nearest one above this
// file's that holds go.mod.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Dir(file)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return filepath.Dir(file) // not in a module: go list says so
		}
		dir = parent
	}
}
