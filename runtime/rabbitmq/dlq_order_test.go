package rabbitmq_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

// Listing a dead-letter queue of several thousand letters 30 times in a
// row keeps their exact order, classic or quorum: each listing reads
// them with several consumers (the first basic.get, then consumers of a
// prefetch of 512, 1,024, 2,048 and 4,096) and hands them back. The
// broker's bytes pause now and then (400 ms every 1.5 MB, about once or
// twice a listing, somewhere else each time), as on a busy machine, where
// RabbitMQ 4.3 was seen to move the 3,586th letter to the 1,538th (see
// TestAListingWhoseDeliveriesPauseKeepsTheOrder).
func TestManyListingsOfManyLettersKeepTheirOrder(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"classic", "quorum"} {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t)
			q := e.name("order-" + kind)
			args := amqp.Table{}
			if kind == "quorum" {
				args = e.quorumArgs()
			}
			e.declare(q, args)
			const n, rounds = 5000, 30
			want := make([]string, n)
			msgs := make([]amqp.Publishing, n)
			for i := range msgs {
				want[i] = fmt.Sprintf("m-%04d", i)
				msgs[i] = parked(want[i], i)
			}
			e.publish(q, msgs...)
			p := startPausingProxy(t, e.url, 1500<<10, 1500<<10, 400*time.Millisecond)
			conn, err := amqp.Dial(p.url)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = conn.Close() }()
			dq := rabbitmq.NewDeadLetterQueue(conn, q)
			for round := range rounds {
				got := make([]string, 0, n)
				if err := dq.Scan(opCtx(t), func(l *deadletter.Letter) error {
					got = append(got, l.MessageID())
					return nil
				}); err != nil {
					t.Fatalf("listing %d: %v", round+1, err)
				}
				if i := firstDifference(got, want); i >= 0 {
					t.Fatalf("listing %d of %d read %d letters, the %s out of order", round+1, rounds, len(got), misplaced(got, want, i))
				}
			}
			t.Logf("%d listings of %d letters, the broker's bytes paused %d times", rounds, n, p.pauses.Load())
			testkit.Eventually(t, "every letter back", func() bool { return e.ready(q) == n })
			if got := ids(e.drain(q)); !slices.Equal(got, want) {
				t.Fatalf("after %d listings the queue holds %d letters, the %s out of order", rounds, len(got), misplaced(got, want, firstDifference(got, want)))
			}
		})
	}
}

// firstDifference returns the first index where got and want differ, or
// -1 when they are equal.
func firstDifference(got, want []string) int {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return i
		}
	}
	if len(got) != len(want) {
		return min(len(got), len(want))
	}
	return -1
}

// misplaced describes the difference at index i: which letter is there,
// and where it belongs.
func misplaced(got, want []string, i int) string {
	if i >= len(got) || i >= len(want) {
		return fmt.Sprintf("letters from the %d-th on missing or extra", i+1)
	}
	return fmt.Sprintf("%d-th is %s (the %d-th in order)", i+1, got[i], slices.Index(want, got[i])+1)
}
