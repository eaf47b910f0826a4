package brokertest

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
)

// batchCases are the cases of batch subscriptions.
var batchCases = []testCase{
	{"BatchIsOneCallAndEveryMessageIsAcked", batchIsOneCall},
	{"BatchErrorRetriesEachMessageByItsOwnAttempt", batchErrorRetriesEachMessage},
	{"BatchFailuresFailOnlyTheMessagesNamed", batchFailuresFailOnlyThoseNamed},
	{"BatchPanicRetriesTheWholeBatch", batchPanicRetriesTheWholeBatch},
	{"PoisonNeverEntersABatch", poisonNeverEntersABatch},
	{"ShutdownHandlesTheBatchInHand", shutdownHandlesTheBatchInHand},
}

// batchCalls records the calls of a batch handler, and each message of
// them in a handlerCalls.
type batchCalls struct {
	handlerCalls[Job]
	cmu   sync.Mutex
	calls [][]uint64 // the job ids of each call
}

func (b *batchCalls) record(ctx context.Context, jobs []*Job, mds []runtime.Metadata) {
	ids := make([]uint64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
		b.add(ctx, j, mds[i])
	}
	b.cmu.Lock()
	b.calls = append(b.calls, ids)
	b.cmu.Unlock()
}

func (b *batchCalls) callIDs() [][]uint64 {
	b.cmu.Lock()
	defer b.cmu.Unlock()
	return slices.Clone(b.calls)
}

// partialWait is the batch wait of a case that lets a batch run before it
// is full: RetryDelay, which passes on the App's clock like every delay
// the runtime waits out, so on a fake clock only Instance.Pass lets it
// pass, and on a real broker it passes within a fraction of a second.
func (f *fixture) partialWait() time.Duration { return f.tr.RetryDelay }

// batchSubscription is f.subscription for a batch handler of Jobs.
func (f *fixture) batchSubscription(name string, size int, wait time.Duration, policy runtime.Policy, fn func(context.Context, []*Job, []runtime.Metadata) error) *runtime.Subscription {
	s := f.subscription(name, runtime.HandleBatch[Job]("Job", policy, nil, fn))
	s.BatchSize, s.BatchWait = size, wait
	return s
}

// attemptsByID returns the attempts each job was seen on, in order.
func attemptsByID(h *handlerCalls[Job]) map[uint64][]int {
	out := map[uint64][]int{}
	for i, md := range h.metadata() {
		id := h.messages()[i].ID
		out[id] = append(out[id], md.Attempt)
	}
	return out
}

// A full batch is one handler call with every message, each with its own
// Metadata; a nil error acknowledges them all. Middleware wraps the call
// once, and sees each message's Metadata; the counters count messages.
func batchIsOneCall(t testing.TB, tr Transport) {
	q := uniqueName(t)
	var mwCalls []int
	var mwMu sync.Mutex
	mw := func(ctx context.Context, msg any, md runtime.Metadata, next runtime.Next) runtime.Outcome {
		mwMu.Lock()
		mwCalls = append(mwCalls, len(md.Batch))
		mwMu.Unlock()
		if _, ok := msg.([]*Job); !ok {
			return runtime.OutcomeOf(runtime.DeadLetter(fmt.Errorf("middleware got a %T, want []*Job", msg)))
		}
		return next(ctx, msg, md)
	}
	f := newFixtureWith(t, tr, []runtime.Option{runtime.WithMiddleware(mw)}, q)
	var got batchCalls
	// The wait is longer than the case: only full batches run.
	f.start(f.batchSubscription(q, 4, time.Hour, f.policy(3, ""), func(ctx context.Context, jobs []*Job, mds []runtime.Metadata) error {
		got.record(ctx, jobs, mds)
		return nil
	}))
	for i := range 8 {
		f.publish(q, "Job", Job{ID: uint64(i + 1)}, runtime.WithMessageID(fmt.Sprintf("m-%d", i+1)))
	}
	f.waitFor("8 messages to be acked", func() bool { return f.stats(q).Acked >= 8 })
	f.stop()

	calls := got.callIDs()
	if len(calls) != 2 || len(calls[0]) != 4 || len(calls[1]) != 4 {
		t.Fatalf("the handler was called with %v, want two batches of 4", calls)
	}
	for i, md := range got.metadata() {
		if want := fmt.Sprintf("m-%d", got.messages()[i].ID); md.MessageID != want || md.Attempt != 1 || md.MaxAttempts != 3 || md.Subscription != q {
			t.Errorf("message %d has metadata %+v, want its own: id %s, attempt 1 of 3", i, md, want)
		}
	}
	if !slices.Equal(mwCalls, []int{4, 4}) {
		t.Errorf("middleware saw calls with %v messages' Metadata, want [4 4]", mwCalls)
	}
	if st := f.stats(q); st.Delivered != 8 || st.Acked != 8 {
		t.Errorf("counters %+v, want 8 delivered and 8 acked: they count messages, not calls", st)
	}
}

