package rabbitmq

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
)

// Several handlers share one queue; the type property picks the handler,
// and each type has its own policy.
func TestDispatchOnTypeAcrossHandlers(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("dispatch")
	var created, paid, refunded calls
	a := runApp(t, newTestBroker(), sub(q, 100*time.Millisecond,
		handler("OrderCreated", runtime.Policy{MaxAttempts: 2}, &created, alwaysAck),
		handler("OrderPaid", runtime.Policy{MaxAttempts: 4, DeadLetter: q + ".dl"}, &paid, alwaysAck),
		handler("OrderRefunded", runtime.Policy{}, &refunded, alwaysAck),
	))
	publishJob(t, a.broker, q, "OrderCreated", job{ID: 1})
	publishJob(t, a.broker, q, "OrderPaid", job{ID: 2})
	publishJob(t, a.broker, q, "OrderRefunded", job{ID: 3})
	publishJob(t, a.broker, q, "OrderPaid", job{ID: 4})
	testkit.Eventually(t, "all four to be handled", func() bool { return a.stats(q).Acked == 4 })
	check := func(name string, c *calls, ids []int, maxAttempts int) {
		t.Helper()
		c.mu.Lock()
		got := slices.Clone(c.ids)
		c.mu.Unlock()
		slices.Sort(got)
		if !slices.Equal(got, ids) {
			t.Errorf("%s handled %v, want %v", name, got, ids)
		}
		for _, md := range c.metadata() {
			if md.MessageType != name || md.MaxAttempts != maxAttempts {
				t.Errorf("%s got metadata type %q cap %d, want cap %d", name, md.MessageType, md.MaxAttempts, maxAttempts)
			}
		}
	}
	check("OrderCreated", &created, []int{1}, 2)
	check("OrderPaid", &paid, []int{2, 4}, 4)
	check("OrderRefunded", &refunded, []int{3}, 1)
}

// What runtime.Publish sends through the Broker is what the worker
// expects: type, content type, message id, persistent.
func TestPublishedMessagesCarryTheirProperties(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("props")
	adm.declare(q, nil)
	b := newTestBroker()
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	// No App: Publish connects by itself.
	publishJob(t, b, q, "Job", job{ID: 9}, runtime.WithHeader("tenant", "acme"))
	d, ok := adm.get(q)
	if !ok {
		t.Fatal("nothing was published")
	}
	if d.Type != "Job" || d.ContentType != "application/json" || d.DeliveryMode != amqp.Persistent ||
		!regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(d.MessageId) || d.Headers["tenant"] != "acme" ||
		string(d.Body) != `{"id":9}` || d.Timestamp.IsZero() {
		t.Errorf("published message = %+v", d)
	}

	// And a worker accepts it.
	var c calls
	b2 := newTestBroker()
	a := runApp(t, b2, sub(q, 0, handler("Job", runtime.Policy{}, &c, alwaysAck)))
	publishJob(t, b, q, "Job", job{ID: 10})
	testkit.Eventually(t, "the worker to accept it", func() bool { return a.stats(q).Acked == 1 })
	if md := c.metadata()[0]; md.MessageType != "Job" || len(md.MessageID) != 32 || c.ids[0] != 10 {
		t.Errorf("worker saw %+v", md)
	}
}

func TestPublishToAMissingQueueIsUnroutable(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("missing")
	b := newTestBroker()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	err := runtime.Publish(ctx, b, runtime.Queue(q), "Job", job{ID: 1})
	if !errors.Is(err, ErrUnroutable) || !strings.Contains(err.Error(), "declare the queue first") {
		t.Errorf("publish to a missing queue = %v, want ErrUnroutable with a hint", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := runtime.Publish(ctx, b, runtime.Queue(q), "Job", job{ID: 1}); !errors.Is(err, ErrClosed) {
		t.Errorf("publish after Close = %v, want ErrClosed", err)
	}
}

// A Broker without a codec of its own encodes with the App's once started.
func TestCodecFollowsTheApp(t *testing.T) {
	testkit.NoLeaks(t)
	b := newTestBroker()
	if _, ok := b.Codec().(runtime.JSON); !ok {
		t.Errorf("codec before start = %T, want JSON", b.Codec())
	}
	if _, ok := newTestBroker(WithCodec(otherJSON{})).Codec().(otherJSON); !ok {
		t.Error("WithCodec is not the Broker's codec")
	}

	adm := newAdmin(t)
	q := adm.queue("codec")
	var c calls
	ra := runtime.NewApp("codec-test", runtime.WithCodec(otherJSON{}))
	ra.Mount(b, sub(q, 0, handler("Job", runtime.Policy{}, &c, alwaysAck)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ra.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	select {
	case <-ra.Ready():
	case err := <-done:
		t.Fatalf("the App did not start: %v", err)
	}
	if _, ok := b.Codec().(otherJSON); !ok {
		t.Errorf("codec once started = %T, want the App's", b.Codec())
	}
}

// otherJSON is a codec of its own type, for TestCodecFollowsTheApp.
type otherJSON struct{ runtime.JSON }
