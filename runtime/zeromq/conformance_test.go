package zeromq_test

import (
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/brokertest"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// TestConformance runs the transport conformance suite over real sockets on
// loopback and the wall clock: each queue the suite names is bound at a
// free port of its own.
func TestConformance(t *testing.T) {
	testkit.NoLeaks(t)
	brokertest.Run(t, transport())
}

// TestConformanceRenamedRetryCountHeader runs the suite again with the
// retry count in a header of another name.
func TestConformanceRenamedRetryCountHeader(t *testing.T) {
	testkit.NoLeaks(t)
	tr := transport(zeromq.WithRetryCountHeader("X-Attempts-Before"))
	tr.RetryCountHeader = "X-Attempts-Before"
	brokertest.Run(t, tr)
}

func transport(extra ...zeromq.Option) brokertest.Transport {
	return brokertest.Transport{
		Kind:       runtime.ZeroMQ,
		RetryDelay: 50 * time.Millisecond,
		New: func(t testing.TB, queues []string) brokertest.Instance {
			opts := make([]zeromq.Option, 0, len(queues)+len(extra))
			for _, q := range queues {
				opts = append(opts, zeromq.Queue(q, zeromq.Bind(freeEndpoint(t))))
			}
			return brokertest.Instance{Broker: zeromq.New(append(opts, extra...)...)}
		},
	}
}
