package rabbitmq_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/deadletter"
)

// parked is a letter as the runtime parks one.
func parked(id string, order int) amqp.Publishing {
	return amqp.Publishing{
		MessageId: id, Type: "Card", ContentType: "application/json", DeliveryMode: amqp.Persistent,
		Body: fmt.Appendf(nil, `{"order":%d}`, order),
		Headers: amqp.Table{
			runtime.HeaderDeadLetterReason:   fmt.Sprintf("order %d: card declined", order),
			runtime.HeaderDeadLetterSource:   "cards",
			runtime.HeaderDeadLetterAttempts: "3",
			runtime.HeaderDeadLetterPoison:   "false",
			runtime.HeaderDeadLetterTime:     "2026-01-02T03:04:05.000Z",
			runtime.RetryCountHeader:         "2",
		},
	}
}

// Listing a dead-letter queue, classic or quorum, 30 times leaves every
// letter in it, in its order, not counted against it: on RabbitMQ 3.x,
// whose quorum queues requeue at the back, because every listing reads
// the whole queue before it hands the letters back.
func TestScanLeavesTheQueueAsItWas(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"classic", "quorum"} {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t)
			q := e.name("scan-" + kind)
			args := amqp.Table{}
			if kind == "quorum" {
				args = e.quorumArgs()
			}
			e.declare(q, args)
			var want []string
			var msgs []amqp.Publishing
			for i := range 25 {
				id := fmt.Sprintf("m-%02d", i)
				want = append(want, id)
				msgs = append(msgs, parked(id, i))
			}
			e.publish(q, msgs...)
			dq := e.queue(q)
			for round := range 30 {
				var got []string
				if err := dq.Scan(e.ctx, func(l *deadletter.Letter) error {
					got = append(got, l.MessageID())
					return nil
				}); err != nil {
					t.Fatalf("scan %d: %v", round, err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("scan %d read %v, want %v", round, got, want)
				}
			}
			// A scan stopped early by its callback leaves the queue as it was too.
			stop := fmt.Errorf("enough")
			if err := dq.Scan(e.ctx, func(*deadletter.Letter) error { return stop }); err != stop {
				t.Fatalf("a scan stopped by its callback returned %v, want its error", err)
			}
			left := e.drain(q)
			if got := ids(left); !slices.Equal(got, want) {
				t.Fatalf("after 31 scans the queue holds %v, want %v", got, want)
			}
			for _, d := range left {
				if d.Headers["x-streamgen-reason"] == nil {
					t.Fatalf("letter %s lost its explanation", d.MessageId)
				}
				// RabbitMQ 4.x counts a closed channel or a basic.reject
				// toward a quorum queue's delivery limit, not a basic.nack.
				if c, ok := d.Headers["x-delivery-count"]; ok && e.major() >= 4 && fmt.Sprint(c) != "0" {
					t.Fatalf("letter %s has x-delivery-count %v after the listings: they counted against it", d.MessageId, c)
				}
			}
		})
	}
}

// Two listings at once each see letters only the other does not hold, and
// together the queue loses nothing.
func TestTwoScansAtOnceLoseNothing(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"classic", "quorum"} {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t)
			q := e.name("two-" + kind)
			args := amqp.Table{}
			if kind == "quorum" {
				args = e.quorumArgs()
			}
			e.declare(q, args)
			var msgs []amqp.Publishing
			for i := range 200 {
				msgs = append(msgs, parked(fmt.Sprintf("m-%03d", i), i))
			}
			e.publish(q, msgs...)
			var wg sync.WaitGroup
			counts := make([]int, 2)
			errs := make([]error, 2)
			for i := range 2 {
				wg.Go(func() {
					for range 5 {
						n := 0
						errs[i] = e.queue(q).Scan(e.ctx, func(*deadletter.Letter) error { n++; return nil })
						if errs[i] != nil {
							return
						}
						counts[i] = max(counts[i], n)
					}
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("scan %d: %v", i, err)
				}
			}
			testkit.Eventually(t, "all letters back in the queue", func() bool { return e.ready(q) == 200 })
			got := ids(e.drain(q))
			slices.Sort(got)
			if len(slices.Compact(got)) != 200 {
				t.Fatalf("after two concurrent listings the queue holds %d distinct letters, want 200", len(got))
			}
			if counts[0] == 0 && counts[1] == 0 {
				t.Fatal("neither listing read a letter")
			}
		})
	}
}

// A scan of a queue that does not exist says so and how to fix it: the
// name to check is the one a subscription's dead_letter= key gives (it
// named "the DeadLetter of its policy", a field no annotation shows).
func TestScanOfAMissingQueueNamesIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.name("missing")
	err := e.queue(q).Scan(e.ctx, func(*deadletter.Letter) error { return nil })
	if err == nil || !containsAll(err.Error(), q, "does not exist", "check the name", "dead_letter= key") {
		t.Fatalf("Scan of a missing queue: %v", err)
	}
}
