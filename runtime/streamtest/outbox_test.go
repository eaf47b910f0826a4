package streamtest_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/outbox"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

type placed struct {
	Order string `json:"order"`
}

// openOutbox opens an outbox on an SQLite file of the test's own, with a
// table of orders beside it.
func openOutbox(t *testing.T) (*sql.DB, *outbox.Outbox) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "orders.db")+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Exec("CREATE TABLE orders (id TEXT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	// A poll of an hour: only the harness's waits can move the messages.
	ob, err := outbox.Open(t.Context(), db, outbox.WithPollInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return db, ob
}

// placeOrder saves an order and publishes OrderPlaced through the outbox,
// in one transaction that commits, or rolls back.
func placeOrder(t *testing.T, db *sql.DB, ob *outbox.Outbox, id string, rollback bool) {
	t.Helper()
	ctx := t.Context()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, "INSERT INTO orders (id) VALUES (?)", id); err != nil {
		t.Fatal(err)
	}
	if err := runtime.Publish(ctx, ob.Tx(tx), runtime.Queue("orders"), "OrderPlaced", placed{Order: id}, runtime.WithMessageID(id)); err != nil {
		t.Fatal(err)
	}
	if !rollback {
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// With WithOutbox the harness runs the outbox over SQLite: what a test
// publishes through ob.Tx reaches the broker once the transaction
// commits, and Wait returns once it is handled; a rolled-back
// transaction's message never arrives.
func TestHarnessRunsTheOutbox(t *testing.T) {
	for _, kind := range []runtime.BrokerKind{runtime.RabbitMQ, runtime.ZeroMQ} {
		t.Run(string(kind), func(t *testing.T) {
			db, ob := openOutbox(t)
			h := streamtest.New(t, kind, streamtest.WithOutbox(ob), streamtest.WithQuietLogs())
			var handled []string
			h.App().Mount(h.Broker(), &runtime.Subscription{Name: "orders", Handlers: []runtime.Handler{
				runtime.Handle("OrderPlaced", runtime.Policy{}, func(_ context.Context, p *placed, _ runtime.Metadata) runtime.Outcome {
					handled = append(handled, p.Order)
					return runtime.Ack()
				})}})
			placeOrder(t, db, ob, "before-start", false)
			h.Start()
			placeOrder(t, db, ob, "rolled-back", true)
			placeOrder(t, db, ob, "o-1", false)
			placeOrder(t, db, ob, "o-2", false)
			h.Wait()
			if len(handled) != 3 || handled[0] != "before-start" || handled[1] != "o-1" || handled[2] != "o-2" {
				t.Fatalf("handled %v, want before-start, o-1, o-2", handled)
			}
			ds := h.Deliveries("orders")
			if len(ds) != 3 || ds[1].MessageID != "o-1" || ds[1].MessageType != "OrderPlaced" {
				t.Errorf("deliveries %+v", ds)
			}
			st, err := ob.Status(t.Context())
			if err != nil || st.Backlog != 0 {
				t.Errorf("the outbox holds %d messages (%v), want none", st.Backlog, err)
			}
		})
	}
}
