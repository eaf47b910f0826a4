package rabbitmq

import (
	"context"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testkit"
	"github.com/streamgen/streamgen/runtime"
)

// queue_type=quorum declares a quorum queue. Retries go through wait queue
// copies, which the quorum queue sees as new messages; its own delivery
// count (x-delivery-count, which x-delivery-limit caps) only counts
// redeliveries, and our attempt number ignores it.
func TestQuorumQueue(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("quorum")
	name := "streamgen-test-quorum-" + randomHex(4)
	b := New(brokerURL(), WithConnectionName(name), WithReconnectBackoff(50*time.Millisecond, time.Second, 0.2))

	var mu sync.Mutex
	var seen []runtime.Metadata
	firstOfTwo := make(chan struct{}, 1)
	release := make(chan struct{})
	h := runtime.Handle("Job", runtime.Policy{MaxAttempts: 3}, func(ctx context.Context, j *job, md runtime.Metadata) runtime.Outcome {
		mu.Lock()
		seen = append(seen, md)
		mu.Unlock()
		switch {
		case j.ID == 1 && md.Attempt == 1:
			return runtime.Retry().Because(errFailed)
		case j.ID == 2 && !md.Redelivered:
			// Held until the broker has taken the connection away.
			firstOfTwo <- struct{}{}
			<-release
		}
		return runtime.Ack()
	})
	s := sub(q, 200*time.Millisecond, h)
	s.QueueType = runtime.QuorumQueue
	s.Concurrency = 2 // one worker stays held while the other takes the redelivery
	a := runApp(t, b, s)
	// Declaring it as a quorum queue again succeeds only if it is one.
	adm.declare(q, amqp.Table{"x-queue-type": "quorum"})

	publishJob(t, adm, q, "Job", job{ID: 1})
	testkit.Eventually(t, "job 1 to succeed on its second attempt", func() bool { return a.stats(q).Acked == 1 })
	mu.Lock()
	retried := seen[len(seen)-1]
	mu.Unlock()
	if retried.Attempt != 2 {
		t.Errorf("job 1 acked on attempt %d, want 2", retried.Attempt)
	}
	if c := retried.Headers["x-delivery-count"]; c != "" && c != "0" {
		t.Errorf("the retry copy has x-delivery-count %q; a copy is a new message to the quorum queue", c)
	}

	publishJob(t, adm, q, "Job", job{ID: 2})
	<-firstOfTwo
	if n := closeConnections(t, name+" (consume)"); n != 1 {
		t.Fatalf("closed %d consuming connections, want 1", n)
	}
	testkit.Eventually(t, "job 2 to be redelivered and acked", func() bool { return a.stats(q).Acked == 2 })
	close(release)
	mu.Lock()
	again := seen[len(seen)-1]
	mu.Unlock()
	if !again.Redelivered || again.Headers["x-delivery-count"] != "1" {
		t.Errorf("redelivery: redelivered %v, x-delivery-count %q; want true and 1", again.Redelivered, again.Headers["x-delivery-count"])
	}
	if again.Attempt != 1 {
		t.Errorf("redelivery counts as attempt %d; a redelivery is not a retry, want 1", again.Attempt)
	}
}
