// Package outbox publishes messages with a database transaction, and
// handles each message once: the two ends of a service that a broker
// cannot keep for it.
//
// A service that saves an order and publishes OrderPlaced either publishes
// before the commit (a rolled-back order is announced) or after it (a
// crash between the two loses the event). With an outbox the message is a
// row written in the same transaction as the order, and a relay publishes
// committed rows to the broker, removing each once the broker confirmed it:
//
//	ob, err := outbox.Open(ctx, db) // PostgreSQL (pgx) or SQLite (modernc.org/sqlite)
//	...
//	tx, err := db.BeginTx(ctx, nil)
//	... // save the order in tx
//	err = orders.PublishOrderPlaced(ctx, ob.Tx(tx), msg)
//	err = tx.Commit() // published at least once from now on; on rollback, never
//
// Open creates the tables when they are missing (Migration shows the SQL).
//
// The other end is the inbox. In an App given Option, a handler that
// takes a *sql.Tx after its context runs in a transaction of the outbox's
// database that records the message's id in streamgen_inbox, committed
// when the handler succeeds: a delivery of a message recorded already is
// acknowledged without calling the handler. What the handler writes
// through the transaction, and publishes through Tx, happens once per
// message. Records are kept for InboxRetention (a week by default), and
// the App removes older ones in the background (CleanInbox).
package outbox
