package promstream_test

import (
	"os/exec"
	"strings"
	"testing"
)

// promDeps returns the Prometheus packages pkg links.
func promDeps(t *testing.T, pkg string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go") // go test puts the one that runs the tests first on the PATH
	if err != nil {
		t.Fatalf("no go command to list dependencies with: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-deps", pkg)
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	var found []string
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "github.com/prometheus/") {
			found = append(found, strings.TrimSpace(line))
		}
	}
	return found
}

// An App that does not import promstream does not link the Prometheus
// client: the runtime packages do not depend on it.
func TestOnlyThisPackageLinksPrometheus(t *testing.T) {
	for _, pkg := range []string{
		"./runtime",
		"./runtime/adapter",
		"./runtime/rabbitmq",
		"./runtime/zeromq",
		"./runtime/streamtest",
		"./runtime/otelstream",
	} {
		if deps := promDeps(t, pkg); len(deps) > 0 {
			t.Errorf("%s links Prometheus: %v", pkg, deps)
		}
	}
	if deps := promDeps(t, "./runtime/promstream"); len(deps) == 0 {
		t.Error("promstream itself links no Prometheus package: the check cannot see a dependency")
	}
}
