package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/clock"
)

// fakeChannel stands in for an amqp091 channel in confirm mode. reply
// decides what the "broker" answers to each publish; the answers come from
// one goroutine in publish order, like a connection's reader: a return
// before the confirm, as RabbitMQ sends them. A confirm marks the
// publish's deferred confirm done, and only that publish's: the delivery
// tag reply gives is not read.
type fakeChannel struct {
	reply func(seq uint64, key string, msg amqp.Publishing) (ret *amqp.Return, conf *amqp.Confirmation)

	mu       sync.Mutex
	seq      uint64
	closed   bool
	returns  chan amqp.Return
	closes   chan *amqp.Error
	order    chan func() // replies in publish order, like a single reader
	done     chan struct{}
	confirms map[uint64]*fakeConfirm // not yet confirmed
}

// fakeConfirm is a deferred confirm of the fakeChannel.
type fakeConfirm struct {
	done chan struct{}
	ack  bool
}

func (c *fakeConfirm) Done() <-chan struct{} { return c.done }

func (c *fakeConfirm) Acked() bool {
	select {
	case <-c.done:
		return c.ack
	default:
		return false
	}
}

func newFakeChannel(reply func(uint64, string, amqp.Publishing) (*amqp.Return, *amqp.Confirmation)) *fakeChannel {
	f := &fakeChannel{reply: reply, order: make(chan func(), 1024), done: make(chan struct{}), confirms: map[uint64]*fakeConfirm{}}
	go func() {
		defer close(f.done)
		for fn := range f.order {
			fn()
		}
	}()
	return f
}

func (f *fakeChannel) publishDeferred(_ context.Context, _, key string, _ bool, msg amqp.Publishing) (deferredConfirm, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, amqp.ErrClosed
	}
	f.seq++
	seq := f.seq
	dc := &fakeConfirm{done: make(chan struct{})}
	f.confirms[seq] = dc
	f.order <- func() {
		ret, conf := f.reply(seq, key, msg)
		if ret != nil {
			f.returns <- *ret
		}
		if conf != nil {
			f.mu.Lock()
			delete(f.confirms, seq)
			f.mu.Unlock()
			dc.ack = conf.Ack
			close(dc.done)
		}
	}
	return dc, nil
}

func (f *fakeChannel) NotifyReturn(c chan amqp.Return) chan amqp.Return { f.returns = c; return c }
func (f *fakeChannel) NotifyClose(c chan *amqp.Error) chan *amqp.Error  { f.closes = c; return c }

func (f *fakeChannel) IsClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// Close closes the channel after the replies already queued, as the
// library does: an error on the close channel, then the notification
// channels closed, then every confirm still to come marked done, not
// acked.
func (f *fakeChannel) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return amqp.ErrClosed
	}
	f.closed = true
	close(f.order)
	f.mu.Unlock()
	<-f.done
	f.closes <- &amqp.Error{Code: amqp.ChannelError, Reason: "closed by test"}
	close(f.closes)
	close(f.returns)
	f.mu.Lock()
	defer f.mu.Unlock()
	for seq, dc := range f.confirms {
		delete(f.confirms, seq)
		close(dc.done)
	}
	return nil
}

func ack(seq uint64) *amqp.Confirmation  { return &amqp.Confirmation{DeliveryTag: seq, Ack: true} }
func nack(seq uint64) *amqp.Confirmation { return &amqp.Confirmation{DeliveryTag: seq, Ack: false} }

func newTestConfirmChannel(t *testing.T, f *fakeChannel, timeout time.Duration) *confirmChannel {
	t.Helper()
	c := newConfirmChannel(f, clock.System{}, timeout, slog.New(slog.DiscardHandler))
	t.Cleanup(c.close)
	return c
}

func msg(id string) amqp.Publishing { return amqp.Publishing{MessageId: id, Body: []byte("x")} }

