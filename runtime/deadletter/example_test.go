package deadletter_test

import (
	"context"
	"fmt"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/deadletter"
)

// An operator finds out why messages failed: one row per group of letters
// with the same type and cause. A Store's Groups does this over every
// letter it holds (rabbitmq.DialDeadLetterQueue opens a RabbitMQ
// dead-letter queue, zeromq.OpenDeadLetterDir a keeper's directory).
func Example() {
	parked := func(id, reason string) *deadletter.Letter {
		return deadletter.NewLetter([]byte(`{}`), map[string]any{
			runtime.HeaderDeadLetterReason: reason,
			runtime.HeaderDeadLetterSource: "orders",
			runtime.HeaderDeadLetterTime:   "2026-12-01T10:00:00Z",
		}, deadletter.Properties{MessageID: id, Type: "OrderPlaced"})
	}
	var g deadletter.Grouper
	for _, l := range []*deadletter.Letter{parked("m-1", "order 1: card declined"), parked("m-2", "order 2: card declined"), parked("m-3", "no stock")} {
		g.Add(l)
	}
	for _, gr := range g.Groups() {
		fmt.Printf("%d %s\n", gr.Count, gr.Reason)
	}
	// Output:
	// 2 order <n>: card declined
	// 1 no stock
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

// A test replays from a store in memory and reads what the replay sent,
// without a broker.
func ExampleMemoryStore() {
	ctx := context.Background()
	store := deadletter.NewMemoryStore("orders.parked", deadletter.NewLetter([]byte(`{"order":1}`), map[string]any{
		runtime.HeaderDeadLetterReason: "card declined",
		runtime.HeaderDeadLetterSource: "orders",
		"traceparent":                  "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
	}, deadletter.Properties{MessageID: "m-1", Type: "OrderPlaced"}))
	rep, err := store.Replay(ctx, deadletter.Selection{}, deadletter.ReplayOptions{})
	if err != nil {
		panic(err)
	}
	left, _ := store.Len(ctx)
	fmt.Printf("replayed %d, %d left\n", rep.Done, left)
	for _, s := range store.Sent() {
		fmt.Println(s.Key, s.Message.MessageID(), string(s.Message.Body), s.Message.Headers[deadletter.HeaderReplays], s.Message.Headers[runtime.HeaderDeadLetterReason] == nil)
	}
	// Output:
	// replayed 1, 0 left
	// orders m-1 {"order":1} 1 true
}
