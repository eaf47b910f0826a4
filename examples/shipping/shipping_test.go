package shipping_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite" // SQLite in pure Go: no server

	"github.com/streamgen/streamgen/examples/shipping"
	"github.com/streamgen/streamgen/internal/testsupport/dbtest"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/outbox"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// start runs the worker in process on the emulated RabbitMQ broker, its
// transactions on db, mounted by the generated Mount.
func start(t *testing.T, db *sql.DB) *streamtest.Harness {
	t.Helper()
	ctx := context.Background()
	ob, err := outbox.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, shipping.Schema); err != nil {
		t.Fatal(err)
	}
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithAppName("shipping"), streamtest.WithQuietLogs(), streamtest.WithOutbox(ob))
	shipping.Mount(h.App(), h.Broker(), &shipping.Service{Outbox: ob})
	h.Start()
	return h
}

func sqlite(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "shipping.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func count(t *testing.T, db *sql.DB, query string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func place(t *testing.T, h *streamtest.Harness, id string, o shipping.OrderPlaced) {
	t.Helper()
	if err := shipping.PublishOrderPlaced(t.Context(), h.Broker(), o, runtime.WithMessageID(id)); err != nil {
		t.Fatal(err)
	}
}

// An order delivered twice is shipped once: the second delivery is
// acknowledged without calling Schedule; each shipment is announced.
func TestAnOrderIsShippedOnce(t *testing.T) {
	for name, open := range map[string]func(*testing.T) *sql.DB{"sqlite": sqlite, "postgres": func(t *testing.T) *sql.DB { return dbtest.Postgres(t) }} {
		t.Run(name, func(t *testing.T) {
			db := open(t)
			h := start(t, db)
			place(t, h, "m-1", shipping.OrderPlaced{OrderID: "o-1", Items: 12})
			place(t, h, "m-1", shipping.OrderPlaced{OrderID: "o-1", Items: 12}) // sent again
			place(t, h, "m-2", shipping.OrderPlaced{OrderID: "o-2", Items: 3})
			h.Wait()
			if n := count(t, db, "SELECT count(*) FROM shipments"); n != 2 {
				t.Errorf("%d shipments, want 2", n)
			}
			if n := count(t, db, "SELECT parcels FROM shipments WHERE order_id = 'o-1'"); n != 2 {
				t.Errorf("o-1 has %d parcels, want 2", n)
			}
			st := h.App().Stats()
			if len(st) != 1 || st[0].Acked != 3 || st[0].Duplicates != 1 {
				t.Errorf("stats %+v, want 3 acked, 1 of them a duplicate", st)
			}
			// Each shipment is announced once: its ShipmentScheduled waits in
			// the outbox, or the relay has sent it on.
			testkit.Eventually(t, "two announcements", func() bool {
				return count(t, db, "SELECT count(*) FROM streamgen_outbox WHERE message_type = 'ShipmentScheduled'")+len(h.Queue("shipments.scheduled")) == 2
			})
		})
	}
}

// An order without items is parked with its reason; nothing of it is
// written, and nothing announced.
func TestAnOrderWithoutItemsIsParked(t *testing.T) {
	db := sqlite(t)
	h := start(t, db)
	place(t, h, "m-1", shipping.OrderPlaced{OrderID: "o-1"})
	h.Wait()
	dead := h.Queue("shipping.placed.dead")
	if len(dead) != 1 || !strings.Contains(dead[0].Headers[runtime.HeaderDeadLetterReason], "order o-1 has no items to ship") {
		t.Fatalf("dead letters %+v, want o-1 with its reason", dead)
	}
	if n := count(t, db, "SELECT count(*) FROM shipments") + count(t, db, "SELECT count(*) FROM streamgen_outbox") + len(h.Queue("shipments.scheduled")); n != 0 {
		t.Errorf("%d shipments or announcements, want none", n)
	}
	if n := count(t, db, "SELECT count(*) FROM streamgen_inbox"); n != 0 {
		t.Errorf("%d inbox records, want none: the message was not handled", n)
	}
}
