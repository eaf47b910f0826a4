package otelstream_test

import (
	"testing"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
)

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
		if deps := testkit.Deps(t, pkg, "go.opentelemetry.io/"); len(deps) > 0 {
			t.Errorf("%s links OpenTelemetry: %v", pkg, deps)
		}
	}
	if deps := testkit.Deps(t, "./runtime/otelstream", "go.opentelemetry.io/"); len(deps) == 0 {
		t.Error("otelstream itself links no OpenTelemetry package: the check cannot see a dependency")
	}
}
