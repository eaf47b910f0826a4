package rabbitmq

import (
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/brokertest"
)

// The RabbitMQ adapter passes the transport conformance suite against the
// real broker.
func TestConformance(t *testing.T) {
	testkit.NoLeaks(t)
	brokertest.Run(t, brokertest.Transport{
		Kind:         runtime.RabbitMQ,
		RetryDelay:   100 * time.Millisecond,
		DelayedRetry: newAdmin(t).version().queues().DelayedRetry(),
		New: func(t testing.TB, queues []string) brokertest.Instance {
			adm := newAdmin(t)
			t.Cleanup(func() {
				for _, q := range queues {
					adm.delete(q)
					adm.delete(q + ".retry")
					adm.delete(q + runtime.SuspectQueueSuffix)
				}
			})
			return brokertest.Instance{Broker: newTestBroker()}
		},
		Redeliver: func(t testing.TB, _ brokertest.Instance, queue string, msgs []runtime.Message) {
			adm := newAdmin(t)
			adm.declare(queue, nil)
			for _, m := range msgs {
				if err := adm.Publish(t.Context(), queue, m); err != nil {
					t.Fatal(err)
				}
			}
			adm.handBack(queue, len(msgs))
		},
	})
}
