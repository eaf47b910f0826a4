package rabbitmq

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
)

// sightings records each handler call of a job: whether it came back
// (cameBack).
type sightings struct {
	mu   sync.Mutex
	seen map[int][]bool
}

func newSightings() *sightings { return &sightings{seen: map[int][]bool{}} }

func (s *sightings) add(id int, redelivered bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen[id] = append(s.seen[id], redelivered)
}

func (s *sightings) distinct() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

func (s *sightings) of(id int) []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]bool(nil), s.seen[id]...)
}

func (s *sightings) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, v := range s.seen {
		n += len(v)
	}
	return n
}

// fillJobs publishes jobs 0 to n-1 to queue, confirmed, in one go.
func fillJobs(adm *admin, queue string, n int) {
	msgs := make([]amqp.Publishing, n)
	for i := range msgs {
		msgs[i] = publishingOf(runtime.Message{Type: "Job", ContentType: "application/json", Body: []byte(`{"id":` + itoa(i) + `}`)}, time.Now())
	}
	adm.publish(queue, msgs...)
}

// Four handlers at once, two of them held: every other delivery is
// acknowledged (the broker shows exactly the two held ones unacked, so
// coalescing never acked a delivery whose handler had not finished).
// When the broker then closes the connection, the two held ones come back,
// and nothing acknowledged does.
func TestCoalescedAcksNeverAckARunningHandler(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("coalesce-held")
	name := "streamgen-test-coalesce-" + randomHex(4)
	b := New(brokerURL(), WithConnectionName(name), WithReconnectBackoff(50*time.Millisecond, time.Second, 0.2))
	seen := newSightings()
	hold := make(chan struct{})
	released := false
	release := func() {
		if !released {
			released = true
			close(hold)
		}
	}
	t.Cleanup(release)
	s := sub(q, 0, runtime.Handle("Job", runtime.Policy{}, func(ctx context.Context, j *job, md runtime.Metadata) runtime.Outcome {
		seen.add(j.ID, cameBack(md))
		if (j.ID == 3 || j.ID == 17) && !cameBack(md) {
			select {
			case <-hold:
			case <-ctx.Done():
			}
		}
		return runtime.Ack()
	}))
	s.Concurrency, s.Prefetch = 4, 20
	a := runApp(t, b, s)

	const total = 60
	fillJobs(adm, q, total)
	testkit.Eventually(t, "every job to reach a handler", func() bool { return seen.distinct() == total })
	testkit.Eventually(t, "the broker to hold exactly the two running deliveries unacked", func() bool { return adm.unacked(q) == 2 })
	if n := testkit.CloseConnections(t, name); n < 1 {
		t.Fatalf("closed %d connections named %s", n, name)
	}
	// The two come back, and each runs alone: once the handlers still
	// running return.
	testkit.Eventually(t, "the two held jobs to be set aside", func() bool { return a.stats(q).Released == 2 })
	release()
	testkit.Eventually(t, "the two held jobs to be delivered again", func() bool {
		return len(seen.of(3)) == 2 && len(seen.of(17)) == 2
	})
	for _, id := range []int{3, 17} {
		if got := seen.of(id); !got[1] {
			t.Errorf("job %d seen %v: the second delivery did not come back after the crash", id, got)
		}
	}
	for id := range total {
		if id != 3 && id != 17 {
			if got := seen.of(id); len(got) != 1 {
				t.Errorf("job %d handled %d times: it was acknowledged before the connection closed, so it must not come back", id, len(got))
			}
		}
	}
	testkit.Eventually(t, "the queue to be empty", func() bool { return adm.ready(q) == 0 && adm.unacked(q) == 0 })
	if len(a.logs.Find(slog.LevelInfo, "rabbitmq: reconnected; consuming again")) == 0 && len(a.logs.Find(slog.LevelWarn, "rabbitmq: consuming was interrupted; reconnecting")) == 0 {
		t.Error("the connection loss was not noticed")
	}
}

