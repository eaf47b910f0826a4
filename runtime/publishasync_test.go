package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/internal/messageid"
)

// asyncPublisher holds the outcome of each message until the test reports
// it.
type asyncPublisher struct {
	publisher
	msgs []runtime.Message
	done []func(error)
}

func (p *asyncPublisher) PublishAsync(_ context.Context, queue string, msg runtime.Message, done func(error)) {
	p.queue = queue
	p.msgs = append(p.msgs, msg)
	p.done = append(p.done, done)
}

// The Confirmation of an asynchronous publisher is done once the
// publisher reports the outcome, and carries it.
func TestPublishAsyncWaitsForTheOutcome(t *testing.T) {
	p := &asyncPublisher{}
	c := runtime.PublishAsync(t.Context(), p, runtime.Queue("jobs"), "Job", job{ID: 7}, runtime.WithMessageID("m-7"))
	if len(p.msgs) != 1 || p.queue != "jobs" || p.msgs[0].Type != "Job" || p.msgs[0].ID != "m-7" || string(p.msgs[0].Body) != `{"id":7}` {
		t.Fatalf("sent to %q: %+v", p.queue, p.msgs)
	}
	select {
	case <-c.Done():
		t.Fatal("done before the publisher reported the outcome")
	default:
	}
	if c.Err() != nil {
		t.Errorf("Err = %v before the outcome, want nil", c.Err())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if err := c.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait before the outcome = %v, want the context's deadline", err)
	}
	refused := errors.New("refused")
	p.done[0](refused)
	<-c.Done()
	if err := c.Wait(t.Context()); err != refused || c.Err() != refused {
		t.Errorf("Wait = %v, Err = %v; want the publisher's outcome", err, c.Err())
	}
}

// A publisher without PublishAsync publishes at once: the
// Confirmation is done with what Publish returned.
func TestPublishAsyncFallsBackToPublish(t *testing.T) {
	gone := errors.New("gone")
	p := &publisher{err: gone}
	c := runtime.PublishAsync(t.Context(), p, runtime.Queue("jobs"), "Job", job{ID: 1})
	select {
	case <-c.Done():
	default:
		t.Fatal("not done after a synchronous publish")
	}
	if c.Err() != gone || p.msg.Type != "Job" {
		t.Errorf("Err = %v, published %+v", c.Err(), p.msg)
	}
}

// A value the codec cannot encode is never sent; its Confirmation says
// why.
func TestPublishAsyncReportsAnEncodingError(t *testing.T) {
	p := &asyncPublisher{}
	c := runtime.PublishAsync(t.Context(), p, runtime.Queue("jobs"), "Job", make(chan int))
	if err := c.Wait(t.Context()); err == nil || len(p.msgs) != 0 {
		t.Errorf("Wait = %v after %d sends, want an encoding error and no send", err, len(p.msgs))
	}
}

// PublishAsync encodes with the publisher's codec.
func TestPublishAsyncUsesThePublishersCodec(t *testing.T) {
	p := &asyncCodecPublisher{asyncPublisher: &asyncPublisher{}}
	runtime.PublishAsync(t.Context(), p, runtime.Queue("notes"), "Note", "hello")
	if m := p.msgs[0]; m.ContentType != "text/plain" || string(m.Body) != "HELLO" {
		t.Errorf("sent %+v", m)
	}
}

type asyncCodecPublisher struct{ *asyncPublisher }

func (asyncCodecPublisher) Codec() runtime.Codec { return textCodec{} }

// instantPublisher reports every message confirmed before PublishAsync
// returns, and keeps nothing.
type instantPublisher struct{ publisher }

func (instantPublisher) PublishAsync(_ context.Context, _ string, _ runtime.Message, done func(error)) {
	done(nil)
}

