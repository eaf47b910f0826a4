package adapter_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

// crashReason is the reason of a message parked after n crashes.
func crashReason(n int) string {
	return "crashed the worker (or lost its connection, or could not send its copy) " + strconv.Itoa(n) + " times while being handled: parked without running it again"
}

// A message that comes back unsettled counts one crash, and is set aside
// on the suspect queue with its count, without running: on a classic
// queue when it is redelivered, on a quorum queue when the broker counted
// it (a release, which RabbitMQ 4.3 does not count, is no crash). A
// suspect runs (alone: see TestASuspectRunsAlone); a suspect that comes
// back counts one more, and at the crash limit it is parked without
// running again.
func TestACrashCountsOnlyWhereTheMessageRanAlone(t *testing.T) {
	policy := runtime.Policy{MaxAttempts: 3, DeadLetter: "jobs.dead"}
	classic := func(p *probe) *runtime.Subscription {
		return &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{p.handler("Job", policy)}}
	}
	quorum := func(limit int) func(p *probe) *runtime.Subscription {
		return func(p *probe) *runtime.Subscription {
			s := classic(p)
			s.QueueType, s.DeliveryLimit = runtime.QuorumQueue, limit
			return s
		}
	}
	noDeadLetter := func(p *probe) *runtime.Subscription {
		return &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{p.handler("Job", runtime.Policy{MaxAttempts: 3})}}
	}
	auto := func(p *probe) *runtime.Subscription {
		return &runtime.Subscription{Name: "jobs", AutoAck: true, Handlers: []runtime.Handler{p.handler("Job", runtime.Policy{})}}
	}
	// back is the attempt-th delivery of job 7, redelivered or not, with a
	// quorum queue's count returned, from the suspect queue (with the
	// count crashes) or not.
	back := func(attempt int, redelivered bool, returned int, suspect bool, crashes string) *adapter.Delivery {
		d := delivery(attempt)
		d.Redelivered, d.Returned, d.Suspect = redelivered, returned, suspect
		d.Headers["x-death"] = "(the broker's)"
		d.Headers["tenant"] = "acme"
		if crashes != "" {
			d.Headers[adapter.HeaderCrashes] = crashes
		}
		return d
	}
	isolated := func(n, attempt int) adapter.Verdict {
		s := strconv.Itoa(n) + " times"
		if n == 1 {
			s = "once"
		}
		return adapter.Verdict{Kind: adapter.VerdictIsolate, Queue: "jobs.suspect", Attempt: attempt, MaxAttempts: 3, MessageType: "Job",
			Reason: "came back unsettled " + s + " (its worker crashed or lost its connection while holding it, or could not send its copy), of 3 allowed: it is handled alone from jobs.suspect"}
	}
	handled := func(attempt int) adapter.Verdict {
		return adapter.Verdict{Kind: adapter.VerdictAck, Attempt: attempt, MaxAttempts: 3, MessageType: "Job"}
	}
	parked := func(n, attempt int) adapter.Verdict {
		return adapter.Verdict{Kind: adapter.VerdictPark, Queue: "jobs.dead", Reason: crashReason(n), Attempt: attempt, MaxAttempts: 3, MessageType: "Job"}
	}
	for _, tc := range []struct {
		name    string
		sub     func(*probe) *runtime.Subscription
		kind    runtime.BrokerKind
		d       *adapter.Delivery
		want    adapter.Verdict
		did     string
		crashes string // the suspect copy's count
	}{
		{"a first delivery runs", classic, runtime.RabbitMQ, back(1, false, 0, false, ""), handled(1), "ack", ""},
		{"a classic queue's redelivery is set aside", classic, runtime.RabbitMQ, back(1, true, 0, false, ""), isolated(1, 1), "send jobs.suspect, ack", "1"},
		{"with its attempt", classic, runtime.RabbitMQ, back(2, true, 0, false, ""), isolated(1, 2), "send jobs.suspect, ack", "1"},
		{"a crash count on the subscription's queue is not the runtime's", classic, runtime.RabbitMQ, back(1, false, 0, false, "2"), handled(1), "ack", ""},
		{"a quorum queue's release is no crash", quorum(0), runtime.RabbitMQ, back(1, true, 0, false, ""), handled(1), "ack", ""},
		{"a quorum queue's counted return is set aside", quorum(0), runtime.RabbitMQ, back(1, true, 1, false, ""), isolated(1, 1), "send jobs.suspect, ack", "1"},
		{"counted once, however often it came back unset aside", quorum(0), runtime.RabbitMQ, back(2, true, 3, false, ""), isolated(1, 2), "send jobs.suspect, ack", "1"},
		{"an explicit delivery_limit", quorum(5), runtime.RabbitMQ, back(1, true, 4, false, ""),
			adapter.Verdict{Kind: adapter.VerdictIsolate, Queue: "jobs.suspect", Attempt: 1, MaxAttempts: 3, MessageType: "Job",
				Reason: "came back unsettled once (its worker crashed or lost its connection while holding it, or could not send its copy), of 5 allowed: it is handled alone from jobs.suspect"},
			"send jobs.suspect, ack", "1"},
		{"a suspect runs", classic, runtime.RabbitMQ, back(1, false, 0, true, "1"), handled(1), "ack", ""},
		{"with any count below the limit", classic, runtime.RabbitMQ, back(1, false, 0, true, "2"), handled(1), "ack", ""},
		{"a suspect that comes back counts one more", classic, runtime.RabbitMQ, back(1, true, 0, true, "1"), isolated(2, 1), "send jobs.suspect, ack", "2"},
		{"whatever a quorum queue counts", quorum(0), runtime.RabbitMQ, back(1, true, 7, true, "1"), isolated(2, 1), "send jobs.suspect, ack", "2"},
		{"at the limit it is parked", classic, runtime.RabbitMQ, back(1, true, 0, true, "2"), parked(3, 1), "send jobs.dead, ack", ""},
		{"on a quorum queue too", quorum(0), runtime.RabbitMQ, back(2, true, 1, true, "2"), parked(3, 2), "send jobs.dead, ack", ""},
		{"at an explicit delivery_limit", quorum(5), runtime.RabbitMQ, back(1, true, 0, true, "4"),
			adapter.Verdict{Kind: adapter.VerdictPark, Queue: "jobs.dead", Reason: crashReason(5), Attempt: 1, MaxAttempts: 3, MessageType: "Job"}, "send jobs.dead, ack", ""},
		{"an unreadable count counts from 0", classic, runtime.RabbitMQ, back(1, true, 0, true, "many"), isolated(1, 1), "send jobs.suspect, ack", "1"},
		{"without a dead-letter queue it is dropped", noDeadLetter, runtime.RabbitMQ, back(1, true, 0, true, "2"),
			adapter.Verdict{Kind: adapter.VerdictDrop, Attempt: 1, MaxAttempts: 3, MessageType: "Job",
				Reason: "crashed the worker (or lost its connection, or could not send its copy) 3 times while being handled: dropped (no dead_letter) without running it again"}, "ack", ""},
		{"ack=auto brings nothing back", auto, runtime.RabbitMQ, back(1, true, 0, false, ""),
			adapter.Verdict{Kind: adapter.VerdictAck, Attempt: 1, MaxAttempts: 1, MessageType: "Job"}, "", ""},
		{"nor does ZeroMQ", classic, runtime.ZeroMQ, back(1, true, 0, false, ""), handled(1), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &probe{}
			c, logs, tr := newRecorded(tc.sub(p), tc.kind)
			got, err := c.Handle(t.Context(), tc.d)
			if err != nil || got != tc.want {
				t.Errorf("verdict\n got %+v (%v)\nwant %+v", got, err, tc.want)
			}
			if ran, want := len(p.calls), tc.want.Kind == adapter.VerdictAck; (ran == 1) != want || ran > 1 {
				t.Errorf("the handler ran %d times; want it to run only when the message is handled", ran)
			}
			if tr.actions() != tc.did {
				t.Errorf("did %q, want %q", tr.actions(), tc.did)
			}
			switch tc.want.Kind {
			case adapter.VerdictIsolate:
				cp := tr.copies[0]
				want := map[string]string{adapter.HeaderCrashes: tc.crashes, "tenant": "acme"}
				if a := tc.want.Attempt; a > 1 {
					want[runtime.RetryCountHeader] = strconv.Itoa(a - 1)
				}
				if cp.kind != adapter.SuspectCopy || cp.id != "m-1" || !sameHeaders(cp.headers, want) {
					t.Errorf("the suspect copy is a %v, id %q, headers %v; want a suspect copy of m-1 with %v", cp.kind, cp.id, cp.headers, want)
				}
				lines := logs.find("message set aside to be handled alone")
				if len(lines) != 1 || lines[0].attrs["suspect_queue"] != "jobs.suspect" || lines[0].attrs["reason"] != tc.want.Reason || lines[0].attrs["message_id"] != "m-1" {
					t.Errorf("want one line saying the message is set aside, where and why; logged %v", logs.all())
				}
				if st := c.Metrics(); st.Released.Load() != 1 || st.Delivered.Load() != 1 {
					t.Errorf("counted %d released of %d delivered, want 1 of 1", st.Released.Load(), st.Delivered.Load())
				}
			case adapter.VerdictPark:
				cp := tr.copies[0]
				if cp.headers[runtime.HeaderDeadLetterReason] != tc.want.Reason || cp.headers[runtime.HeaderDeadLetterAttempts] != strconv.Itoa(tc.want.Attempt) ||
					cp.headers[adapter.HeaderCrashes] != "" {
					t.Errorf("dead letter headers %v", cp.headers)
				}
			}
			if tc.want.Kind == adapter.VerdictPark || tc.want.Kind == adapter.VerdictDrop {
				msg := map[adapter.VerdictKind]string{adapter.VerdictPark: "message parked", adapter.VerdictDrop: "message dropped"}[tc.want.Kind]
				lines := logs.find(msg)
				if len(lines) != 1 || lines[0].attrs["message_id"] != "m-1" || lines[0].attrs["reason"] != tc.want.Reason || lines[0].attrs["subscription"] != "jobs" {
					t.Errorf("want one line %q naming the subscription, the message and why; logged %v", msg, logs.all())
				}
			}
		})
	}
}

