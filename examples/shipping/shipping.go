package shipping

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/outbox"
)

//go:generate go tool streamgen

// OrderPlaced is what the orders service publishes for a new order.
type OrderPlaced struct {
	OrderID string `json:"order_id"`
	Items   int    `json:"items"`
}

// ShipmentScheduled announces a shipment.
type ShipmentScheduled struct {
	OrderID string `json:"order_id"`
	Parcels int    `json:"parcels"`
}

// Schema creates the table Schedule writes, on PostgreSQL and SQLite.
const Schema = `CREATE TABLE IF NOT EXISTS shipments (
    order_id TEXT PRIMARY KEY,
    parcels  INTEGER NOT NULL
)`

// Service holds what the handler needs: the outbox it publishes through.
type Service struct {
	Outbox *outbox.Outbox
}

// Schedule saves the shipment of an order and announces it, in the
// transaction the runtime began for this message.
//
//stream:subscriber "shipping.placed" broker=rabbitmq max_attempts=5 retry_delay=10s dead_letter=shipping.placed.dead
func (s *Service) Schedule(ctx context.Context, tx *sql.Tx, o OrderPlaced) error {
	if o.Items < 1 {
		return runtime.DeadLetter(fmt.Errorf("order %s has no items to ship", o.OrderID))
	}
	parcels := (o.Items + 9) / 10
	if _, err := tx.ExecContext(ctx, "INSERT INTO shipments (order_id, parcels) VALUES ($1, $2)", o.OrderID, parcels); err != nil {
		return err // retried: the transaction is rolled back first
	}
	// Written in the same transaction: sent once it commits, never if it
	// rolls back.
	return runtime.Publish(ctx, s.Outbox.Tx(tx), runtime.Queue("shipments.scheduled"), "ShipmentScheduled",
		ShipmentScheduled{OrderID: o.OrderID, Parcels: parcels})
}
