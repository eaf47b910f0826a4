package streamtest_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite" // SQLite in pure Go: the test needs no database server

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/outbox"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

type txOrder struct {
	OrderID string `json:"order_id"`
}

// The harness runs a handler that takes a *sql.Tx over SQLite, as a
// service's test would: each message id is handled once, a delivery of a
// message already handled is acknowledged without a call (a duplicate),
// and a failed attempt leaves nothing behind for the retry to trip on.
func TestHarnessRunsTransactionalHandlersOverSQLite(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "orders.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ob, err := outbox.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE orders (id TEXT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	calls := 0 // the handler runs one call at a time
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithOutbox(ob), streamtest.WithQuietLogs())
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "orders", RetryDelays: []time.Duration{10 * time.Second}, Handlers: []runtime.Handler{
		runtime.HandleJSON[txOrder]("OrderPlaced", runtime.Policy{MaxAttempts: 3}, nil, func(ctx context.Context, tx *sql.Tx, p txOrder, md runtime.Metadata) error {
			calls++
			// A primary key: an order written twice would fail here.
			if _, err := tx.ExecContext(ctx, "INSERT INTO orders (id) VALUES (?)", p.OrderID); err != nil {
				return err
			}
			if p.OrderID == "o-2" && md.Attempt == 1 {
				return runtime.RetryAfter(10*time.Second, context.DeadlineExceeded) // its insert is rolled back
			}
			return nil
		}),
	}})
	h.Start()

	h.Publish("orders", "OrderPlaced", txOrder{OrderID: "o-1"}, runtime.WithMessageID("m-1"))
	h.Publish("orders", "OrderPlaced", txOrder{OrderID: "o-1"}, runtime.WithMessageID("m-1")) // the same message again
	h.Publish("orders", "OrderPlaced", txOrder{OrderID: "o-2"}, runtime.WithMessageID("m-2"))
	h.Wait()
	h.Advance(10 * time.Second)

	if calls != 3 {
		t.Errorf("the handler was called %d times, want 3: m-1 once, m-2 twice", calls)
	}
	ds := h.Deliveries("orders")
	var kinds []string
	for _, d := range ds {
		k := d.MessageID + ":" + d.Verdict.Kind.String()
		if d.Verdict.Duplicate {
			k += "(duplicate)"
		}
		kinds = append(kinds, k)
	}
	want := []string{"m-1:ack", "m-1:ack(duplicate)", "m-2:retry", "m-2:ack"}
	if len(kinds) != len(want) {
		t.Fatalf("deliveries %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Errorf("deliveries %v, want %v", kinds, want)
			break
		}
	}
	st := h.App().Stats()
	if len(st) != 1 || st[0].Acked != 3 || st[0].Duplicates != 1 || st[0].Retried != 1 {
		t.Errorf("stats %+v, want 3 acked (1 a duplicate) and 1 retried", st)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM orders").Scan(&n); err != nil || n != 2 {
		t.Errorf("%d orders (%v), want o-1 and o-2 once each", n, err)
	}
}