// A plain error applies to every message of the batch: each is retried on
// its own, with its own retry copy and count, and handled on attempt 2.
func batchErrorRetriesEachMessage(t testing.TB, tr Transport) {
	q := uniqueName(t)
	f := newFixture(t, tr, q)
	var got batchCalls
	f.start(f.batchSubscription(q, 3, f.partialWait(), f.policy(3, ""), func(ctx context.Context, jobs []*Job, mds []runtime.Metadata) error {
		got.record(ctx, jobs, mds)
		for _, md := range mds {
			if md.Attempt == 1 {
				return runtime.RetryAfter(tr.RetryDelay, errFailed)
			}
		}
		return nil
	}))
	for i := range 3 {
		f.publish(q, "Job", Job{ID: uint64(i + 1)}, runtime.WithMessageID(fmt.Sprintf("m-%d", i+1)))
	}
	f.eventually("the 3 messages to be acked", func() bool { return f.stats(q).Acked >= 3 })
	f.stop()

	for id, attempts := range attemptsByID(&got.handlerCalls) {
		if attempts[len(attempts)-1] < 2 {
			t.Errorf("job %d was seen on attempts %v: want it retried", id, attempts)
		}
	}
	for i, md := range got.metadata() {
		if n := md.Headers[tr.retryCountHeader()]; md.Attempt > 1 && n != fmt.Sprint(md.Attempt-1) {
			t.Errorf("message %d, attempt %d, carries retry count %q", i, md.Attempt, n)
		}
	}
	if st := f.stats(q); st.Acked != 3 || st.Retried < 3 || st.Delivered != st.Acked+st.Retried {
		t.Errorf("counters %+v, want 3 acked, and each failed delivery retried", st)
	}
}

