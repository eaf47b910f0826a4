package rabbitmq

import (
	"context"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
)

// At shutdown the deliveries no handler took yet go back to the broker
// through the Consumer: they are requeued (a nack, see
// TestRequeuesCountTowardTheDeliveryLimitAndReleasesDoNotOn43), and
// counted and logged as every other delivery is, not handed back unseen.
func TestShutdownReleasesUnstartedDeliveriesThroughTheConsumer(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("release")
	started := make(chan struct{}, 3)
	unblock := make(chan struct{})
	s := sub(q, 0, runtime.Handle("Job", runtime.Policy{MaxAttempts: 1}, func(_ context.Context, _ *job, _ runtime.Metadata) runtime.Outcome {
		started <- struct{}{}
		<-unblock
		return runtime.Ack()
	}))
	s.Prefetch = 10 // one handler at a time, three deliveries in hand
	a := startApp(t, newTestBroker(), 20*time.Second, s)
	a.waitReady()
	for i := range 3 {
		publishJob(t, adm, q, "Job", job{ID: i})
	}
	select {
	case <-started:
	case <-time.After(patience):
		t.Fatal("the handler was not called")
	}
	testkit.Eventually(t, "the three deliveries to be in hand", func() bool { return adm.unacked(q) == 3 })
	a.cancel()
	testkit.Eventually(t, "the two unstarted deliveries to be handed back", func() bool { return a.stats(q).Released == 2 })
	close(unblock)
	if err := a.stop(); err != nil {
		t.Fatalf("the App stopped with an error: %v", err)
	}
	st := a.stats(q)
	if st.Delivered != 3 || st.Acked != 1 || st.Released != 2 || st.Failed != 0 {
		t.Errorf("stats %+v, want 3 delivered, 1 acked and 2 released", st)
	}
	if n := adm.ready(q); n != 2 {
		t.Errorf("%d messages ready in %s, want the 2 handed back", n, q)
	}
	if len(started) != 0 {
		t.Error("a handler ran after shutdown began")
	}
}
