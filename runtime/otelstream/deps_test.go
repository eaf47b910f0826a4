package otelstream_test

import (
	"os/exec"
	"strings"
	"testing"
)

// goTool returns the go command; go test puts the one that runs the tests
// first on the PATH.
func goTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command to list dependencies with: %v", err)
	}
	return p
}

// otelDeps returns the OpenTelemetry packages pkg links.
func otelDeps(t *testing.T, pkg string) []string {
	t.Helper()
	cmd := exec.Command(goTool(t), "list", "-deps", pkg)
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	var found []string
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "go.opentelemetry.io/") {
			found = append(found, strings.TrimSpace(line))
		}
	}
	return found
}

// An App that does not import otelstream does not link OpenTelemetry:
// neither the example mains nor the runtime packages depend on it.
func TestOnlyThisPackageLinksOpenTelemetry(t *testing.T) {
	for _, pkg := range []string{
		"./examples/orders/cmd/orders",
		"./examples/billing/cmd/billing",
		"./runtime",
		"./runtime/adapter",
		"./runtime/rabbitmq",
		"./runtime/zeromq",
		"./runtime/streamtest",
	} {
		if deps := otelDeps(t, pkg); len(deps) > 0 {
			t.Errorf("%s links OpenTelemetry: %v", pkg, deps)
		}
	}
	if deps := otelDeps(t, "./runtime/otelstream"); len(deps) == 0 {
		t.Error("otelstream itself links no OpenTelemetry package: the check cannot see a dependency")
	}
}