// sameHeaders reports whether got holds exactly want.
func sameHeaders(got, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			return false
		}
	}
	return true
}

// gateRecorder is a recorder that also counts FlushAcks calls.
type gateRecorder struct {
	recorder
}

func (r *gateRecorder) FlushAcks(context.Context) error { return r.record("flush") }

// A suspect runs with no other handler of its subscription running: it
// waits for those running to return, and those that would start wait for
// it. The acks held back are sent before it runs and once it is settled.
func TestASuspectRunsAlone(t *testing.T) {
	var (
		mu                sync.Mutex
		running, overlaps int
	)
	release := make(chan struct{})
	started := make(chan int, 10)
	h := runtime.Handle("Job", runtime.Policy{MaxAttempts: 3}, func(_ context.Context, j *job, md runtime.Metadata) runtime.Outcome {
		mu.Lock()
		running++
		if running > 1 && (j.ID == 99 || md.Headers[adapter.HeaderCrashes] != "") {
			overlaps++
		}
		mu.Unlock()
		started <- int(j.ID)
		if j.ID == 1 {
			<-release
		}
		mu.Lock()
		running--
		mu.Unlock()
		return runtime.Ack()
	})
	sub := &runtime.Subscription{Name: "jobs", Concurrency: 4, Handlers: []runtime.Handler{h}}
	tr := &gateRecorder{}
	c := adapter.NewConsumer(sub, runtime.Env{}, adapter.Rules{Kind: runtime.RabbitMQ}, tr)
	msg := func(id int, suspect bool) *adapter.Delivery {
		d := &adapter.Delivery{MessageID: strconv.Itoa(id), Type: "Job", Body: []byte(`{"id":` + strconv.Itoa(id) + `}`), Headers: map[string]string{}, Suspect: suspect}
		if suspect {
			d.Headers[adapter.HeaderCrashes] = "1"
		}
		return d
	}
	var wg sync.WaitGroup
	handle := func(d *adapter.Delivery) { wg.Go(func() { _, _ = c.Handle(context.Background(), d) }) }
	handle(msg(1, false)) // runs until released
	if id := <-started; id != 1 {
		t.Fatalf("handler %d started first", id)
	}
	handle(msg(50, true))
	// The suspect waits for job 1; a message that comes after it waits
	// for the suspect, whichever the goroutines run first.
	time.Sleep(50 * time.Millisecond)
	handle(msg(2, false))
	select {
	case id := <-started:
		t.Fatalf("handler %d started while job 1 ran and a suspect waited", id)
	case <-time.After(100 * time.Millisecond):
	}
	if got := tr.actions(); got != "" {
		t.Errorf("before the suspect could run: did %q, want nothing", got)
	}
	close(release)
	if id := <-started; id != 50 {
		t.Errorf("handler %d started after job 1, want the suspect", id)
	}
	if id := <-started; id != 2 {
		t.Errorf("handler %d started last, want job 2", id)
	}
	wg.Wait()
	if overlaps != 0 {
		t.Errorf("a suspect ran beside another handler %d times", overlaps)
	}
	// job 1's ack, the flush before the suspect, its ack, the flush after
	// it, then job 2's ack.
	if got, want := tr.actions(), "ack, flush, ack, flush, ack"; got != want {
		t.Errorf("did %q, want %q", got, want)
	}
}