// The broker closes the connection while 2,000 messages flow through four
// handlers with coalesced acks: every message is handled, only deliveries
// that came back (the broker flagged them redelivered, and they were set
// aside on the suspect queue) are handled again, and no more of them than
// the prefetch window holds.
func TestCoalescedAcksLoseNothingWhenTheConnectionDiesMidBatch(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("coalesce-kill")
	name := "streamgen-test-coalesce-" + randomHex(4)
	b := New(brokerURL(), WithConnectionName(name), WithReconnectBackoff(50*time.Millisecond, time.Second, 0.2))
	seen := newSightings()
	// Until the connection is closed, each handler takes 10ms, so that
	// messages still flow when it closes, and past 1,500 jobs they wait
	// for the close, however long rabbitmqctl takes.
	var closed atomic.Bool
	closing := make(chan struct{})
	s := sub(q, 0, runtime.Handle("Job", runtime.Policy{}, func(ctx context.Context, j *job, md runtime.Metadata) runtime.Outcome {
		seen.add(j.ID, cameBack(md))
		if !closed.Load() {
			time.Sleep(10 * time.Millisecond)
			if seen.distinct() >= 1500 {
				select {
				case <-closing:
				case <-ctx.Done():
				}
			}
		}
		return runtime.Ack()
	}))
	const prefetch, total = 50, 2000
	s.Concurrency, s.Prefetch = 4, prefetch
	a := runApp(t, b, s)

	fillJobs(adm, q, total)
	testkit.Eventually(t, "200 jobs to be handled", func() bool { return seen.distinct() >= 200 })
	if n := testkit.CloseConnections(t, name); n < 1 {
		t.Fatalf("closed %d connections named %s", n, name)
	}
	closed.Store(true)
	close(closing)
	testkit.Eventually(t, "every job to be handled", func() bool { return seen.distinct() == total })
	testkit.Eventually(t, "the queue to be empty", func() bool { return adm.ready(q) == 0 && adm.unacked(q) == 0 })
	again := 0
	for id := range total {
		got := seen.of(id)
		for i, back := range got[1:] {
			if !back {
				t.Errorf("job %d: delivery %d did not come back after the crash: it was handled again although it was acknowledged", id, i+2)
			}
		}
		again += len(got) - 1
	}
	if again == 0 {
		t.Error("nothing came back: the connection closed while no delivery was outstanding")
	}
	if again > prefetch {
		t.Errorf("%d deliveries came back; the broker holds at most %d unacknowledged", again, prefetch)
	}
	if len(a.logs.Find(slog.LevelInfo, "rabbitmq: reconnected; consuming again")) != 1 {
		t.Error("the worker did not reconnect once")
	}
	t.Logf("%d deliveries came back after the connection closed", again)
}

// Acks and nacks without requeue interleave across four handlers: the
// rejected messages reach the queue's dead-letter exchange, the others
// are acknowledged, none is delivered twice, and the channel never closes
// (a settlement the broker refuses would close it).
func TestCoalescedAcksInterleaveWithNacks(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("coalesce-nack", ".retry", ".dl", ".bdl")
	adm.declare(q+".bdl", nil)
	adm.declare(q, amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": q + ".bdl"})
	seen := newSightings()
	s := sub(q, 0, runtime.Handle("Job", runtime.Policy{}, func(_ context.Context, j *job, md runtime.Metadata) runtime.Outcome {
		seen.add(j.ID, md.Redelivered)
		if j.ID%7 == 0 {
			return runtime.DeadLetterNow().Because(errFailed) // no dead_letter: nack without requeue
		}
		return runtime.Ack()
	}))
	s.Concurrency, s.Prefetch = 4, 40
	a := runApp(t, newTestBroker(), s)

	const total = 300
	fillJobs(adm, q, total)
	rejected := (total + 6) / 7
	testkit.Eventually(t, "the rejected jobs to reach the dead-letter exchange", func() bool { return adm.ready(q+".bdl") == rejected })
	testkit.Eventually(t, "the queue to be empty", func() bool { return adm.ready(q) == 0 && adm.unacked(q) == 0 })
	if n := seen.calls(); n != total {
		t.Errorf("%d handler calls for %d jobs: some were delivered twice", n, total)
	}
	for range rejected {
		d, ok := adm.get(q + ".bdl")
		if !ok {
			t.Fatal("the dead-letter exchange's queue ran out")
		}
		var j job
		if err := json.Unmarshal(d.Body, &j); err != nil || j.ID%7 != 0 {
			t.Errorf("dead-lettered %s (%v), which was acknowledged", d.Body, err)
		}
	}
	if st := a.stats(q); st.Rejected != int64(rejected) || st.Acked != int64(total-rejected) || st.Failed != 0 {
		t.Errorf("stats %+v, want %d rejected and %d acked", st, rejected, total-rejected)
	}
	if lost := a.logs.Find(slog.LevelWarn, "rabbitmq: consuming was interrupted; reconnecting"); len(lost) > 0 {
		t.Errorf("the channel closed: %v", lost[0].Attr("err"))
	}
}

// Acks still waiting when the App stops are sent before the connection
// closes: nothing handled comes back. The idle flush is off here, so only
// Shutdown can send them.
func TestShutdownSendsTheAcksStillWaiting(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("coalesce-shutdown")
	b := newTestBroker()
	b.opts.ackIdle = time.Hour
	var c calls
	s := sub(q, 0, handler("Job", runtime.Policy{}, &c, alwaysAck))
	s.Prefetch = 50 // an ack in 12 is sent at once; 5 wait
	a := runApp(t, b, s)
	fillJobs(adm, q, 5)
	testkit.Eventually(t, "five jobs to be handled", func() bool { return c.len() == 5 })
	if n := adm.unacked(q); n != 5 {
		t.Fatalf("%d deliveries unacked before the stop, want 5: the acks must still wait", n)
	}
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	if n := adm.ready(q); n != 0 {
		t.Errorf("%d messages back in the queue after the stop: the waiting acks were not sent", n)
	}
}
