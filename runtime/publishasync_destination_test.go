package runtime_test

import (
	"errors"
	"testing"

	"github.com/streamgen/streamgen/runtime"
)

// PublishAsync sends to the destination's exchange and key without
// waiting, and the Confirmation carries the publisher's outcome.
func TestPublishAsyncSendsToTheDestination(t *testing.T) {
	p := &asyncPublisher{}
	c := runtime.PublishAsync(t.Context(), p, runtime.Exchange("orders", "order.placed"), "Job", job{ID: 3}, runtime.WithMessageID("m-3"))
	if len(p.msgs) != 1 || p.queue != "order.placed" || p.msgs[0].Exchange != "orders" || p.msgs[0].Type != "Job" || p.msgs[0].ID != "m-3" || string(p.msgs[0].Body) != `{"id":3}` {
		t.Fatalf("sent to %q: %+v", p.queue, p.msgs)
	}
	select {
	case <-c.Done():
		t.Fatal("done before the publisher reported the outcome")
	default:
	}
	p.done[0](nil)
	if err := c.Wait(t.Context()); err != nil {
		t.Errorf("Wait = %v, want nil", err)
	}

	q := &asyncPublisher{}
	runtime.PublishAsync(t.Context(), q, runtime.Queue("jobs"), "Job", job{ID: 4})
	if q.queue != "jobs" || q.msgs[0].Exchange != "" {
		t.Errorf("a queue destination was sent to exchange %q, key %q", q.msgs[0].Exchange, q.queue)
	}
}

// A message that cannot be encoded is never sent: its Confirmation is done
// with the encoding error, naming the destination.
func TestPublishAsyncToAnExchangeReportsAnEncodingError(t *testing.T) {
	p := &asyncPublisher{}
	c := runtime.PublishAsync(t.Context(), p, runtime.Exchange("orders", "k"), "Job", make(chan int))
	<-c.Done()
	var unsupported interface{ Unwrap() error }
	if err := c.Err(); err == nil || !errors.As(err, &unsupported) || len(p.msgs) != 0 {
		t.Fatalf("Err = %v after %d sends, want the encoding error and none", err, len(p.msgs))
	}
	if got := c.Err().Error(); got != `runtime: publish Job to exchange "orders" with routing key "k": runtime: encode: json: unsupported type: chan int` {
		t.Errorf("error = %q", got)
	}
}