// Every RabbitMQ subscription with ack=manual has a suspect queue, of
// either queue type; nothing comes back with ack=auto or on ZeroMQ.
func TestWhoHasASuspectQueue(t *testing.T) {
	for _, tc := range []struct {
		sub  *runtime.Subscription
		kind runtime.BrokerKind
		want string
	}{
		{&runtime.Subscription{Name: "jobs", QueueType: runtime.QuorumQueue, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}}, runtime.RabbitMQ, "jobs.suspect"},
		{&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}}, runtime.RabbitMQ, "jobs.suspect"},
		{&runtime.Subscription{Name: "jobs", AutoAck: true, Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}}, runtime.RabbitMQ, ""},
		{&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{})}}, runtime.ZeroMQ, ""},
	} {
		c, _ := newConsumer(tc.sub, tc.kind)
		if got := c.SuspectQueue(); got != tc.want {
			t.Errorf("%s %q queue, ack=auto %v: SuspectQueue() = %q, want %q", tc.kind, tc.sub.QueueType, tc.sub.AutoAck, got, tc.want)
		}
	}
}

// A suspect of a batch subscription joins no batch: its handler gets it
// alone, at once, however long the batch's wait.
func TestASuspectOfABatchSubscriptionIsABatchOfItsOwn(t *testing.T) {
	for _, q := range []runtime.QueueType{runtime.ClassicQueue, runtime.QuorumQueue} {
		var got [][]job
		h := runtime.HandleBatch[job]("Job", runtime.Policy{}, nil, func(_ context.Context, jobs []job) error {
			got = append(got, jobs)
			return nil
		})
		sub := &runtime.Subscription{Name: "jobs", QueueType: q, BatchSize: 10, BatchWait: time.Hour, Handlers: []runtime.Handler{h}}
		c, _, tr := newRecorded(sub, runtime.RabbitMQ)
		d := delivery(1)
		d.Suspect, d.Headers[adapter.HeaderCrashes] = true, "1"
		done := make(chan adapter.Verdict, 1)
		go func() { v, _ := c.Handle(context.Background(), d); done <- v }()
		select {
		case v := <-done:
			if v.Kind != adapter.VerdictAck || len(got) != 1 || len(got[0]) != 1 || got[0][0].ID != 7 || tr.actions() != "ack" {
				t.Errorf("%s: verdict %v, batches %v, did %q; want job 7 alone, acked", q, v.Kind, got, tr.actions())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the suspect waited for its batch to fill", q)
		}
	}
}

// A suspect that shutdown catches before it ran goes back to the suspect
// queue with its count, not to the broker, which would redeliver it and
// so count one more crash; one that came back counts that.
func TestASuspectReleasedAtShutdownKeepsItsCount(t *testing.T) {
	for _, tc := range []struct {
		redelivered bool
		want        string
	}{{false, "1"}, {true, "2"}} {
		c, _, tr := newRecorded(&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{MaxAttempts: 3})}}, runtime.RabbitMQ)
		d := delivery(1)
		d.Suspect, d.Redelivered, d.Headers[adapter.HeaderCrashes] = true, tc.redelivered, "1"
		v := c.Release(t.Context(), d)
		if v.Kind != adapter.VerdictIsolate || tr.actions() != "send jobs.suspect, ack" || tr.copies[0].headers[adapter.HeaderCrashes] != tc.want {
			t.Errorf("redelivered %v: verdict %v, did %q, copy %v; want the copy with %s crashes, then the ack", tc.redelivered, v.Kind, tr.actions(), tr.copies, tc.want)
		}
		if c.Metrics().Released.Load() != 1 {
			t.Errorf("released %d, want 1", c.Metrics().Released.Load())
		}
	}
	// Any other delivery is handed back.
	c, _, tr := newRecorded(&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{okHandler("Job", runtime.Policy{MaxAttempts: 3})}}, runtime.RabbitMQ)
	if v := c.Release(t.Context(), delivery(1)); v.Kind != adapter.VerdictRelease || tr.actions() != "release" {
		t.Errorf("verdict %v, did %q; want a release", v.Kind, tr.actions())
	}
}

