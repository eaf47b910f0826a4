package zeromq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime/streamtest"
)

// fakeSender records what it sends; while blocked, send waits until it is
// unblocked or its context ends.
type fakeSender struct {
	mu      sync.Mutex
	sent    []string
	blocked chan struct{} // nil: not blocked
	sending chan struct{} // told each time a send starts
}

func (f *fakeSender) send(ctx context.Context, frames [][]byte, done func(error)) error {
	f.mu.Lock()
	blocked := f.blocked
	f.mu.Unlock()
	select {
	case f.sending <- struct{}{}:
	default:
	}
	if blocked != nil {
		select {
		case <-blocked:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	f.sent = append(f.sent, string(frames[0]))
	f.mu.Unlock()
	done(nil)
	return nil
}

func (f *fakeSender) connections() int            { return 0 }
func (f *fakeSender) close(context.Context) error { return nil }

func (f *fakeSender) Sent() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.sent...)
}

// settled collects what the done of each copy was told.
type settled struct {
	mu   sync.Mutex
	errs map[string]error
}

func (s *settled) done(name string) func(error) {
	return func(err error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.errs == nil {
			s.errs = map[string]error{}
		}
		if _, twice := s.errs[name]; twice {
			panic("copy " + name + " settled twice")
		}
		s.errs[name] = err
	}
}

func (s *settled) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.errs)
}

