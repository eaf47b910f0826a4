package zeromq_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// noLeaks fails t when a goroutine started during t is still running after
// t and its cleanups are done. Call it first, so its cleanup runs last.
func noLeaks(t *testing.T) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
}

// waitLimit is how long a test waits for a condition before it fails. It is
// generous: the machine is shared.
const waitLimit = 30 * time.Second

// eventually fails the test unless cond becomes true within waitLimit.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// freeEndpoint returns a tcp endpoint on loopback with a port nobody uses.
func freeEndpoint(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "tcp://" + ln.Addr().String()
}

// fakeClock is a runtime.Clock whose time passes only in Advance.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	clock *fakeClock
	at    time.Time
	d     time.Duration
	f     func()
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) runtime.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clock: c, at: c.now.Add(d), d: d, f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.timers, t)
	if i < 0 {
		return false
	}
	c.timers = slices.Delete(c.timers, i, i+1)
	return true
}

// Advance lets d pass and calls the functions whose time has come, each in
// its own goroutine.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	c.timers = slices.DeleteFunc(c.timers, func(t *fakeTimer) bool {
		if !t.at.After(c.now) {
			due = append(due, t)
			return true
		}
		return false
	})
	c.mu.Unlock()
	for _, t := range due {
		go t.f()
	}
}

// Pending returns the durations of the timers not yet fired or stopped.
func (c *fakeClock) Pending() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]time.Duration, len(c.timers))
	for i, t := range c.timers {
		out[i] = t.d
	}
	return out
}

// logEntry is one captured log record, its attributes as text.
type logEntry struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

func (e logEntry) String() string {
	keys := make([]string, 0, len(e.Attrs))
	for k := range e.Attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q", e.Level, e.Msg)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%q", k, e.Attrs[k])
	}
	return b.String()
}

// logCapture is a slog.Handler that keeps every record.
type logCapture struct {
	mu      *sync.Mutex
	entries *[]logEntry
	attrs   []slog.Attr
}

func newLogCapture() *logCapture {
	return &logCapture{mu: &sync.Mutex{}, entries: &[]logEntry{}}
}

func (h *logCapture) Logger() *slog.Logger { return slog.New(h) }

func (h *logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (h *logCapture) Handle(_ context.Context, r slog.Record) error {
	e := logEntry{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}}
	for _, a := range h.attrs {
		e.Attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		e.Attrs[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	*h.entries = append(*h.entries, e)
	h.mu.Unlock()
	return nil
}

func (h *logCapture) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logCapture{mu: h.mu, entries: h.entries, attrs: append(slices.Clone(h.attrs), attrs...)}
}

func (h *logCapture) WithGroup(string) slog.Handler { return h }

// Entries returns the records whose message contains msg.
func (h *logCapture) Entries(msg string) []logEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []logEntry
	for _, e := range *h.entries {
		if strings.Contains(e.Msg, msg) {
			out = append(out, e)
		}
	}
	return out
}

// Dump returns every record, one a line, for failure messages.
func (h *logCapture) Dump() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for _, e := range *h.entries {
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// received is what a test handler saw of one delivery.
type received struct {
	Sub  string
	Body string
	MD   runtime.Metadata
}

// recorder keeps what test handlers received.
type recorder struct {
	mu   sync.Mutex
	got  []received
	more chan struct{}
}

func newRecorder() *recorder { return &recorder{more: make(chan struct{}, 1)} }

func (r *recorder) add(body string, md runtime.Metadata) {
	r.mu.Lock()
	r.got = append(r.got, received{Sub: md.Subscription, Body: body, MD: md})
	r.mu.Unlock()
}

func (r *recorder) All() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// Of returns what subscription sub received.
func (r *recorder) Of(sub string) []received {
	var out []received
	for _, g := range r.All() {
		if g.Sub == sub {
			out = append(out, g)
		}
	}
	return out
}

// waitFor waits until subscription sub received n messages and returns
// them.
func (r *recorder) waitFor(t *testing.T, sub string, n int) []received {
	t.Helper()
	eventually(t, fmt.Sprintf("%d deliveries on %q", n, sub), func() bool { return len(r.Of(sub)) >= n })
	return r.Of(sub)
}

// Job is the message of most tests.
type Job struct {
	ID     int    `json:"id"`
	Note   string `json:"note,omitempty"`
	Amount int    `json:"amount_cents,omitempty"`
}

// jobHandler records each Job and returns what outcome says.
func jobHandler(rec *recorder, policy runtime.Policy, outcome func(*Job, runtime.Metadata) error) runtime.Handler {
	return runtime.Handle("job", policy, func(_ context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
		rec.add(fmt.Sprint(j.ID), md)
		if outcome == nil {
			return runtime.Ack()
		}
		return runtime.OutcomeOf(outcome(j, md))
	})
}

// runApp runs app until the test ends (or stop is called) and returns stop,
// which cancels the app and returns Run's error.
func runApp(t *testing.T, app *runtime.App) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	select {
	case <-app.Ready():
	case err := <-done:
		cancel()
		t.Fatalf("app did not start: %v", err)
	case <-time.After(waitLimit):
		cancel()
		t.Fatal("app did not start in time")
	}
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(waitLimit):
				err = fmt.Errorf("app did not stop in time")
			}
		})
		return err
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("app stopped with: %v", err)
		}
	})
	return stop
}

// publishJob publishes a Job of type "job" to queue.
func publishJob(t *testing.T, p runtime.Publisher, queue string, j Job, opts ...runtime.PublishOption) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := runtime.Publish(ctx, p, queue, "job", j, opts...); err != nil {
		t.Fatalf("publish to %q: %v", queue, err)
	}
}

// shutdown closes a broker used only to publish.
func shutdown(t *testing.T, b runtime.Broker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := b.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}
