package adapter_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

// nopReplier is nopTransport that sends each reply at once, without
// allocating.
type nopReplier struct {
	nopTransport
	replies int
}

func (t *nopReplier) Reply(_ context.Context, _ *adapter.Delivery, _ string, _ runtime.Message, done func(error)) {
	t.replies++
	done(nil)
}

// replyConsumer returns a Consumer whose one handler answers requests,
// with a codec that encodes nothing, and a request for it.
func replyConsumer() (*adapter.Consumer, *nopReplier, *adapter.Delivery) {
	s := &runtime.Subscription{Name: "quotes", Handlers: []runtime.Handler{
		runtime.HandleReply[struct{}, struct{}]("Quote", "Price", runtime.Policy{}, nil,
			func(context.Context, struct{}) (struct{}, error) { return struct{}{}, nil }),
	}}
	tr := &nopReplier{}
	c := adapter.NewConsumer(s, runtime.Env{
		Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Codec:  nopCodec{},
	}, adapter.Rules{Kind: runtime.RabbitMQ}, tr)
	d := &adapter.Delivery{MessageID: "m-1", Type: "Quote", Headers: map[string]string{}}
	d.ReplyTo, d.CorrelationID = "amq.rabbitmq.reply-to.caller", "c-1"
	return c, tr, d
}

// BenchmarkReplyAllocation counts what the Consumer allocates to answer a
// request, beyond what its codec and handler do: the record of the reply
// being sent and its callback, and the context it is sent in. make bench
// checks the allocs/op.
func BenchmarkReplyAllocation(b *testing.B) {
	c, tr, d := replyConsumer()
	ctx := context.Background()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		c.Handle(ctx, d)
		n++
	}
	if tr.replies != n || c.Metrics().Acked.Load() != int64(n) {
		b.Fatalf("%d replies and %d acks for %d requests", tr.replies, c.Metrics().Acked.Load(), n)
	}
}
