package rabbitmq

import (
	"context"
	"log/slog"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/streamgen/streamgen/runtime/clock"
)

// BenchmarkConfirmedPublish measures what the confirm channel adds to a
// publish, in process: a stand-in channel confirms each message at once.
// The allocations are the figure to watch: every one of them is the
// stand-in's own (its reply, and the deferred confirm with its channel
// that amqp091-go makes for every publish in confirm mode too); the
// confirm channel itself allocates nothing.
func BenchmarkConfirmedPublish(b *testing.B) {
	f := newFakeChannel(func(seq uint64, _ string, _ amqp.Publishing) (*amqp.Return, *amqp.Confirmation) { return nil, ack(seq) })
	c := newConfirmChannel(f, clock.System{}, 10*time.Second, slog.New(slog.DiscardHandler))
	defer c.close()
	msg := amqp.Publishing{MessageId: "m", Body: []byte("{}")}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := c.publish(ctx, "q", msg); err != nil {
			b.Fatal(err)
		}
	}
}