func TestConfirmOutcomes(t *testing.T) {
	testkit.NoLeaks(t)
	tests := []struct {
		name  string
		reply func(uint64, string, amqp.Publishing) (*amqp.Return, *amqp.Confirmation)
		want  error
	}{
		{"ack", func(s uint64, _ string, _ amqp.Publishing) (*amqp.Return, *amqp.Confirmation) {
			return nil, ack(s)
		}, nil},
		{"nack", func(s uint64, _ string, _ amqp.Publishing) (*amqp.Return, *amqp.Confirmation) {
			return nil, nack(s)
		}, ErrNacked},
		{"return then ack", func(s uint64, k string, m amqp.Publishing) (*amqp.Return, *amqp.Confirmation) {
			return &amqp.Return{ReplyCode: 312, ReplyText: "NO_ROUTE", RoutingKey: k, MessageId: m.MessageId}, ack(s)
		}, ErrUnroutable},
		{"return of another message then ack", func(s uint64, k string, _ amqp.Publishing) (*amqp.Return, *amqp.Confirmation) {
			return &amqp.Return{ReplyCode: 312, RoutingKey: k, MessageId: "someone-else"}, ack(s)
		}, nil},
		{"return to another queue then ack", func(s uint64, _ string, m amqp.Publishing) (*amqp.Return, *amqp.Confirmation) {
			return &amqp.Return{ReplyCode: 312, RoutingKey: "elsewhere", MessageId: m.MessageId}, ack(s)
		}, nil},
		{"no confirm", func(uint64, string, amqp.Publishing) (*amqp.Return, *amqp.Confirmation) {
			return nil, nil
		}, ErrNoConfirm},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestConfirmChannel(t, newFakeChannel(tt.reply), 100*time.Millisecond)
			err := c.publish(context.Background(), "q", msg("m-1"))
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("publish = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestConfirmLateConfirmAfterTimeoutIsIgnored(t *testing.T) {
	testkit.NoLeaks(t)
	release := make(chan struct{})
	f := newFakeChannel(func(s uint64, _ string, m amqp.Publishing) (*amqp.Return, *amqp.Confirmation) {
		if m.MessageId == "slow" {
			<-release
		}
		return nil, ack(s)
	})
	c := newTestConfirmChannel(t, f, 50*time.Millisecond)
	if err := c.publish(context.Background(), "q", msg("slow")); !errors.Is(err, ErrNoConfirm) {
		t.Fatalf("slow publish = %v, want ErrNoConfirm", err)
	}
	close(release)
	if err := c.publish(context.Background(), "q", msg("next")); err != nil {
		t.Errorf("publish after a late confirm = %v, want nil", err)
	}
}

func TestConfirmChannelCloseFailsPending(t *testing.T) {
	testkit.NoLeaks(t)
	f := newFakeChannel(func(uint64, string, amqp.Publishing) (*amqp.Return, *amqp.Confirmation) { return nil, nil })
	c := newConfirmChannel(f, clock.System{}, time.Hour, slog.New(slog.DiscardHandler))
	done := make(chan error)
	go func() { done <- c.publish(context.Background(), "q", msg("m")) }()
	for c.pendingCount() == 0 {
		time.Sleep(time.Millisecond)
	}
	c.close()
	if err := <-done; !errors.Is(err, ErrChannelClosed) {
		t.Errorf("pending publish at close = %v, want ErrChannelClosed", err)
	}
	if c.usable() {
		t.Error("closed channel reports usable")
	}
	if err := c.publish(context.Background(), "q", msg("m2")); !errors.Is(err, ErrChannelClosed) {
		t.Errorf("publish on a closed channel = %v, want ErrChannelClosed", err)
	}
}

func TestConfirmContextCancel(t *testing.T) {
	testkit.NoLeaks(t)
	f := newFakeChannel(func(uint64, string, amqp.Publishing) (*amqp.Return, *amqp.Confirmation) { return nil, nil })
	c := newTestConfirmChannel(t, f, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.publish(ctx, "q", msg("m")) }()
	for c.pendingCount() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("publish with cancelled context = %v, want context.Canceled", err)
	}
	if n := c.pendingCount(); n != 0 {
		t.Errorf("%d publishes still pending after cancel", n)
	}
}

// Concurrent publishers each learn their own outcome: the message id says
// what the fake broker does with it.
func TestConfirmConcurrentPublishesCorrelate(t *testing.T) {
	testkit.NoLeaks(t)
	f := newFakeChannel(func(s uint64, k string, m amqp.Publishing) (*amqp.Return, *amqp.Confirmation) {
		n, _ := strconv.Atoi(m.MessageId)
		switch n % 3 {
		case 1:
			return nil, nack(s)
		case 2:
			return &amqp.Return{ReplyCode: 312, RoutingKey: k, MessageId: m.MessageId}, ack(s)
		}
		return nil, ack(s)
	})
	c := newTestConfirmChannel(t, f, 10*time.Second)
	var wg sync.WaitGroup
	errs := make([]error, 300)
	for i := range errs {
		wg.Go(func() { errs[i] = c.publish(context.Background(), "q", msg(strconv.Itoa(i))) })
	}
	wg.Wait()
	for i, err := range errs {
		var want error
		switch i % 3 {
		case 1:
			want = ErrNacked
		case 2:
			want = ErrUnroutable
		}
		if want == nil && err != nil || want != nil && !errors.Is(err, want) {
			t.Errorf("message %d: %v, want %v", i, err, want)
		}
	}
}

// pendingCount is for tests.
func (c *confirmChannel) pendingCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending.len()
}

