// Package shipping is streamgen's example of handling a message once: a
// RabbitMQ worker that schedules a shipment for each placed order, writes
// it into its database and announces it, all in one transaction.
//
//   - Service.Schedule takes a *sql.Tx: the runtime begins the
//     transaction on the outbox's database (PostgreSQL or SQLite), records
//     the message's id in the inbox table in it, calls the handler, and
//     commits when it returns nil. The handler inserts the shipment and
//     publishes ShipmentScheduled through the outbox (Outbox.Tx), so the
//     message is sent if, and only if, the shipment is saved.
//   - A delivery of an order already scheduled (the worker died after the
//     commit, before its ack; the producer sent it twice) is acknowledged
//     without calling Schedule: the shipment is written once.
//   - An order without items can never be shipped: Schedule parks it on
//     shipping.placed.dead with runtime.DeadLetter, and its transaction,
//     which wrote nothing, is rolled back.
//
// go generate writes streamgen_gen.go: Mount, which takes the *Service.
// shipping_test.go runs the worker on the in-process broker of
// runtime/streamtest over SQLite, with no server.
package shipping