func (s *settled) get(name string) (error, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	err, ok := s.errs[name]
	return err, ok
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func item(name string, s *settled) copyItem {
	return copyItem{frames: [][]byte{[]byte(name)}, done: s.done(name)}
}

func TestOutboxSendsInOrderAndSettlesEach(t *testing.T) {
	f := &fakeSender{sending: make(chan struct{}, 1)}
	o := newOutbox("jobs.dead", f, 10, streamtest.NewLogRecorder(nil).Logger())
	var s settled
	for i := range 5 {
		o.put(context.Background(), item(fmt.Sprint(i), &s), true)
	}
	waitUntil(t, "five settled", func() bool { return s.len() == 5 })
	if got := strings.Join(f.Sent(), ","); got != "0,1,2,3,4" {
		t.Fatalf("sent %s, want 0,1,2,3,4 in order", got)
	}
	for i := range 5 {
		if err, _ := s.get(fmt.Sprint(i)); err != nil {
			t.Fatalf("copy %d settled with %v", i, err)
		}
	}
	if lost := o.flush(context.Background()); lost != 0 {
		t.Fatalf("flush lost %d", lost)
	}
}

// TestOutboxFullHoldsThePutBackAndWarnsOncePerEpisode: with room for two
// copies (the one being sent counts), a third put waits, and one warning
// names the queue; once the outbox has emptied, filling it again warns
// again.
func TestOutboxFullHoldsThePutBackAndWarnsOncePerEpisode(t *testing.T) {
	logs := streamtest.NewLogRecorder(nil)
	release := make(chan struct{})
	f := &fakeSender{blocked: release, sending: make(chan struct{}, 1)}
	o := newOutbox("jobs.dead", f, 2, logs.Logger())
	var s settled
	for episode := 1; episode <= 2; episode++ {
		o.put(context.Background(), item(fmt.Sprint(episode, "a"), &s), true)
		o.put(context.Background(), item(fmt.Sprint(episode, "b"), &s), true)
		third := make(chan struct{})
		go func() {
			defer close(third)
			o.put(context.Background(), item(fmt.Sprint(episode, "c"), &s), true)
		}()
		waitUntil(t, "a warning", func() bool { return len(logs.Containing("outbox")) == episode })
		select {
		case <-third:
			t.Fatal("the third put returned while the outbox was full")
		default:
		}
		if l := logs.Containing("outbox")[episode-1]; l.Attrs["queue"] != "jobs.dead" || l.Attrs["outbox_size"] != "2" {
			t.Fatalf("warning = %s", l)
		}
		f.mu.Lock()
		f.blocked = nil
		f.mu.Unlock()
		close(release)
		<-third
		waitUntil(t, "the episode's copies sent", func() bool { return s.len() == 3*episode })
		release = make(chan struct{})
		f.mu.Lock()
		f.blocked = release
		f.mu.Unlock()
	}
	close(release)
	if lost := o.flush(context.Background()); lost != 0 {
		t.Fatalf("flush lost %d", lost)
	}
}

// TestOutboxFlushGivesUpOnWhatIsLeft: a destination that takes nothing, and
// a flush whose deadline has passed: the copy being sent and those waiting
// are each settled as lost, with the queue named, and counted.
func TestOutboxFlushGivesUpOnWhatIsLeft(t *testing.T) {
	f := &fakeSender{blocked: make(chan struct{}), sending: make(chan struct{}, 1)}
	o := newOutbox("jobs.dead", f, 10, streamtest.NewLogRecorder(nil).Logger())
	var s settled
	for _, name := range []string{"a", "b", "c"} {
		o.put(context.Background(), item(name, &s), true)
	}
	<-f.sending
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if lost := o.flush(ended); lost != 3 {
		t.Fatalf("flush lost %d, want 3", lost)
	}
	for _, name := range []string{"a", "b", "c"} {
		err, ok := s.get(name)
		if !ok || err == nil || !strings.Contains(err.Error(), `"jobs.dead"`) || !strings.Contains(err.Error(), "lost") || !errors.Is(err, context.Canceled) {
			t.Fatalf("copy %s settled with %v", name, err)
		}
	}
	// A copy put after the flush is lost at once.
	o.put(context.Background(), item("late", &s), true)
	if err, ok := s.get("late"); !ok || !errors.Is(err, errClosed) {
		t.Fatalf("late copy settled with %v", err)
	}
}

// TestOutboxFlushWaitsForTheCopiesItHolds: while its context lasts, flush
// waits for the destination to take every copy.
func TestOutboxFlushWaitsForTheCopiesItHolds(t *testing.T) {
	release := make(chan struct{})
	f := &fakeSender{blocked: release, sending: make(chan struct{}, 1)}
	o := newOutbox("jobs.dead", f, 10, streamtest.NewLogRecorder(nil).Logger())
	var s settled
	for _, name := range []string{"a", "b"} {
		o.put(context.Background(), item(name, &s), true)
	}
	flushed := make(chan int, 1)
	go func() { flushed <- o.flush(context.Background()) }()
	<-f.sending
	select {
	case n := <-flushed:
		t.Fatalf("flush returned (%d lost) before the copies were sent", n)
	default:
	}
	close(release)
	if lost := <-flushed; lost != 0 || s.len() != 2 {
		t.Fatalf("flush lost %d, %d settled", lost, s.len())
	}
}

// TestOutboxPutThatMustNotHoldItsCallerBackWaitsInAGoroutine: a full
// outbox of a queue the service reads itself does not hold the caller
// back; the copy waits for room, and is sent once there is some.
func TestOutboxPutThatMustNotHoldItsCallerBackWaitsInAGoroutine(t *testing.T) {
	logs := streamtest.NewLogRecorder(nil)
	release := make(chan struct{})
	f := &fakeSender{blocked: release, sending: make(chan struct{}, 1)}
	o := newOutbox("jobs", f, 1, logs.Logger())
	var s settled
	o.put(context.Background(), item("a", &s), false)
	o.put(context.Background(), item("b", &s), false) // returns: the outbox is full
	if l := logs.Containing("outbox"); len(l) != 1 || !strings.Contains(l[0].Attrs["then"], "reads the queue itself") {
		t.Fatalf("logs:\n%s", logs)
	}
	close(release)
	waitUntil(t, "both sent", func() bool { return s.len() == 2 })
	if got := strings.Join(f.Sent(), ","); got != "a,b" {
		t.Fatalf("sent %s", got)
	}
	if lost := o.flush(context.Background()); lost != 0 {
		t.Fatalf("flush lost %d", lost)
	}
}

// fakeBatchSender is a fakeSender that also writes batches: it records the
// size of each, and writes only the first failAt of a batch that reaches
// it (failAt above 0), failing for the rest.
type fakeBatchSender struct {
	*fakeSender
	batches []int
	failAt  int
}

func (f *fakeBatchSender) sendBatch(ctx context.Context, msgs [][][]byte) (int, error) {
	f.mu.Lock()
	blocked := f.blocked
	f.mu.Unlock()
	if blocked != nil {
		select {
		case f.sending <- struct{}{}:
		default:
		}
		select {
		case <-blocked:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches = append(f.batches, len(msgs))
	for i, m := range msgs {
		if f.failAt > 0 && i == f.failAt {
			return i, errors.New("zeromq: connection reset")
		}
		f.sent = append(f.sent, string(m[0]))
	}
	return len(msgs), nil
}

// The copies that wait in the outbox while one is being sent go out
// together, in order; when a batch is written only in part, the copies
// written are settled as written and the others with the error.
func TestOutboxSendsWaitingCopiesTogether(t *testing.T) {
	release := make(chan struct{})
	f := &fakeBatchSender{fakeSender: &fakeSender{blocked: release, sending: make(chan struct{}, 1)}}
	o := newOutbox("jobs.dead", f, 20, streamtest.NewLogRecorder(nil).Logger())
	var s settled
	o.put(context.Background(), item("0", &s), true)
	<-f.sending // copy 0 is being sent, alone
	for i := 1; i < 10; i++ {
		o.put(context.Background(), item(fmt.Sprint(i), &s), true)
	}
	f.mu.Lock()
	f.blocked, f.failAt = nil, 4
	f.mu.Unlock()
	close(release)
	waitUntil(t, "ten settled", func() bool { return s.len() == 10 })
	f.mu.Lock()
	batches := fmt.Sprint(f.batches)
	f.mu.Unlock()
	if batches != "[1 9]" {
		t.Fatalf("batches of %s copies, want [1 9]: copy 0 alone, then the nine that waited", batches)
	}
	if got := strings.Join(f.Sent(), ","); got != "0,1,2,3,4" {
		t.Fatalf("sent %s, want 0,1,2,3,4", got)
	}
	for i := range 10 {
		err, _ := s.get(fmt.Sprint(i))
		if (err == nil) != (i <= 4) {
			t.Fatalf("copy %d settled with %v", i, err)
		}
	}
	if lost := o.flush(context.Background()); lost != 0 {
		t.Fatalf("flush lost %d", lost)
	}
}

// A batch cut by a flush that gave up: each copy not written is lost, and
// counted.
func TestOutboxFlushGivesUpOnABatch(t *testing.T) {
	f := &fakeBatchSender{fakeSender: &fakeSender{blocked: make(chan struct{}), sending: make(chan struct{}, 1)}}
	o := newOutbox("jobs.dead", f, 10, streamtest.NewLogRecorder(nil).Logger())
	var s settled
	for _, name := range []string{"a", "b", "c"} {
		o.put(context.Background(), item(name, &s), true)
	}
	<-f.sending
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if lost := o.flush(ended); lost != 3 {
		t.Fatalf("flush lost %d, want 3", lost)
	}
	for _, name := range []string{"a", "b", "c"} {
		if err, ok := s.get(name); !ok || err == nil || !strings.Contains(err.Error(), "lost") {
			t.Fatalf("copy %s settled with %v", name, err)
		}
	}
}
