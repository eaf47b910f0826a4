package outbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/streamgen/streamgen/runtime"
)

// Tx returns a runtime.Publisher that writes each message it is given
// into the outbox table inside tx, the caller's transaction: every
// generated publisher works with it unchanged,
//
//	orders.PublishOrderPlaced(ctx, ob.Tx(tx), msg)
//
// If tx rolls back, nothing is ever published. Once it commits, the relay
// publishes the message at least once, with its message id, type, headers
// and properties as given, in commit order among the messages to the same
// queue (or exchange and routing key). On PostgreSQL, Publish takes a
// transaction lock on that route, so that two transactions that publish
// to one route commit one after the other; on SQLite, a database has one
// writer at a time anyway.
func (o *Outbox) Tx(tx *sql.Tx) runtime.Publisher { return txPublisher{o: o, tx: tx} }

// txPublisher writes messages into the outbox table in a transaction.
type txPublisher struct {
	o  *Outbox
	tx *sql.Tx
}

// stored are a message's fields that have no column of their own.
type stored struct {
	CorrelationID   string    `json:"correlation_id,omitempty"`
	ReplyTo         string    `json:"reply_to,omitempty"`
	Priority        uint8     `json:"priority,omitempty"`
	ExpirationMS    int64     `json:"expiration_ms,omitempty"`
	Timestamp       time.Time `json:"timestamp,omitzero"`
	AppID           string    `json:"app_id,omitempty"`
	AllowUnroutable bool      `json:"allow_unroutable,omitempty"`
}

// Publish writes msg, to queue (or to msg.Exchange with msg.RoutingKey, or
// queue as the routing key), into the outbox table in the transaction.
func (p txPublisher) Publish(ctx context.Context, queue string, msg runtime.Message) error {
	if p.tx == nil {
		return errors.New("outbox: publish: Tx was given no transaction")
	}
	route := queue
	if msg.RoutingKey != "" {
		route = msg.RoutingKey
	}
	if route == "" {
		return fmt.Errorf("outbox: publish %s: no queue or routing key", msg.Type)
	}
	headers := []byte("{}")
	if len(msg.Headers) > 0 {
		var err error
		if headers, err = json.Marshal(msg.Headers); err != nil {
			return fmt.Errorf("outbox: publish %s: %w", msg.Type, err)
		}
	}
	props, err := json.Marshal(stored{
		CorrelationID: msg.CorrelationID, ReplyTo: msg.ReplyTo, Priority: msg.Priority,
		ExpirationMS: msg.Expiration.Milliseconds(), Timestamp: msg.Timestamp, AppID: msg.AppID,
		AllowUnroutable: msg.AllowUnroutable,
	})
	if err != nil {
		return fmt.Errorf("outbox: publish %s: %w", msg.Type, err)
	}
	body := msg.Body
	if body == nil {
		body = []byte{}
	}
	if _, err := p.tx.ExecContext(ctx, p.o.insertSQL(), msg.Exchange, route, msg.ID, msg.Type, msg.ContentType,
		string(headers), string(props), body); err != nil {
		return fmt.Errorf("outbox: publish %s to %s: %w", msg.Type, describeRoute(msg.Exchange, route), err)
	}
	return nil
}

// insertSQL writes one message. On PostgreSQL it first takes the
// transaction lock of the message's route, in the same statement (one
// round trip).
func (o *Outbox) insertSQL() string {
	if o.dialect == PostgreSQL {
		return `WITH route_lock AS (SELECT pg_advisory_xact_lock(hashtextextended('streamgen_outbox:' || $1 || '/' || $2, 0)))
INSERT INTO streamgen_outbox (exchange, route, message_id, message_type, content_type, headers, properties, body)
SELECT $1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::bytea FROM route_lock`
	}
	return `INSERT INTO streamgen_outbox (exchange, route, message_id, message_type, content_type, headers, properties, body)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
}

// describeRoute names a route in messages.
func describeRoute(exchange, route string) string {
	if exchange == "" {
		return "queue " + route
	}
	return fmt.Sprintf("exchange %s with routing key %q", exchange, route)
}
