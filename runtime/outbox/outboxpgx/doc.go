// Package outboxpgx opens a PostgreSQL database for an outbox (package
// runtime/outbox) through pgx's database/sql driver, so that a handler
// that takes a *sql.Tx costs no more round trips to the database than one
// that begins its own transaction.
//
// A *sql.Tx handler's transaction begins with the inbox's record of its
// message: BEGIN, then an INSERT into streamgen_inbox, then the handler's
// statements, then COMMIT. Over database/sql each is a round trip of its
// own, and the inbox's INSERT is one more than the handler would make
// alone. On a database opened here, the transaction's BEGIN and the
// inbox's INSERT go to the server together, as one pipeline: the handler
// pays the round trips it would pay anyway.
//
//	db, err := outboxpgx.Open("postgres://app@db.internal:5432/orders")
//	if err != nil {
//		return err
//	}
//	ob, err := outbox.Open(ctx, db)
//
// Everything else is pgx's database/sql driver (github.com/jackc/pgx/v5/stdlib)
// unchanged: connection strings, OpenDB's configuration and options, and
// every statement. The one difference a program can see is in
// sql.Conn.Raw, whose driver connection is not a *stdlib.Conn; its Conn
// method still returns the *pgx.Conn:
//
//	err := c.Raw(func(dc any) error {
//		pc := dc.(interface{ Conn() *pgx.Conn }).Conn()
//		...
//	})
//
// A database opened with sql.Open("pgx", ...) works with the outbox just
// the same, a round trip slower per message handled.
package outboxpgx