// Publish sends what it is given, with and without options.
func TestPublishWithAndWithoutOptions(t *testing.T) {
	ctx := t.Context()
	p := &publisher{}
	if err := runtime.Publish(ctx, p, runtime.Queue("jobs"), "Job", &job{ID: 7}); err != nil || p.msg.ID == "" || p.msg.Priority != 0 {
		t.Errorf("without options: %v, sent %+v", err, p.msg)
	}
	if err := runtime.Publish(ctx, p, runtime.Queue("jobs"), "Job", &job{ID: 7}, runtime.WithMessageID("m-1"), runtime.WithProperties(runtime.Properties{Priority: 3})); err != nil || p.msg.ID != "m-1" || p.msg.Priority != 3 {
		t.Errorf("with options: %v, sent %+v", err, p.msg)
	}
}

// BenchmarkPublishWithoutOptions: a message published without options
// allocates its body and its id and nothing more (as many allocations as
// BenchmarkPublishParts shows), so the options' pointer does not move
// every message to the heap. Allocation counts are read here, not in a
// test: encoding/json's sync.Pool drops items at random under -race.
func BenchmarkPublishWithoutOptions(b *testing.B) {
	ctx := context.Background()
	p := &publisher{}
	v := &job{ID: 7}
	b.ReportAllocs()
	for b.Loop() {
		if err := runtime.Publish(ctx, p, runtime.Queue("jobs"), "Job", v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPublishParts is what a published message must allocate: its
// body and its id.
func BenchmarkPublishParts(b *testing.B) {
	v := &job{ID: 7}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = runtime.JSON{}.Encode(v)
		_ = messageid.New()
	}
}

// A Confirmation whose outcome came before anyone waited has it at once:
// Wait returns it even with a context that has ended (it waits on
// nothing), Done is closed, and Err is the outcome; a refusal likewise.
// (BenchmarkPublishAsyncConfirmedBeforeTheWait counts what it allocates.)
func TestPublishAsyncConfirmedBeforeTheWait(t *testing.T) {
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	refused := errors.New("refused")
	for _, want := range []error{nil, refused} {
		p := &outcomePublisher{err: want}
		c := runtime.PublishAsync(t.Context(), p, runtime.Queue("jobs"), "Job", &job{ID: 7})
		if err := c.Wait(ended); err != want {
			t.Errorf("Wait with an ended context = %v, want the outcome %v", err, want)
		}
		select {
		case <-c.Done():
		default:
			t.Fatal("Done is open after the outcome")
		}
		if err := c.Err(); err != want {
			t.Errorf("Err = %v, want %v", err, want)
		}
	}
}

// BenchmarkPublishAsyncConfirmedBeforeTheWait reports what PublishAsync
// and Wait allocate for a message confirmed before the wait: its body, its
// id, the Confirmation and the callback that settles it, and no channel.
func BenchmarkPublishAsyncConfirmedBeforeTheWait(b *testing.B) {
	ctx := b.Context()
	v := &job{ID: 7}
	p := &instantPublisher{}
	b.ReportAllocs()
	for b.Loop() {
		if err := runtime.PublishAsync(ctx, p, runtime.Queue("jobs"), "Job", v).Wait(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// outcomePublisher reports err for every message before PublishAsync
// returns.
type outcomePublisher struct {
	publisher
	err error
}

func (p *outcomePublisher) PublishAsync(_ context.Context, _ string, _ runtime.Message, done func(error)) {
	done(p.err)
}

// Done and Wait, called before the outcome from other goroutines, all
// see it.
func TestPublishAsyncOutcomeReachesEveryWaiter(t *testing.T) {
	p := &asyncPublisher{}
	c := runtime.PublishAsync(t.Context(), p, runtime.Queue("jobs"), "Job", job{ID: 1})
	refused := errors.New("refused")
	errs := make(chan error, 2)
	go func() { errs <- c.Wait(t.Context()) }()
	go func() { <-c.Done(); errs <- c.Err() }()
	p.done[0](refused)
	for range 2 {
		if err := <-errs; err != refused {
			t.Errorf("waiter got %v, want %v", err, refused)
		}
	}
}
