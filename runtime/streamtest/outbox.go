package streamtest

import "github.com/streamgen/streamgen/runtime/outbox"

// WithOutbox runs the outbox ob in the App, as ob.Option(broker) does in
// a service, the harness's Broker as the broker: the subscriptions'
// handlers that take a *sql.Tx run in transactions of ob's database, each
// message id handled once (a message delivered again after its
// transaction committed is acknowledged without a call, and counted in
// Stats as a duplicate). With SQLite (modernc.org/sqlite) a test needs no
// database server:
//
//	db, _ := sql.Open("sqlite", filepath.Join(t.TempDir(), "orders.db"))
//	ob, _ := outbox.Open(t.Context(), db)
//	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithOutbox(ob))
func WithOutbox(ob *outbox.Outbox) Option {
	return func(c *config) { c.outboxes = append(c.outboxes, ob) }
}
