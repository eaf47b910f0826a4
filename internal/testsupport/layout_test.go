package testsupport_test

import (
	"os/exec"
	"strings"
	"testing"
)

// No production package depends on test support: the command, the
// generator and the runtime build without anything under
// internal/testsupport (their tests may use it).
func TestProductionCodeDoesNotUseTestSupport(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../../cmd/...", "../../generator/...", "../../runtime/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 20 {
		t.Fatalf("go list listed %d packages: %s", len(deps), out)
	}
	for _, p := range deps {
		if strings.Contains(p, "/internal/testsupport") {
			t.Errorf("a production package depends on %s", p)
		}
	}
}
