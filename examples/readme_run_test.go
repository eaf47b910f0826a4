package examples_test

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Every standalone Go block that is a test file (its package's name ends
// in _test) passes: it is run with go test, as a file of its own, in this
// module, with the brokers and databases the tests use.
func TestReadmeTestBlocksPass(t *testing.T) {
	_, blocks := quickStart(t)
	ran := 0
	for _, b := range blocks {
		f, err := parser.ParseFile(token.NewFileSet(), "block", b.text, parser.PackageClauseOnly)
		if err != nil || !strings.HasSuffix(f.Name.Name, "_test") {
			continue // TestReadmeGoBlocksTypeCheck reports what does not parse
		}
		ran++
		file := filepath.Join(t.TempDir(), fmt.Sprintf("readme_line%d_test.go", b.line))
		if err := os.WriteFile(file, []byte(b.text), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("go", "test", "-count=1", file)
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("the test block at README.md:%d fails: %v\n%s", b.line, err, out)
		}
	}
	if ran == 0 {
		t.Fatal("the README has no test block; the extraction is broken")
	}
}