// fakeAcknowledger records how a delivery was settled.
type fakeAcknowledger struct {
	mu      sync.Mutex
	settled []string
	fail    error
}

func (a *fakeAcknowledger) record(s string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.settled = append(a.settled, s)
	return a.fail
}
func (a *fakeAcknowledger) Ack(tag uint64, _ bool) error { return a.record(fmt.Sprintf("ack %d", tag)) }
func (a *fakeAcknowledger) Nack(tag uint64, _ bool, requeue bool) error {
	return a.record(fmt.Sprintf("nack %d requeue=%v", tag, requeue))
}
func (a *fakeAcknowledger) Reject(tag uint64, requeue bool) error {
	return a.record(fmt.Sprintf("reject %d requeue=%v", tag, requeue))
}

// The runner settles a delivery as its Consumer says, on the delivery's
// own channel.
func TestRunnerSettles(t *testing.T) {
	testkit.NoLeaks(t)
	r := &runner{}
	for _, tt := range []struct {
		name    string
		settle  func(context.Context, *adapter.Delivery) error
		settled string
	}{
		{"ack", r.Ack, "ack 7"},
		{"reject", r.Reject, "nack 7 requeue=false"},
		{"requeue", r.Requeue, "reject 7 requeue=true"}, // counted toward a delivery limit on 4.3 too
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := &fakeAcknowledger{}
			if err := tt.settle(t.Context(), &adapter.Delivery{Raw: &amqp.Delivery{Acknowledger: a, DeliveryTag: 7}}); err != nil {
				t.Fatal(err)
			}
			if len(a.settled) != 1 || a.settled[0] != tt.settled {
				t.Errorf("settled %v, want [%s]", a.settled, tt.settled)
			}
		})
	}
	if !errors.Is(fmt.Errorf("returned: %w", ErrUnroutable), adapter.ErrUnroutable) {
		t.Error("ErrUnroutable is not the one the Consumer rejects on")
	}
}

