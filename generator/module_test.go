package generator

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tempModule creates a module outside the repository that requires
// streamgen through a replace directive to this checkout, with the
// checkout's go.sum so that no checksum has to be looked up.
func tempModule(t testing.TB, module string) string {
	t.Helper()
	root := repoRoot(t)
	dir := t.TempDir()
	gomod := fmt.Sprintf("module %s\n\ngo 1.26\n\nrequire github.com/streamgen/streamgen v0.0.0\n\nreplace github.com/streamgen/streamgen => %s\n", module, root)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// goEnv is the environment of go commands run on a temporary module: the
// module may add requirements, and no workspace applies.
func goEnv() []string {
	return append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
}

// runGo runs the go command in dir and fails the test with its output when
// it fails.
func runGo(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = goEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// copyCase copies the Go files of a golden case and its wanted output into
// dir/sub.
func copyCase(t testing.TB, caseName, dir, sub string) {
	t.Helper()
	src := filepath.Join(repoRoot(t), "testdata", caseName)
	dst := filepath.Join(dir, sub)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(src, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(src, "want", DefaultOutput))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
