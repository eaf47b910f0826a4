package generator

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/streamgen/streamgen/generator/internal/gentest"
)

// copyCase copies the Go files of a golden case and its wanted output into
// dir/sub.
func copyCase(t testing.TB, caseName, dir, sub string) {
	t.Helper()
	src := filepath.Join(gentest.RepoRoot(t), "testdata", caseName)
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
