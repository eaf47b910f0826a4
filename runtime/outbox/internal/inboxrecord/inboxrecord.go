// Package inboxrecord carries the inbox's record of a message from the
// outbox's transactor to a database driver that can write it with the
// transaction's BEGIN, in one round trip (package outboxpgx): the
// transactor puts a Record in the context it begins the transaction with;
// a driver that wrote it says so in the Record, and the transactor, when
// none did, writes it with a statement of its own.
package inboxrecord

import "context"

// PostgresInsert records a message in the inbox on PostgreSQL, or nothing
// when it is recorded already: $1 is the subscription, $2 the message id.
const PostgresInsert = `INSERT INTO streamgen_inbox (subscription, message_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`

// Record is a message that the transaction about to begin records in the
// inbox.
type Record struct {
	Subscription, MessageID string

	// Written is set by a driver that ran PostgresInsert in the
	// transaction as it began it; New then reports whether the insert
	// added the row (false: the message was recorded before).
	Written, New bool
}

type key struct{}

// With returns ctx carrying r.
func With(ctx context.Context, r *Record) context.Context {
	return context.WithValue(ctx, key{}, r)
}

// From returns the Record ctx carries, or nil.
func From(ctx context.Context) *Record {
	r, _ := ctx.Value(key{}).(*Record)
	return r
}
