package rabbitmq

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
)

// Each message sent with PublishAsync gets its own outcome: those to a
// queue that exists land, the one to a queue that does not is reported
// unroutable, all from one goroutine.
func TestPublishAsyncReportsEachMessagesOutcome(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("async")
	adm.declare(q, nil)
	b := newTestBroker(WithPublishWindow(16))
	t.Cleanup(func() { _ = b.Close() })
	ctx := t.Context()
	const n = 200
	confs := make([]*runtime.Confirmation, 0, n+1)
	for i := range n {
		queue := q
		if i == 120 {
			queue = q + ".missing"
		}
		confs = append(confs, runtime.PublishAsync(ctx, b, runtime.Queue(queue), "Job", job{ID: i}))
	}
	for i, c := range confs {
		err := c.Wait(ctx)
		switch {
		case i == 120 && (!errors.Is(err, ErrUnroutable) || !strings.Contains(err.Error(), "declare the queue first")):
			t.Errorf("message %d to a missing queue: %v, want ErrUnroutable saying to declare it", i, err)
		case i != 120 && err != nil:
			t.Errorf("message %d: %v", i, err)
		}
	}
	if got := adm.ready(q); got != n-1 {
		t.Errorf("%d messages in the queue, want %d", got, n-1)
	}
}

// A message the broker refuses (a full queue that rejects publishes) is
// reported nacked.
func TestPublishAsyncReportsANack(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("async-nack")
	adm.declare(q, nil)
	setPolicy(t, q, `{"max-length":0,"overflow":"reject-publish"}`)
	testkit.Eventually(t, "the policy to make the broker refuse publishes", func() bool {
		return !adm.tryPublish(q, amqp.Publishing{Body: []byte("probe")})
	})
	b := newTestBroker()
	t.Cleanup(func() { _ = b.Close() })
	if err := runtime.PublishAsync(t.Context(), b, runtime.Queue(q), "Job", job{ID: 1}).Wait(t.Context()); !errors.Is(err, ErrNacked) {
		t.Errorf("outcome %v, want ErrNacked", err)
	}
}

// A message not confirmed within the confirm timeout is reported so, and
// frees its place in the window.
func TestPublishAsyncReportsAMissingConfirm(t *testing.T) {
	testkit.NoLeaks(t)
	b := newTestBroker(WithConfirmTimeout(100*time.Millisecond), WithPublishWindow(1))
	w := newWithheld()
	b.pub.open = w.open
	t.Cleanup(func() {
		w.confirm()
		_ = b.Close()
	})
	for range 2 { // the second needs the place the first held
		if err := runtime.PublishAsync(t.Context(), b, runtime.Queue("q"), "Job", job{ID: 1}).Wait(t.Context()); !errors.Is(err, ErrNoConfirm) {
			t.Errorf("outcome %v, want ErrNoConfirm", err)
		}
	}
}

