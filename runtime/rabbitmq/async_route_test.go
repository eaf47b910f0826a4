package rabbitmq

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
)

// PublishAsync through an exchange is pipelined too: it returns once the
// message is sent, before its confirm, so that many await their confirm
// at once (a relay of runtime/outbox publishing events to an exchange is
// not one round trip a message).
func TestPublishAsyncThroughAnExchangeDoesNotWaitForTheConfirm(t *testing.T) {
	testkit.NoLeaks(t)
	b := newTestBroker(WithConfirmTimeout(time.Minute), WithPublishWindow(8))
	var published atomic.Int64
	b.pub.open = func(context.Context) (publishChannel, error) { // confirms nothing
		return countingChannel{newFakeChannel(func(uint64, string, amqp.Publishing) (*amqp.Return, *amqp.Confirmation) { return nil, nil }), &published}, nil
	}
	var confs []*runtime.Confirmation
	for i := range 3 {
		confs = append(confs, runtime.PublishAsync(t.Context(), b, runtime.Exchange("orders", "order.placed"), "Job", job{ID: i}))
	}
	if n := published.Load(); n != 3 {
		t.Fatalf("%d messages sent, want 3", n)
	}
	for i, c := range confs {
		select {
		case <-c.Done():
			t.Errorf("message %d is done (%v) before its confirm", i, c.Err())
		default:
		}
	}
	_ = b.Close() // fails the messages still awaited
	for i, c := range confs {
		if err := c.Wait(t.Context()); !errors.Is(err, ErrChannelClosed) || !strings.Contains(err.Error(), `to exchange "orders" with routing key "order.placed"`) {
			t.Errorf("message %d: %v, want the channel's close, naming the exchange", i, err)
		}
	}
}

// On a broker, PublishAsync through an exchange lands where Publish would,
// and reports an unroutable message with Publish's words.
func TestPublishAsyncThroughAnExchangeOnTheBroker(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	x := adm.exchange("async")
	q := adm.queue("async-route")
	adm.declare(q, nil)
	adm.declareExchange(x, "direct", false)
	if err := adm.channel(func(ch *amqp.Channel) error { return ch.QueueBind(q, "order.placed", x, false, nil) }); err != nil {
		t.Fatal(err)
	}
	b := newTestBroker()
	t.Cleanup(func() { _ = b.Close() })
	ctx := t.Context()
	var confs []*runtime.Confirmation
	for i := range 50 {
		confs = append(confs, runtime.PublishAsync(ctx, b, runtime.Exchange(x, "order.placed"), "Job", job{ID: i}))
	}
	for i, c := range confs {
		if err := c.Wait(ctx); err != nil {
			t.Errorf("message %d: %v", i, err)
		}
	}
	if n := adm.ready(q); n != 50 {
		t.Errorf("%d messages in the bound queue, want 50", n)
	}
	async := runtime.PublishAsync(ctx, b, runtime.Exchange(x, "invoice.sent"), "Job", job{ID: 1}).Wait(ctx)
	sync := runtime.Publish(ctx, b, runtime.Exchange(x, "invoice.sent"), "Job", job{ID: 1})
	if !errors.Is(async, ErrUnroutable) || sync == nil || async.Error() != sync.Error() {
		t.Errorf("unroutable through PublishAsync: %v\nthrough Publish: %v\nwant the same error", async, sync)
	}
	if err := runtime.PublishAsync(ctx, b, runtime.Exchange(x, "invoice.sent"), "Job", job{ID: 2}, runtime.AllowUnroutable()).Wait(ctx); err != nil {
		t.Errorf("an unroutable message allowed to be: %v", err)
	}
}
