package deadletter_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/streamgen/streamgen/runtime/deadletter"
)

// An operator finds out why messages failed: one row per group of letters
// with the same type and cause.
func Example() {
	ctx := context.Background()
	q, err := deadletter.Dial("amqp://guest:guest@127.0.0.1:5672/", "orders.parked")
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()
	groups, err := q.Groups(ctx)
	if err != nil {
		log.Fatal(err)
	}
	_ = deadletter.WriteGroups(os.Stdout, groups)
}

// After the fix, the letters of one cause go back to their subscription,
// which handles each as a new message, from attempt 1. Each letter leaves
// the dead-letter queue once the broker confirmed its replay.
func ExampleQueue_Replay() {
	ctx := context.Background()
	q, err := deadletter.Dial("amqp://guest:guest@127.0.0.1:5672/", "orders.parked")
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()
	sel := deadletter.Selection{Reason: "card declined", After: time.Now().Add(-24 * time.Hour)}
	rep, err := q.Replay(ctx, sel, deadletter.ReplayOptions{Rate: 200})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("replayed %d of %d letters, %d left parked\n", rep.Done, rep.Selected, rep.Failed)
}

// Letters that differ only in an id share a group.
func ExampleNormalizeReason() {
	fmt.Println(deadletter.NormalizeReason("order 123: card declined"))
	fmt.Println(deadletter.NormalizeReason("order 456: card declined"))
	fmt.Println(deadletter.NormalizeReason("user 3f2504e0-4f89-11d3-9a0c-0305e82c3301 not found in shard 0x1f"))
	// Output:
	// order <n>: card declined
	// order <n>: card declined
	// user <uuid> not found in shard <hex>
}

// Selections pick letters for show, replay, purge and export.
func ExampleSelection() {
	l := &deadletter.Letter{Reason: "failed on attempt 5 of 5: order 9: card declined", Properties: deadletter.Properties{Type: "Order", MessageID: "m-9"}, Explained: true}
	fmt.Println(deadletter.Selection{Types: []string{"Order"}, Reason: "DECLINED"}.Matches(l))
	fmt.Println(deadletter.Selection{IDs: []string{"m-1", "m-2"}}.Matches(l))
	// Output:
	// true
	// false
}
