package deadletter_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime/deadletter"
)

// A rate-limited replay of many letters holds few of them read ahead in
// the client: the letters neither ready in the dead-letter queue nor
// replayed (those the client holds) stay within the consumers' prefetch
// (512) and the confirms under way, not the queue's length.
func TestASlowReplayHoldsFewLettersReadAhead(t *testing.T) {
	e := newEnv(t)
	q, target := e.name("window"), e.name("window-target")
	e.declare(q, nil)
	e.declare(target, nil)
	const n = 2000
	msgs := make([]amqp.Publishing, n)
	for i := range msgs {
		msgs[i] = amqp.Publishing{MessageId: "m" + strconv.Itoa(i), Body: []byte(`{"n":` + strconv.Itoa(i) + `}`)}
	}
	e.publish(q, msgs...)
	var (
		wg   sync.WaitGroup
		rep  deadletter.Report
		err  error
		done = make(chan struct{})
	)
	wg.Go(func() {
		defer close(done)
		rep, err = e.queue(q).Replay(e.ctx, deadletter.Selection{}, deadletter.ReplayOptions{To: deadletter.Target{Queue: target}, Rate: 250})
	})
	most := 0
	for sampling := true; sampling; {
		select {
		case <-done:
			sampling = false
		case <-time.After(100 * time.Millisecond):
			held := n - e.ready(q) - e.ready(target)
			most = max(most, held)
		}
	}
	wg.Wait()
	if err != nil || rep.Done != n {
		t.Fatalf("Replay = %+v, %v", rep, err)
	}
	if most > 512+100 {
		t.Fatalf("the replay held up to %d of %d letters read ahead", most, n)
	}
	if got, left := e.ready(target), e.ready(q); got != n || left != 0 {
		t.Fatalf("%d letters replayed, %d left", got, left)
	}
	t.Logf("at most %d letters held", most)
}
