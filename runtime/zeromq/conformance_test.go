package zeromq_test

import (
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/brokertest"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// TestConformance runs the transport conformance suite over real sockets on
// loopback and the wall clock: each queue the suite names is bound at a
// free port of its own.
func TestConformance(t *testing.T) {
	testkit.NoLeaks(t)
	brokertest.Run(t, brokertest.Transport{
		Kind:       runtime.ZeroMQ,
		RetryDelay: 50 * time.Millisecond,
		New: func(t testing.TB, queues []string) brokertest.Instance {
			opts := make([]zeromq.Option, 0, len(queues))
			for _, q := range queues {
				opts = append(opts, zeromq.Queue(q, zeromq.Bind(freeEndpoint(t))))
			}
			return brokertest.Instance{Broker: zeromq.New(opts...)}
		},
	})
}