// heldTransport is a recorder whose copies' outcomes wait until the test
// reports them.
type heldTransport struct {
	gateRecorder
	pending chan func(error)
}

func (h *heldTransport) Send(_ context.Context, _ *adapter.Delivery, cp *adapter.Copy, done func(error)) {
	_ = h.record("send " + cp.Queue)
	h.pending <- done
}

// A suspect runs once the copies being sent are settled: a crash while it
// runs must not bring back a message whose retry copy the broker already
// holds.
func TestASuspectWaitsForTheCopiesBeingSent(t *testing.T) {
	started := make(chan uint64, 2)
	h := runtime.Handle("Job", runtime.Policy{MaxAttempts: 3}, func(_ context.Context, j *job, _ runtime.Metadata) runtime.Outcome {
		started <- j.ID
		if j.ID == 1 {
			return runtime.Retry().Because(errBoom)
		}
		return runtime.Ack()
	})
	sub := &runtime.Subscription{Name: "jobs", Concurrency: 2, RetryDelays: []time.Duration{time.Second}, Handlers: []runtime.Handler{h}}
	tr := &heldTransport{pending: make(chan func(error), 1)}
	c := adapter.NewConsumer(sub, runtime.Env{}, adapter.Rules{Kind: runtime.RabbitMQ}, tr)
	first := &adapter.Delivery{MessageID: "1", Type: "Job", Body: []byte(`{"id":1}`), Headers: map[string]string{}}
	if v, _ := c.Handle(t.Context(), first); v.Kind != adapter.VerdictRetry || <-started != 1 {
		t.Fatalf("job 1: %v", v.Kind)
	}
	suspect := &adapter.Delivery{MessageID: "2", Type: "Job", Body: []byte(`{"id":2}`), Headers: map[string]string{adapter.HeaderCrashes: "1"}, Suspect: true}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = c.Handle(context.Background(), suspect)
	}()
	select {
	case id := <-started:
		t.Fatalf("job %d ran while job 1's retry copy was being sent", id)
	case <-time.After(100 * time.Millisecond):
	}
	(<-tr.pending)(nil)
	if id := <-started; id != 2 {
		t.Fatalf("job %d ran, want the suspect", id)
	}
	<-done
	if got, want := tr.actions(), "send jobs.retry, ack, flush, ack, flush"; got != want {
		t.Errorf("did %q, want %q", got, want)
	}
}

