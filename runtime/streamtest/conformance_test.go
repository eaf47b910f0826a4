package streamtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/brokertest"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// transport is the emulated broker of the given kind as a brokertest
// transport: a fresh Broker and Clock per case, time passing by Advance.
func transport(kind runtime.BrokerKind, opts ...streamtest.BrokerOption) brokertest.Transport {
	return brokertest.Transport{
		Kind:       kind,
		RetryDelay: 30 * time.Second, // a fake clock makes any delay instant
		Redeliver: func(t testing.TB, inst brokertest.Instance, queue string, msgs []runtime.Message) {
			if err := inst.Broker.(*streamtest.Broker).Redeliver(queue, 1, msgs...); err != nil {
				t.Fatal(err)
			}
		},
		New: func(t testing.TB, _ []string) brokertest.Instance {
			clock := streamtest.NewClock(time.Time{})
			b := streamtest.NewBroker(kind, clock, opts...)
			return brokertest.Instance{
				Broker: b,
				Clock:  clock,
				Pass: func(t testing.TB, d time.Duration) {
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					if err := b.Advance(ctx, d); err != nil {
						t.Fatal(err)
					}
				},
			}
		},
	}
}

func TestConformanceZeroMQ(t *testing.T) { brokertest.Run(t, transport(runtime.ZeroMQ)) }

func TestConformanceRabbitMQ(t *testing.T) { brokertest.Run(t, transport(runtime.RabbitMQ)) }

// The emulated RabbitMQ 4.3, whose quorum queues wait out retries
// themselves.
func TestConformanceRabbitMQ43(t *testing.T) {
	tr := transport(runtime.RabbitMQ, streamtest.RabbitMQVersion(4, 3))
	tr.DelayedRetry = true
	brokertest.Run(t, tr)
}

// The emulated ZeroMQ broker follows a renamed retry count header, as
// zeromq.WithRetryCountHeader makes the real one do.
func TestConformanceZeroMQRenamedRetryCountHeader(t *testing.T) {
	tr := transport(runtime.ZeroMQ, streamtest.RetryCountHeader("X-Attempts-Before"))
	tr.RetryCountHeader = "X-Attempts-Before"
	brokertest.Run(t, tr)
}
