package rabbitmq

import (
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
)

// quorumSub is a quorum subscription on queue with one retry delay and
// the given retry path, dead-lettering into queue+".dl".
func quorumSub(queue string, retry runtime.RetryPath, delay time.Duration, c *calls, outcome func(j *job, md runtime.Metadata) runtime.Outcome) *runtime.Subscription {
	s := sub(queue, delay, handler("Job", runtime.Policy{MaxAttempts: 3, DeadLetter: queue + ".dl"}, c, outcome))
	s.QueueType = runtime.QuorumQueue
	s.Retry = retry
	return s
}

// byID groups the attempts and redelivered flags of c's calls by job id.
func byID(c *calls) map[int][]string {
	out := map[int][]string{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, md := range c.mds {
		out[c.ids[i]] = append(out[c.ids[i]], fmt.Sprintf("%d/%v", md.Attempt, md.Redelivered))
	}
	return out
}

// On RabbitMQ 4.3 a quorum subscription retries through its queue: each
// retry is the same message handed back, redelivered after the delay,
// with its attempt counted exactly, and the dead letter explains itself
// as on the wait-queue path. On an older broker the same subscription
// retries through its wait queue, and says why at startup when asked for
// the queue's own retry.
func TestBrokerRetry(t *testing.T) {
	t.Parallel()
	adm := newAdmin(t)
	delayed := adm.version().queues().DelayedRetry()
	q := adm.queue("broker-retry")
	var c calls
	s := quorumSub(q, runtime.RetryBroker, 300*time.Millisecond, &c, func(j *job, md runtime.Metadata) runtime.Outcome {
		switch {
		case j.ID == 1, j.ID == 2 && md.Attempt == 1:
			return runtime.Retry().Because(errFailed)
		}
		return runtime.Ack()
	})
	a := runApp(t, newTestBroker(), s)
	for id := 1; id <= 3; id++ {
		publishJob(t, adm, q, "Job", job{ID: id}, runtime.WithMessageID(fmt.Sprint("m-", id)))
	}
	testkit.Eventually(t, "every attempt", func() bool { return c.len() == 6 })
	dead, ok := getWithin(t, adm, q+".dl")
	if !ok {
		t.Fatal("no dead letter")
	}
	if got := fmt.Sprint(dead.Headers[runtime.HeaderDeadLetterAttempts]); got != "3" {
		t.Errorf("the dead letter says %s attempts, want 3", got)
	}
	if got := fmt.Sprint(dead.Headers[runtime.HeaderDeadLetterReason]); got != "failed on attempt 3 of 3: "+errFailed.Error() {
		t.Errorf("the dead letter's reason is %q", got)
	}
	// The queue's own retry hands the message back: it comes back
	// redelivered. A wait queue's copy is a new message.
	redelivered := delayed
	want := map[int][]string{
		1: {"1/false", fmt.Sprintf("2/%v", redelivered), fmt.Sprintf("3/%v", redelivered)},
		2: {"1/false", fmt.Sprintf("2/%v", redelivered)},
		3: {"1/false"},
	}
	got := byID(&c)
	for id, w := range want {
		if !slices.Equal(got[id], w) {
			t.Errorf("job %d: attempts %v, want %v (attempt/redelivered)", id, got[id], w)
		}
	}
	st := a.stats(q)
	if st.Retried != 3 || st.Parked != 1 || st.Acked != 2 {
		t.Errorf("stats %+v, want 3 retried, 1 parked, 2 acked", st)
	}
	var said []string
	for _, r := range a.logs.Find(slog.LevelInfo, "rabbitmq: retries wait in the subscription's quorum queue (RabbitMQ delayed retry): no copies, no wait queue") {
		said = append(said, r.Attr("delay"))
	}
	if !delayed {
		for _, r := range a.logs.Records() {
			if r.Message == "rabbitmq: retries go through wait queues: the broker is older than RabbitMQ 4.3, whose quorum queues delay a message handed back" {
				said = append(said, "wait queues")
			}
		}
	}
	if wantSaid := map[bool]string{true: "300ms", false: "wait queues"}[delayed]; !slices.Equal(said, []string{wantSaid}) {
		t.Errorf("said at startup %v, want once %q", said, wantSaid)
	}
}

// getWithin reads one message of queue, waiting for it a while.
func getWithin(t *testing.T, adm *admin, queue string) (d amqp.Delivery, ok bool) {
	t.Helper()
	testkit.Eventually(t, "a message in "+queue, func() bool {
		d, ok = adm.get(queue)
		return ok
	})
	return d, ok
}

// A subscription that moves from wait queues to its queue's own retry
// loses nothing: a queue declared before keeps the wait queues (it is
// used as it is, and the startup log says how to move it); once it is
// deleted and declared again, the copies still in the wait queue come
// back into it, and go on counting their attempts from their retry count.
func TestBrokerRetryMoveFromWaitQueues(t *testing.T) {
	t.Parallel()
	adm := newAdmin(t)
	q := adm.queue("broker-retry-move")
	var c calls
	fail := func(*job, runtime.Metadata) runtime.Outcome { return runtime.Retry().Because(errFailed) }

	// Wait queues: the first attempt's copy waits 3 s in q.retry.
	first := startApp(t, newTestBroker(), 20*time.Second, quorumSub(q, runtime.RetryQueue, 3*time.Second, &c, fail))
	first.waitReady()
	publishJob(t, adm, q, "Job", job{ID: 1}, runtime.WithMessageID("m-1"))
	testkit.Eventually(t, "the copy in the wait queue", func() bool { return c.len() == 1 && adm.ready(q+".retry") == 1 })
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}

	// Declared again with the same queue: it lacks the arguments, and the
	// subscription keeps the wait queues, and says so.
	again := startApp(t, newTestBroker(), 20*time.Second, quorumSub(q, runtime.RetryAuto, 3*time.Second, &c, fail))
	again.waitReady()
	lacking := again.logs.Find(slog.LevelInfo, "rabbitmq: queue exists without the delayed-retry arguments; its subscription retries through wait queues, as before")
	if adm.version().queues().DelayedRetry() != (len(lacking) == 1) {
		t.Errorf("said %d times that the queue lacks the delayed-retry arguments, on RabbitMQ %v", len(lacking), adm.version())
	}
	if err := again.stop(); err != nil {
		t.Fatal(err)
	}

	// The move: the queue is empty (its message waits in q.retry); deleted,
	// it is declared again with the arguments where the broker has them.
	adm.delete(q)
	runApp(t, newTestBroker(), quorumSub(q, runtime.RetryAuto, 3*time.Second, &c, fail))
	dead, _ := getWithin(t, adm, q+".dl")
	if got := fmt.Sprint(dead.Headers[runtime.HeaderDeadLetterAttempts]); got != "3" {
		t.Errorf("the dead letter says %s attempts, want 3", got)
	}
	if got := c.attempts(); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("attempts %v, want 1, 2, 3: nothing lost, none counted twice", got)
	}
}

