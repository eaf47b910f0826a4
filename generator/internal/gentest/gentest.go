// Package gentest holds what the tests of the generator and of the
// AsyncAPI document share: the module root, modules of their own outside
// the repository, the go command run on them, and a readable diff of two
// texts.
package gentest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// RepoRoot returns the root of the streamgen module: the nearest directory
// above the current one that holds a go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the current directory")
		}
		dir = parent
	}
}

// TempModule creates a module outside the repository that requires
// streamgen through a replace directive to this checkout, with the
// checkout's go.sum so that no checksum has to be looked up.
func TempModule(t testing.TB, module string) string {
	t.Helper()
	root := RepoRoot(t)
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

// GoEnv is the environment of go commands run on a temporary module: the
// module may add requirements, and no workspace applies.
func GoEnv() []string {
	return append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
}

// RunGo runs the go command in dir and fails the test with its output when
// it fails.
func RunGo(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = GoEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// LineDiff shows the first lines where want and got differ.
func LineDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(wl), len(gl)) && shown < 12; i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			fmt.Fprintf(&b, "line %d:\n  want: %s\n  got:  %s\n", i+1, w, g)
			shown++
		}
	}
	return b.String()
}
