package zeromq_test

import (
	"context"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// ZeroMQ has no exchanges: publishing through one is refused before
// anything is sent.
func TestPublishRefusesExchanges(t *testing.T) {
	b := zeromq.New()
	for _, m := range []runtime.Message{{Type: "Job", Exchange: "orders"}, {Type: "Job", RoutingKey: "other"}} {
		err := b.Publish(context.Background(), "jobs", m)
		if err == nil || !strings.Contains(err.Error(), "exchanges and routing keys are for rabbitmq") {
			t.Errorf("publish %+v: %v", m, err)
		}
	}
}
