package rabbitmq_test

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/deadletter"
)

// A rate-limited replay of many letters holds few of them read ahead in
// the client: the letters neither ready in the dead-letter queue nor
// replayed (those the client holds) stay within the consumers' prefetch
// (512) and the confirms under way, not the queue's length.
func TestASlowReplayHoldsFewLettersReadAhead(t *testing.T) {
	t.Parallel()
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

// A listing slower than the broker holds a bounded number of letters read
// ahead, however many the queue holds: one consumer's prefetch. Stalled at
// its 600th letter, a listing of 5,000 has been delivered the first, read
// by basic.get, then 512 (the first consumer's prefetch) and 1,024 (the
// second's, twice as many), and no more: amqp091-go would buffer all
// 5,000 without a prefetch limit.
func TestASlowListingHoldsABoundedNumberOfLettersReadAhead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.name("slow-scan")
	e.declare(q, nil)
	const n, stall, most = 5000, 600, 1 + 512 + 1024
	msgs := make([]amqp.Publishing, n)
	for i := range msgs {
		msgs[i] = parked(fmt.Sprintf("m-%04d", i), i)
	}
	e.publish(q, msgs...)
	read := 0
	err := e.queue(q).Scan(e.ctx, func(*deadletter.Letter) error {
		if read++; read != stall {
			return nil
		}
		testkit.Eventually(t, "the consumers' prefetch full", func() bool { return n-e.ready(q) >= most })
		// Nothing more comes while the listing is stalled.
		for range 5 {
			if delivered := n - e.ready(q); delivered > most {
				t.Fatalf("stalled at letter %d, the listing was delivered %d letters, want at most %d", stall, delivered, most)
			}
			time.Sleep(50 * time.Millisecond)
		}
		return nil
	})
	if err != nil || read != n {
		t.Fatalf("Scan read %d letters of %d: %v", read, n, err)
	}
	testkit.Eventually(t, "every letter back", func() bool { return e.ready(q) == n })
}

// A replay of a few letters among many, read by several consumers, replays
// them and leaves every other letter in the queue, in its order, classic
// or quorum: among them the letter basic.get read, the last letter of a
// consumer (its tag ends the consumer's nack), and the queue's last.
func TestAReplayOfFewAmongManyLeavesTheRestInOrder(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"classic", "quorum"} {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t)
			q, target := e.name("few-"+kind), e.name("few-target-"+kind)
			args := amqp.Table{}
			if kind == "quorum" {
				args = e.quorumArgs()
			}
			e.declare(q, args)
			e.declare(target, nil)
			const n = 3000
			picked := []int{0, 512, 1536, 2000, n - 1} // 512 and 1536 end the first two consumers
			var msgs []amqp.Publishing
			var pickedIDs, want []string
			for i := range n {
				id := fmt.Sprintf("m-%04d", i)
				msgs = append(msgs, parked(id, i))
				if slices.Contains(picked, i) {
					pickedIDs = append(pickedIDs, id)
				} else {
					want = append(want, id)
				}
			}
			e.publish(q, msgs...)
			rep, err := e.queue(q).Replay(e.ctx, deadletter.Selection{IDs: pickedIDs}, deadletter.ReplayOptions{To: deadletter.Target{Queue: target}})
			if err != nil || rep.Scanned != n || rep.Done != len(picked) || rep.Failed != 0 {
				t.Fatalf("Replay = %+v, %v", rep, err)
			}
			testkit.Eventually(t, "the letters left back in the queue", func() bool { return e.ready(q) == n-len(picked) })
			if got := ids(e.drain(q)); !slices.Equal(got, want) {
				t.Fatalf("the queue holds %d letters, want the %d not picked in their order", len(got), len(want))
			}
			if got := ids(e.drain(target)); !slices.Equal(got, pickedIDs) {
				t.Fatalf("the target holds %v, want %v", got, pickedIDs)
			}
		})
	}
}