// A message that came back is set aside while a suspect runs: it runs no
// handler, and held back it would be counted with the suspect's crash.
func TestAMessageThatCameBackIsSetAsideWhileASuspectRuns(t *testing.T) {
	release := make(chan struct{})
	running := make(chan struct{})
	h := runtime.Handle("Job", runtime.Policy{MaxAttempts: 3}, func(_ context.Context, j *job, _ runtime.Metadata) runtime.Outcome {
		if j.ID == 1 {
			close(running)
			<-release
		}
		return runtime.Ack()
	})
	for _, q := range []runtime.QueueType{runtime.ClassicQueue, runtime.QuorumQueue} {
		release, running = make(chan struct{}), make(chan struct{})
		c, _, tr := newRecorded(&runtime.Subscription{Name: "jobs", QueueType: q, Handlers: []runtime.Handler{h}}, runtime.RabbitMQ)
		suspect := &adapter.Delivery{MessageID: "1", Type: "Job", Body: []byte(`{"id":1}`), Headers: map[string]string{adapter.HeaderCrashes: "1"}, Suspect: true}
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = c.Handle(context.Background(), suspect)
		}()
		<-running
		back := &adapter.Delivery{MessageID: "2", Type: "Job", Body: []byte(`{"id":2}`), Headers: map[string]string{}, Redelivered: true, Returned: 1}
		set := make(chan adapter.Verdict, 1)
		go func() { v, _ := c.Handle(context.Background(), back); set <- v }()
		select {
		case v := <-set:
			if v.Kind != adapter.VerdictIsolate {
				t.Errorf("%s: verdict %v, want isolate", q, v.Kind)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the message that came back waited for the suspect", q)
		}
		close(release)
		<-done
		if got, want := tr.actions(), "send jobs.suspect, ack, ack"; got != want {
			t.Errorf("%s: did %q, want %q", q, got, want)
		}
	}
}
