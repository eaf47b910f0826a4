package brokertest

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/streamgen/streamgen/runtime"
)

// A quorum subscription retries with every attempt counted and the dead
// letter explained: through its queue's own delayed retry where the broker
// has one (Transport.DelayedRetry: the same message, handed back and
// redelivered, with no retry count header), else through a wait queue (a
// copy with the retry count). RabbitMQ only.
func quorumQueueRetries(t testing.TB, tr Transport) {
	q := uniqueName(t)
	dl := q + ".dead"
	f := newFixture(t, tr, q, dl)
	var work, dead handlerCalls[Job]
	s := f.subscription(q, runtime.Handle("Job", f.policy(3, dl), func(ctx context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
		work.add(ctx, j, md)
		return runtime.Retry().Because(errFailed)
	}))
	s.QueueType = runtime.QuorumQueue
	f.start(s, f.reader(dl, &dead))
	f.publish(q, "Job", Job{ID: 31}, runtime.WithMessageID("m-31"))
	f.eventually("the dead letter to be read back", func() bool { return dead.len() >= 1 })
	f.stop()

	mds := work.metadata()
	if got := attemptsOf(mds); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("the handler saw attempts %v, want [1 2 3]", got)
	}
	for i, md := range mds[1:] {
		count := md.Headers[tr.retryCountHeader()]
		if tr.DelayedRetry && (!md.Redelivered || count != "") {
			t.Errorf("attempt %d: redelivered %v, retry count %q; want the message handed back by the queue, with no retry count", i+2, md.Redelivered, count)
		}
		if !tr.DelayedRetry && (md.Redelivered || count != strconv.Itoa(i+1)) {
			t.Errorf("attempt %d: redelivered %v, retry count %q; want a copy from the wait queue with retry count %d", i+2, md.Redelivered, count, i+1)
		}
		if md.MessageID != "m-31" {
			t.Errorf("attempt %d has message id %q, want m-31", i+2, md.MessageID)
		}
	}
	if h := dead.metadata(); len(h) != 1 || h[0].Headers[runtime.HeaderDeadLetterAttempts] != "3" || h[0].Headers[runtime.HeaderDeadLetterSource] != q {
		t.Errorf("dead letters %+v, want one after 3 attempts from %s", h, q)
	}
	if st := f.stats(q); st.Delivered != 3 || st.Retried != 2 || st.Parked != 1 {
		t.Errorf("counters %+v, want 3 delivered, 2 retried, 1 parked", st)
	}
}
