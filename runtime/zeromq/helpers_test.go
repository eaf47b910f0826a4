package zeromq_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(keeperChildEnv); dir != "" {
		os.Exit(runKeeperChild(dir))
	}
	goleak.VerifyTestMain(m)
}

// waitLimit bounds a test's wait for a reply or a read, as
// testkit.Patience bounds its waits for a condition.
const waitLimit = testkit.Patience

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

// newClock returns the fake clock of the tests, at a fixed start the
// dead-letter tests find in the headers.
func newClock() *streamtest.Clock {
	return streamtest.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
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
	testkit.Eventually(t, fmt.Sprintf("%d deliveries on %q", n, sub), func() bool { return len(r.Of(sub)) >= n })
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

// publishJob publishes a Job of type "job" to queue.
func publishJob(t *testing.T, p runtime.Publisher, queue string, j Job, opts ...runtime.PublishOption) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := runtime.Publish(ctx, p, runtime.Queue(queue), "job", j, opts...); err != nil {
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
