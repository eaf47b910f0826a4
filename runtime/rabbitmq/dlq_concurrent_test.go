package rabbitmq_test

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime/deadletter"
)

// Listings while a replay runs lose nothing: every letter ends either
// replayed or still parked, each once. (Without the basic.get that makes
// the channel pass its last acks on before it closes, a quorum queue
// requeued some replayed letters: parked and replayed both.)
func TestListingsDuringAReplayLoseNothing(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"classic", "quorum"} {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t)
			dl := e.name("parked-" + kind)
			target := e.name("target-" + kind)
			args := amqp.Table{}
			if kind == "quorum" {
				args = e.quorumArgs()
			}
			e.declare(dl, args)
			e.declare(target, nil)
			var msgs []amqp.Publishing
			var want []string
			for i := range 300 {
				id := fmt.Sprintf("m-%03d", i)
				want = append(want, id)
				msgs = append(msgs, parked(id, i))
			}
			e.publish(dl, msgs...)
			var wg sync.WaitGroup
			var rep deadletter.Report
			var replayErr error
			wg.Go(func() {
				rep, replayErr = e.queue(dl).Replay(e.ctx, deadletter.Selection{Limit: 150}, deadletter.ReplayOptions{To: deadletter.Target{Queue: target}, Rate: 1000})
			})
			scanErrs := make([]error, 2)
			for i := range 2 {
				wg.Go(func() {
					for range 5 {
						if scanErrs[i] = e.queue(dl).Scan(e.ctx, func(*deadletter.Letter) error { return nil }); scanErrs[i] != nil {
							return
						}
					}
				})
			}
			wg.Wait()
			if replayErr != nil {
				t.Fatalf("Replay: %v", replayErr)
			}
			for _, err := range scanErrs {
				if err != nil {
					t.Fatalf("Scan: %v", err)
				}
			}
			replayed := ids(e.drain(target))
			left := ids(e.drain(dl))
			got := append(slices.Clone(replayed), left...)
			sort.Strings(got)
			if !slices.Equal(got, want) {
				t.Fatalf("after a replay of %d (%+v) among listings, replayed and parked letters are %d, want each of the 300 once", len(replayed), rep, len(got))
			}
			if rep.Done != len(replayed) || rep.Done == 0 {
				t.Fatalf("Replay reports %d replayed, the target got %d", rep.Done, len(replayed))
			}
		})
	}
}

// Purging or replaying the first letter read (the one basic.get took) or
// the last leaves the rest as they were, in order: the hand-back nacks
// around the removed tags.
func TestRemovingTheFirstOrLastLetterReadHandsTheRestBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dl := e.name("last")
	target := e.name("last-target")
	e.declare(dl, nil)
	e.declare(target, nil)
	e.publish(dl, parked("m-0", 0), parked("m-1", 1), parked("m-2", 2), parked("m-3", 3), parked("m-4", 4))
	rep, err := e.queue(dl).Purge(e.ctx, deadletter.Selection{IDs: []string{"m-0"}}, false)
	if err != nil || rep.Done != 1 {
		t.Fatalf("Purge of the first letter: %+v, %v", rep, err)
	}
	rep, err = e.queue(dl).Purge(e.ctx, deadletter.Selection{IDs: []string{"m-4"}}, false)
	if err != nil || rep.Done != 1 {
		t.Fatalf("Purge of the last letter: %+v, %v", rep, err)
	}
	rep, err = e.queue(dl).Replay(e.ctx, deadletter.Selection{IDs: []string{"m-3"}}, deadletter.ReplayOptions{To: deadletter.Target{Queue: target}})
	if err != nil || rep.Done != 1 {
		t.Fatalf("Replay of the last letter: %+v, %v", rep, err)
	}
	if got := ids(e.drain(dl)); !slices.Equal(got, []string{"m-1", "m-2"}) {
		t.Fatalf("the queue holds %v, want m-1 and m-2 in order", got)
	}
	if got := ids(e.drain(target)); !slices.Equal(got, []string{"m-3"}) {
		t.Fatalf("the target holds %v, want m-3", got)
	}
}
