package testkit

import (
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

// moduleRoot is the module's root folder, two above this file's.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}