// No more messages await their confirm than the window holds: the next
// PublishAsync waits, and gives up with the context's error when it ends
// first. Closing the Broker fails the messages still awaited.
func TestPublishAsyncWaitsWhileTheWindowIsFull(t *testing.T) {
	testkit.NoLeaks(t)
	b := newTestBroker(WithConfirmTimeout(time.Minute), WithPublishWindow(3))
	var published atomic.Int64
	b.pub.open = func(context.Context) (publishChannel, error) { // confirms nothing
		return countingChannel{newFakeChannel(func(uint64, string, amqp.Publishing) (*amqp.Return, *amqp.Confirmation) { return nil, nil }), &published}, nil
	}
	ctx := t.Context()
	var confs []*runtime.Confirmation
	for i := range 3 {
		confs = append(confs, runtime.PublishAsync(ctx, b, runtime.Queue("q"), "Job", job{ID: i}))
	}
	// The fourth waits on its context: once it asks for the context's
	// end, it has found the window full. It must not have returned or
	// sent anything then, nor until the context ends, however long that
	// takes on a busy machine.
	var returned atomic.Bool
	short, cancel := context.WithCancel(ctx)
	defer cancel()
	watched := &doneWatch{Context: short, asked: make(chan struct{})}
	fourth := make(chan *runtime.Confirmation)
	go func() {
		c := runtime.PublishAsync(watched, b, runtime.Queue("q"), "Job", job{ID: 3})
		returned.Store(true)
		fourth <- c
	}()
	select {
	case <-watched.asked:
	case c := <-fourth:
		t.Fatalf("a fourth PublishAsync returned without waiting while three messages await their confirm (outcome %v)", c.Err())
	}
	if returned.Load() || published.Load() != 3 {
		t.Errorf("a fourth PublishAsync returned (%v) or was sent (%d sent) while three messages await their confirm", returned.Load(), published.Load())
	}
	cancel()
	if err := (<-fourth).Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("the fourth message: %v, want the context's end", err)
	}
	if n := published.Load(); n != 3 {
		t.Errorf("%d messages sent, want 3", n)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for i, c := range confs {
		if err := c.Wait(ctx); !errors.Is(err, ErrChannelClosed) {
			t.Errorf("message %d after Close: %v, want ErrChannelClosed", i, err)
		}
	}
	if err := runtime.PublishAsync(ctx, b, runtime.Queue("q"), "Job", job{ID: 9}).Wait(ctx); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), `publish Job to "q"`) {
		t.Errorf("PublishAsync after Close: %v, want ErrClosed, naming the message type and queue", err)
	}
}

// BenchmarkPublishAsyncAllocation: a message of PublishAsync costs the
// Broker one allocation on top of what the publishing channel makes
// (BenchmarkPublishAsyncChannelAllocation): the record that holds its
// pending publish, its place in the window and its callback. make bench
// checks the allocs/op of the two.
func BenchmarkPublishAsyncAllocation(b *testing.B) {
	testkit.NoLeaks(b)
	bk, _, publish := allocBroker(b)
	b.ReportAllocs()
	for b.Loop() {
		publish(bk)
	}
}

// BenchmarkPublishAsyncChannelAllocation is what the publishing channel
// of BenchmarkPublishAsyncAllocation allocates for a message.
func BenchmarkPublishAsyncChannelAllocation(b *testing.B) {
	testkit.NoLeaks(b)
	_, f, _ := allocBroker(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		dc, err := f.publishDeferred(ctx, "", "q", true, amqp.Publishing{MessageId: "m"})
		if err != nil {
			b.Fatal(err)
		}
		<-dc.Done()
	}
}

// allocBroker returns a Broker of a window of 4 whose publishing channel
// is a fake that confirms each message at once, open, the channel, and
// a publish of one message through the Broker that waits for its
// outcome.
func allocBroker(b *testing.B) (*Broker, *fakeChannel, func(*Broker)) {
	bk := newTestBroker(WithPublishWindow(4))
	f := newFakeChannel(func(seq uint64, _ string, _ amqp.Publishing) (*amqp.Return, *amqp.Confirmation) { return nil, ack(seq) })
	bk.pub.open = func(context.Context) (publishChannel, error) { return f, nil }
	b.Cleanup(func() { _ = bk.Close() })
	ctx := context.Background()
	settled := make(chan error, 1)
	done := func(err error) { settled <- err }
	msg := runtime.Message{ID: "m", Type: "Job", Body: []byte("{}")}
	publish := func(bk *Broker) {
		bk.PublishAsync(ctx, "q", msg, done)
		if err := <-settled; err != nil {
			b.Fatal(err)
		}
	}
	publish(bk) // opens the channel
	return bk, f, publish
}

// doneWatch is a context that tells, by closing asked, when its Done is
// first asked for: a call waiting on it has got that far.
type doneWatch struct {
	context.Context
	once  sync.Once
	asked chan struct{}
}

func (w *doneWatch) Done() <-chan struct{} {
	w.once.Do(func() { close(w.asked) })
	return w.Context.Done()
}
