package rabbitmq

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
)

// While 1,000 messages flow and some wait to be retried, the broker closes
// the worker's connections. The worker reconnects, declares its queues
// again and resumes: every message is handled, none is lost, the queues
// end empty.
func TestReconnectsAndLosesNothingWhenTheBrokerClosesTheConnections(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("reconnect")
	const total = 1000
	name := "streamgen-test-reconnect-" + randomHex(4)
	b := New(brokerURL(), WithConnectionName(name), WithReconnectBackoff(50*time.Millisecond, time.Second, 0.2))

	var mu sync.Mutex
	handled := map[int]int{}
	succeeded := 0
	// Once 300 messages are handled, handlers hold on until the
	// connections are closed, so the close hits deliveries in flight.
	hold := make(chan struct{})
	h := runtime.Handle("Job", runtime.Policy{MaxAttempts: 5}, func(ctx context.Context, j *job, md runtime.Metadata) runtime.Outcome {
		mu.Lock()
		n := succeeded
		mu.Unlock()
		if n >= 300 {
			select {
			case <-hold:
			case <-ctx.Done():
			}
		}
		if j.ID%10 == 0 && md.Attempt == 1 {
			return runtime.Retry().Because(errFailed)
		}
		mu.Lock()
		handled[j.ID]++
		succeeded++
		mu.Unlock()
		return runtime.Ack()
	})
	s := sub(q, 200*time.Millisecond, h)
	s.Concurrency, s.Prefetch = 4, 20
	a := runApp(t, b, s)

	msgs := make([]amqp.Publishing, total)
	for i := range msgs {
		msgs[i] = publishingOf(runtime.Message{Type: "Job", ContentType: "application/json", Body: []byte(`{"id":` + itoa(i) + `}`)}, time.Now())
	}
	adm.publish(q, msgs...)
	testkit.Eventually(t, "300 messages to be handled", func() bool { mu.Lock(); defer mu.Unlock(); return succeeded >= 300 })
	if n := testkit.CloseConnections(t, name); n != 2 {
		t.Errorf("closed %d connections named %s, want 2 (consume and publish)", n, name)
	}
	testkit.Eventually(t, "the worker to reconnect", func() bool {
		return len(a.logs.Find(slog.LevelInfo, "rabbitmq: reconnected; consuming again")) >= 1
	})
	close(hold)

	testkit.Eventually(t, "every message to be handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(handled) == total
	})
	testkit.Eventually(t, "the queues to be empty", func() bool {
		return adm.ready(q) == 0 && adm.ready(q+".retry") == 0
	})
	testkit.Eventually(t, "every retry to be counted", func() bool { return a.stats(q).Retried >= total/10 })
	st := a.stats(q)
	if st.Dropped != 0 || st.Rejected != 0 || st.Parked != 0 {
		t.Errorf("stats = %+v: nothing may be dropped, rejected or parked", st)
	}
	if st.Retried < total/10 {
		t.Errorf("%d retries, want at least %d (every tenth message fails once)", st.Retried, total/10)
	}
	lost := a.logs.Find(slog.LevelWarn, "rabbitmq: consuming was interrupted; reconnecting")
	if len(lost) == 0 {
		t.Fatal("the connection loss was not logged")
	}
	if u := lost[0].Attr("url"); u != RedactURL(brokerURL()) {
		t.Errorf("logged URL %q, want the redacted %q", u, RedactURL(brokerURL()))
	}
	for _, r := range a.logs.Records() {
		if pw, ok := passwordOf(brokerURL()); ok && strings.Contains(r.String(), ":"+pw+"@") {
			t.Errorf("a log line shows the password: %s", r)
		}
	}
	mu.Lock()
	dup := 0
	for _, n := range handled {
		if n > 1 {
			dup++
		}
	}
	mu.Unlock()
	t.Logf("%d retries, %d failed settlements, %d messages handled more than once (at-least-once)", st.Retried, st.Failed, dup)
}

func passwordOf(url string) (string, bool) {
	uri, err := amqp.ParseURI(url)
	return uri.Password, err == nil && uri.Password != ""
}

// When the queue is deleted under a running worker, the broker cancels the
// consumer; the worker declares its queues again and consumes on.
func TestRedeclaresAQueueDeletedWhileRunning(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("deleted")
	var c calls
	a := runApp(t, newTestBroker(), sub(q, 100*time.Millisecond, handler("Job", runtime.Policy{MaxAttempts: 2}, &c, alwaysAck)))
	adm.delete(q)
	testkit.Eventually(t, "the worker to consume again", func() bool {
		return len(a.logs.Find(slog.LevelInfo, "rabbitmq: reconnected; consuming again")) == 1
	})
	lost := a.logs.Find(slog.LevelWarn, "rabbitmq: consuming was interrupted; reconnecting")
	if len(lost) != 1 || !strings.Contains(lost[0].Attr("err"), "cancelled consumer") {
		t.Errorf("loss logged as %v, want the broker's consumer cancel", lost)
	}
	publishJob(t, adm, q, "Job", job{ID: 1})
	testkit.Eventually(t, "a message on the declared-again queue to be handled", func() bool { return a.stats(q).Acked == 1 })
}
