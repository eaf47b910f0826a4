package brokertest

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

// rabbitCases are the cases of what only RabbitMQ does: hand back the
// messages a worker held when it died.
var rabbitCases = []testCase{
	{"MessagesThatCameBackAfterACrashRunAlone", messagesThatCameBackRunAlone},
	{"QuorumQueueRetriesThroughItsOwnDelayOrAWaitQueue", quorumQueueRetries},
}

// aloneCalls records the calls of a handler of Jobs, and the calls of
// jobs that came back that ran while another call ran.
type aloneCalls struct {
	handlerCalls[Job]
	mu      sync.Mutex
	running int
	beside  []uint64
}

// handler acknowledges every Job after a short pause, so that calls that
// may run together do; back reports the jobs that came back.
func (a *aloneCalls) handler(f *fixture, back func(*Job) bool) runtime.Handler {
	return runtime.Handle("Job", f.policy(3, ""), func(ctx context.Context, j *Job, md runtime.Metadata) runtime.Outcome {
		a.add(ctx, j, md)
		a.mu.Lock()
		a.running++
		if a.running > 1 && back(j) {
			a.beside = append(a.beside, j.ID)
		}
		a.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
		a.mu.Lock()
		if a.running > 1 && back(j) {
			a.beside = append(a.beside, j.ID)
		}
		a.running--
		a.mu.Unlock()
		return runtime.Ack()
	})
}

// Messages that came back after their worker died (Transport.Redeliver)
// each run alone, never beside another handler call, however many calls
// the subscription may make at once: one of them may be what killed the
// worker, and a crash while it runs must count against it alone. A
// message that came back is set aside on the subscription's suspect queue
// first, with its count of crashes (adapter.HeaderCrashes "1"), and runs
// from there; the set-aside counts as Released. The other messages are
// handled as ever.
func messagesThatCameBackRunAlone(t testing.TB, tr Transport) {
	q := uniqueName(t)
	f := newFixture(t, tr, q)
	const back, fresh = 3, 8
	msgs := make([]runtime.Message, back)
	for i := range msgs {
		msgs[i] = runtime.Message{ID: "back-" + strconv.Itoa(i+1), Type: "Job", ContentType: "application/json", Body: fmt.Appendf(nil, `{"id":%d}`, i+1)}
	}
	tr.Redeliver(t, f.inst, q, msgs)
	var got aloneCalls
	s := f.subscription(q, got.handler(f, func(j *Job) bool { return j.ID <= back }))
	s.Concurrency = 4
	f.start(s)
	for id := back + 1; id <= back+fresh; id++ {
		f.publish(q, "Job", Job{ID: uint64(id)}, runtime.WithMessageID("job-"+strconv.Itoa(id)))
	}
	f.eventually("every message to be handled", func() bool { return f.stats(q).Acked >= back+fresh })
	f.stop()

	var ids []uint64
	for _, m := range got.messages() {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) != back+fresh {
		t.Errorf("handled jobs %v, want 1 to %d", ids, back+fresh)
	}
	got.mu.Lock()
	beside := slices.Clone(got.beside)
	got.mu.Unlock()
	if len(beside) > 0 {
		t.Errorf("jobs that came back ran beside another handler call: %v; each must run alone", beside)
	}
	for _, md := range got.metadata() {
		if !strings.HasPrefix(md.MessageID, "back-") {
			continue
		}
		if c := md.Headers[adapter.HeaderCrashes]; c != "1" {
			t.Errorf("%s ran with %s %q, want \"1\": set aside with one crash counted", md.MessageID, adapter.HeaderCrashes, c)
		}
	}
	if st := f.stats(q); st.Released != back || st.Acked != back+fresh || st.Parked != 0 {
		t.Errorf("stats %+v, want %d released (set aside), %d acked, none parked", st, back, back+fresh)
	}
	requireLog(t, f, slog.LevelInfo, "message set aside to be handled alone", q, "back-1", "came back unsettled once")
}
