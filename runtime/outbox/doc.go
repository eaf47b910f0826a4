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
// Open creates the tables when they are missing (Migration shows the SQL;
// WithoutMigration leaves the database as it is).
//
// # The relay
//
// An App runs a relay while it runs with Option:
//
//	app := runtime.NewApp("orders", ob.Option(broker))
//
// The relay is a task of the App (runtime.WithTask): it starts once the
// App's brokers have started, publishes through broker, and stops before
// they stop, finishing the messages in hand. The App's health report and
// its Observer's metrics (runtime/promstream, runtime/otelstream) show the
// backlog and the age of the oldest message. A relay also runs alone
// (Outbox.Relay, Relay.Run), as streamgen outbox relay -db DB -url URL
// does for RabbitMQ; streamgen outbox status -db DB prints the backlog
// (Outbox.Status). See Relay for what it guarantees and what it does not.
//
// In a test, runtime/streamtest's WithOutbox runs the outbox over SQLite
// in the harness.
//
// # The inbox
//
// The other end is the inbox. In an App given Option, a handler that
// takes a *sql.Tx after its context runs in a transaction of the outbox's
// database that records the message's id in streamgen_inbox, committed
// when the handler succeeds: a delivery of a message recorded already is
// acknowledged without calling the handler. What the handler writes
// through the transaction, and publishes through Tx, happens once per
// message. Records are kept for InboxRetention (a week by default), and
// the App removes older ones in the background (CleanInbox).
//
// On PostgreSQL, open the database with package outboxpgx (pgx's
// database/sql driver, whose transactions for such handlers send BEGIN
// and the inbox's record together): the record then costs no round trip
// of its own.
package outbox
