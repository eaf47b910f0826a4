package rabbitmq_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

// A listing during a replay waits its turn, and, the replay going on,
// gives up with deadletter.ErrBusy having read nothing (a reading beside
// the replay's would see the letters out of their order); Holders says
// another reader holds letters, and once the replay ended, says none does,
// and a listing sees every letter left.
func TestHoldersSaysAReplayUnderWayHoldsLetters(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"classic", "quorum"} {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t)
			dl, target := e.name("held-"+kind), e.name("held-target-"+kind)
			args := amqp.Table{}
			if kind == "quorum" {
				args = e.quorumArgs()
			}
			e.declare(dl, args)
			e.declare(target, nil)
			const n = 300
			msgs := make([]amqp.Publishing, n)
			for i := range msgs {
				msgs[i] = parked(fmt.Sprintf("m-%03d", i), i)
			}
			e.publish(dl, msgs...)
			replayer, err := rabbitmq.DialDeadLetterQueue(opCtx(t), e.url, dl)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = replayer.Close() }()
			ctx, stop := context.WithCancel(opCtx(t))
			done := make(chan error, 1)
			go func() {
				_, err := replayer.Replay(ctx, deadletter.Selection{}, deadletter.ReplayOptions{To: deadletter.Target{Queue: target}, Rate: 5})
				done <- err
			}()
			testkit.Eventually(t, "the replay under way", func() bool { return e.ready(target) >= 1 })

			lister := e.queue(dl)
			listed := 0
			if err := lister.Scan(opCtx(t), func(*deadletter.Letter) error { listed++; return nil }); !errors.Is(err, deadletter.ErrBusy) || listed != 0 {
				t.Fatalf("a listing during the replay read %d letters and ended with %v; want none read, and deadletter.ErrBusy", listed, err)
			}
			start := time.Now()
			holders, err := lister.Holders(opCtx(t))
			t.Logf("during the replay: %d letters listed, %d holders (Holders took %v)", listed, holders, time.Since(start).Round(time.Millisecond))
			if err != nil || holders < 1 {
				t.Fatalf("Holders during a replay = %d, %v; want the replay counted", holders, err)
			}

			stop()
			<-done
			testkit.Eventually(t, "no holders once the replay stopped", func() bool {
				h, err := lister.Holders(opCtx(t))
				return err == nil && h == 0
			})
			listed = 0
			if err := lister.Scan(opCtx(t), func(*deadletter.Letter) error { listed++; return nil }); err != nil {
				t.Fatal(err)
			}
			if replayed := e.ready(target); listed+replayed < n {
				t.Fatalf("after the replay stopped, %d letters listed and %d replayed, want all %d", listed, replayed, n)
			}
		})
	}
}

// Right after a listing, Holders does not count the listing's own readers,
// which a quorum queue counts a moment after they handed their letters
// back (without waiting for them to go, Holders counted them after each of
// 20 listings on RabbitMQ 3.10, 13 of 20 on 4.3).
func TestHoldersAfterAListingCountsNone(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"classic", "quorum"} {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t)
			q := e.name("holders-" + kind)
			args := amqp.Table{}
			if kind == "quorum" {
				args = e.quorumArgs()
			}
			e.declare(q, args)
			msgs := make([]amqp.Publishing, 2000)
			for i := range msgs {
				msgs[i] = parked(fmt.Sprintf("m-%04d", i), i)
			}
			e.publish(q, msgs...)
			dq := e.queue(q)
			var most time.Duration
			for round := range 10 {
				if err := dq.Scan(opCtx(t), func(*deadletter.Letter) error { return nil }); err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				holders, err := dq.Holders(opCtx(t))
				most = max(most, time.Since(start))
				if err != nil || holders != 0 {
					t.Fatalf("round %d: Holders right after a listing = %d, %v; want 0", round, holders, err)
				}
			}
			t.Logf("Holders took at most %v after a listing", most.Round(time.Millisecond))
		})
	}
}