// The messages are settled in the order they were sent; one given up on
// at the front of that order does not hold back those behind it, whose
// confirms came: neither when its publisher's context ends, nor when its
// confirm is overdue.
func TestConfirmGivenUpOnDoesNotHoldBackTheNext(t *testing.T) {
	testkit.NoLeaks(t)
	for _, tt := range []struct {
		name    string
		timeout time.Duration
		giveUp  func(cancel context.CancelFunc)
		want    error
	}{
		{"context ends", time.Hour, func(cancel context.CancelFunc) { cancel() }, context.Canceled},
		{"confirm overdue", 50 * time.Millisecond, func(context.CancelFunc) {}, ErrNoConfirm},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeChannel(func(s uint64, _ string, m amqp.Publishing) (*amqp.Return, *amqp.Confirmation) {
				if m.MessageId == "held" {
					return nil, nil // never confirmed
				}
				return nil, ack(s)
			})
			c := newTestConfirmChannel(t, f, tt.timeout)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			held := make(chan error, 1)
			go func() { held <- c.publish(ctx, "q", msg("held")) }()
			for c.pendingCount() == 0 {
				time.Sleep(time.Millisecond)
			}
			next := make(chan error, 1)
			if err := c.publishAsync(t.Context(), "q", msg("next"), func(err error) { next <- err }); err != nil {
				t.Fatal(err)
			}
			tt.giveUp(cancel)
			if err := <-held; !errors.Is(err, tt.want) {
				t.Errorf("held message: %v, want %v", err, tt.want)
			}
			select {
			case err := <-next:
				if err != nil {
					t.Errorf("next message: %v, want confirmed", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the confirmed message behind the one given up on was never settled")
			}
		})
	}
}

// A nack that came before the channel closed is a nack; a message whose
// confirm had not come is reported as lost with the channel.
func TestConfirmNackBeforeCloseIsANack(t *testing.T) {
	testkit.NoLeaks(t)
	f := newFakeChannel(func(s uint64, _ string, m amqp.Publishing) (*amqp.Return, *amqp.Confirmation) {
		if m.MessageId == "refused" {
			return nil, nack(s)
		}
		return nil, nil
	})
	c := newConfirmChannel(f, clock.System{}, time.Hour, slog.New(slog.DiscardHandler))
	refused, lost := make(chan error, 1), make(chan error, 1)
	if err := c.publishAsync(t.Context(), "q", msg("refused"), func(err error) { refused <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-refused; !errors.Is(err, ErrNacked) {
		t.Errorf("refused message: %v, want ErrNacked", err)
	}
	if err := c.publishAsync(t.Context(), "q", msg("lost"), func(err error) { lost <- err }); err != nil {
		t.Fatal(err)
	}
	c.close()
	if err := <-lost; !errors.Is(err, ErrChannelClosed) {
		t.Errorf("message awaiting its confirm at the close: %v, want ErrChannelClosed", err)
	}
}

// While the broker blocks the connection, a copy's confirm wait does not
// time out, and a Publish's does; once it is unblocked, the copy's wait
// has its timeout again.
func TestConfirmWaitOfACopyDoesNotTimeOutWhileTheConnectionIsBlocked(t *testing.T) {
	testkit.NoLeaks(t)
	f := newFakeChannel(func(uint64, string, amqp.Publishing) (*amqp.Return, *amqp.Confirmation) { return nil, nil })
	const timeout = 50 * time.Millisecond
	c := newTestConfirmChannel(t, f, timeout)
	var blocked atomic.Bool
	blocked.Store(true)
	c.held = blocked.Load
	copied := make(chan error, 1)
	if err := c.publishCopy(t.Context(), "q.retry", msg("copy"), func(err error) { copied <- err }); err != nil {
		t.Fatal(err)
	}
	if err := c.publish(t.Context(), "q", msg("publish")); !errors.Is(err, ErrNoConfirm) {
		t.Errorf("Publish while blocked = %v, want ErrNoConfirm", err)
	}
	select {
	case err := <-copied:
		t.Fatalf("the copy's wait ended while the connection is blocked: %v", err)
	case <-time.After(20 * timeout):
	}
	blocked.Store(false)
	select {
	case err := <-copied:
		if !errors.Is(err, ErrNoConfirm) {
			t.Errorf("copy after the unblock = %v, want ErrNoConfirm", err)
		}
	case <-time.After(patience):
		t.Fatal("the copy's wait did not time out once the connection was unblocked")
	}
}