// A subscription that moves back from its queue's own retry to wait
// queues loses nothing: the queue keeps its arguments and is used as
// declared, and a message it held for its delay comes back and runs. Its
// attempts are then counted from its retry count header alone (the
// queue's own retries are read only where the subscription uses them), so
// it runs as attempt 1 again.
func TestBrokerRetryMoveBackToWaitQueues(t *testing.T) {
	t.Parallel()
	adm := newAdmin(t)
	delayed := adm.version().queues().DelayedRetry()
	q := adm.queue("broker-retry-back")
	var c calls
	outcome := func(_ *job, md runtime.Metadata) runtime.Outcome {
		if md.Redelivered || md.Attempt > 1 {
			return runtime.Ack()
		}
		return runtime.Retry().Because(errFailed)
	}
	first := startApp(t, newTestBroker(), 20*time.Second, quorumSub(q, runtime.RetryAuto, 2*time.Second, &c, outcome))
	first.waitReady()
	publishJob(t, adm, q, "Job", job{ID: 1}, runtime.WithMessageID("m-1"))
	testkit.Eventually(t, "the first attempt", func() bool { return c.len() == 1 })
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	back := runApp(t, newTestBroker(), quorumSub(q, runtime.RetryQueue, 2*time.Second, &c, outcome))
	testkit.Eventually(t, "the message handled", func() bool { return back.stats(q).Acked == 1 })
	want := map[bool][]string{
		true:  {"1/false", "1/true"},  // held by the queue, handed back: attempts restart
		false: {"1/false", "2/false"}, // a copy through the wait queue
	}[delayed]
	if got := byID(&c)[1]; !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v (attempt/redelivered) on RabbitMQ %v", got, want, adm.version())
	}
}