// A BatchFailures fails the messages it names, each by its own error (a
// dead letter with its own reason, a retry), and acknowledges the rest.
func batchFailuresFailOnlyThoseNamed(t testing.TB, tr Transport) {
	q := uniqueName(t)
	dl := q + ".dead"
	f := newFixture(t, tr, q, dl)
	var got batchCalls
	var dead handlerCalls[Job]
	f.start(
		f.batchSubscription(q, 3, f.partialWait(), f.policy(3, dl), func(ctx context.Context, jobs []*Job, mds []runtime.Metadata) error {
			got.record(ctx, jobs, mds)
			var failed runtime.BatchFailures
			for i, j := range jobs {
				switch {
				case j.ID == 2:
					failed.Fail(i, runtime.DeadLetter(fmt.Errorf("job %d is a bad row", j.ID)))
				case j.ID == 3 && mds[i].Attempt == 1:
					failed.Fail(i, runtime.RetryAfter(tr.RetryDelay, errFailed))
				}
			}
			return failed.Err()
		}),
		f.reader(dl, &dead),
	)
	for i := range 3 {
		f.publish(q, "Job", Job{ID: uint64(i + 1)}, runtime.WithMessageID(fmt.Sprintf("m-%d", i+1)))
	}
	f.eventually("job 2 to be parked and jobs 1 and 3 acked", func() bool {
		return dead.len() >= 1 && f.stats(q).Acked >= 2
	})
	f.stop()

	want := map[uint64][]int{1: {1}, 2: {1}, 3: {1, 2}}
	if got := attemptsByID(&got.handlerCalls); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("attempts by job %v, want %v", got, want)
	}
	if mds := dead.metadata(); len(mds) != 1 || mds[0].MessageID != "m-2" ||
		!strings.Contains(mds[0].Headers[runtime.HeaderDeadLetterReason], "job 2 is a bad row") {
		t.Errorf("dead letters %v, want m-2 alone, with its own reason", mds)
	}
	if st := f.stats(q); st.Acked != 2 || st.Parked != 1 || st.Retried != 1 {
		t.Errorf("counters %+v, want 2 acked, 1 parked, 1 retried", st)
	}
}

// A panic fails the whole batch: every message is retried, and the
// worker goes on.
func batchPanicRetriesTheWholeBatch(t testing.TB, tr Transport) {
	q := uniqueName(t)
	f := newFixture(t, tr, q)
	var got batchCalls
	f.start(f.batchSubscription(q, 2, f.partialWait(), f.policy(2, ""), func(ctx context.Context, jobs []*Job, mds []runtime.Metadata) error {
		got.record(ctx, jobs, mds)
		for _, md := range mds {
			if md.Attempt == 1 {
				panic("brokertest: the batch handler panicked on purpose")
			}
		}
		return nil
	}))
	f.publish(q, "Job", Job{ID: 1}, runtime.WithMessageID("m-1"))
	f.publish(q, "Job", Job{ID: 2}, runtime.WithMessageID("m-2"))
	f.eventually("both messages to be acked", func() bool { return f.stats(q).Acked >= 2 })
	f.stop()

	for id, attempts := range attemptsByID(&got.handlerCalls) {
		if !slices.Equal(attempts, []int{1, 2}) {
			t.Errorf("job %d was seen on attempts %v, want [1 2]", id, attempts)
		}
	}
	if st := f.stats(q); st.Acked != 2 || st.Retried != 2 {
		t.Errorf("counters %+v, want 2 retried and 2 acked", st)
	}
	// The panic's error line names each message of its batch with its
	// attempt (one line per call: two when the messages came in calls of
	// their own).
	named := map[string]string{}
	var lines []string
	for _, r := range f.logs.Find(slog.LevelError, "handler panicked; treating it as a failure") {
		lines = append(lines, r.String())
		ids, attempts := strings.Fields(strings.Trim(r.Attr("message_ids"), "[]")), strings.Fields(strings.Trim(r.Attr("attempts"), "[]"))
		if r.Attr("subscription") != q || len(ids) != len(attempts) {
			continue
		}
		for i, id := range ids {
			named[id] = attempts[i]
		}
	}
	if want := map[string]string{"m-1": "1", "m-2": "1"}; !maps.Equal(named, want) {
		t.Errorf("the panic lines name messages and attempts %v, want %v: %q", named, want, lines)
	}
}

