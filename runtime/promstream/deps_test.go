package promstream_test

import (
	"testing"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
)

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
		if deps := testkit.Deps(t, pkg, "github.com/prometheus/"); len(deps) > 0 {
			t.Errorf("%s links Prometheus: %v", pkg, deps)
		}
	}
	if deps := testkit.Deps(t, "./runtime/promstream", "github.com/prometheus/"); len(deps) == 0 {
		t.Error("promstream itself links no Prometheus package: the check cannot see a dependency")
	}
}