// Poison (an undecodable body, an unknown type, a body over the limit)
// never enters a batch: it is parked on its own, and the batch holds the
// good messages only.
func poisonNeverEntersABatch(t testing.TB, tr Transport) {
	q := uniqueName(t)
	dl := q + ".dead"
	f := newFixture(t, tr, q, dl)
	var got batchCalls
	var dead handlerCalls[map[string]any]
	sub := f.batchSubscription(q, 5, f.partialWait(), f.policy(1, dl), func(ctx context.Context, jobs []*Job, mds []runtime.Metadata) error {
		got.record(ctx, jobs, mds)
		return nil
	})
	sub.MaxPayloadBytes = 64
	read := func(ctx context.Context, m *map[string]any, md runtime.Metadata) runtime.Outcome {
		dead.add(ctx, m, md)
		return runtime.Ack()
	}
	f.start(sub, f.subscription(dl, runtime.Handle("Job", f.policy(0, ""), read), runtime.Handle("Other", f.policy(0, ""), read)))
	f.publish(q, "Job", Job{ID: 1}, runtime.WithMessageID("m-1"))
	f.publishRaw(q, runtime.Message{ID: "m-undecodable", Type: "Job", ContentType: "application/json", Body: []byte(`{"id":"one"}`)})
	f.publishRaw(q, runtime.Message{ID: "m-unknown", Type: "Other", ContentType: "application/json", Body: []byte(`{}`)})
	f.publishRaw(q, runtime.Message{ID: "m-large", Type: "Job", ContentType: "application/json", Body: []byte(`{"id":9,"note":"` + strings.Repeat("x", 100) + `"}`)})
	f.publish(q, "Job", Job{ID: 2}, runtime.WithMessageID("m-2"))
	f.eventually("3 poison messages parked and 2 acked", func() bool { return dead.len() >= 3 && f.stats(q).Acked >= 2 })
	f.stop()

	var ids []uint64
	for _, c := range got.callIDs() {
		ids = append(ids, c...)
	}
	if slices.Sort(ids); !slices.Equal(ids, []uint64{1, 2}) {
		t.Errorf("the batches held jobs %v, want 1 and 2 only", ids)
	}
	var parked []string
	for _, md := range dead.metadata() {
		parked = append(parked, md.MessageID)
		if md.Headers[runtime.HeaderDeadLetterPoison] != "true" {
			t.Errorf("%s was parked with poison=%q, want true", md.MessageID, md.Headers[runtime.HeaderDeadLetterPoison])
		}
	}
	if slices.Sort(parked); !slices.Equal(parked, []string{"m-large", "m-undecodable", "m-unknown"}) {
		t.Errorf("parked %v, want the three poison messages", parked)
	}
}

// A shutdown does not wait out a batch's wait: the batch in hand is
// handled at once and its messages settled, and the App stops cleanly.
func shutdownHandlesTheBatchInHand(t testing.TB, tr Transport) {
	q := uniqueName(t)
	f := newFixture(t, tr, q)
	var got batchCalls
	f.start(f.batchSubscription(q, 10, time.Hour, f.policy(1, ""), func(ctx context.Context, jobs []*Job, mds []runtime.Metadata) error {
		got.record(ctx, jobs, mds)
		return nil
	}))
	for i := range 3 {
		f.publish(q, "Job", Job{ID: uint64(i + 1)})
	}
	f.waitFor("3 messages to wait in a batch", func() bool { return f.stats(q).Delivered >= 3 })
	start := time.Now()
	f.stop()
	if took := time.Since(start); took > tr.Timeout {
		t.Errorf("the shutdown took %v", took)
	}
	// The three are handled once each, in one call when the three joined
	// the batch before the shutdown. A message is counted delivered
	// before it is decoded and joins the batch, and nothing tells when it
	// has joined: one that joins after the shutdown began is handled at
	// once, in a call of its own (on a loaded machine, each of the three
	// did). What the shutdown must not do is wait out the batch's hour,
	// or handle a message twice, or drop one.
	calls := got.callIDs()
	var handled []uint64
	for _, c := range calls {
		handled = append(handled, c...)
	}
	if slices.Sort(handled); !slices.Equal(handled, []uint64{1, 2, 3}) {
		t.Errorf("the handler was called with %v, want the 3 messages in hand, each once", calls)
	}
	if st := f.stats(q); st.Acked != 3 {
		t.Errorf("counters %+v, want 3 acked", st)
	}
}
