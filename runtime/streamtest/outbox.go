package streamtest

import (
	"context"
	"fmt"
	"time"

	"github.com/streamgen/streamgen/runtime/outbox"
)

// WithOutbox runs the outbox ob in the App, as ob.Option(broker) does in
// a service: its relay publishes what the test commits through ob.Tx to
// the harness's broker, and the subscriptions' *sql.Tx handlers get
// transactions of ob's database. Wait, Advance and the test's cleanup
// wait for the outbox too: they return once every message committed by
// then is published and handled.
//
// Open ob on an SQLite file (modernc.org/sqlite) for a test that needs no
// server, and open the database before New, so that it is closed after
// the harness stops:
//
//	db, _ := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "orders.db")+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
//	ob, _ := outbox.Open(ctx, db)
//	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithOutbox(ob))
func WithOutbox(ob *outbox.Outbox) Option {
	return func(c *config) { c.outboxes = append(c.outboxes, ob) }
}

// outboxFeeder is what the broker's Wait calls to move what ob holds into
// the broker, through relay (a relay of the harness's own, which takes
// turns with the App's): it reports whether anything moved or may still
// move, and fails when a message cannot be published.
func outboxFeeder(ob *outbox.Outbox, relay *outbox.Relay) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		n, err := relay.Flush(ctx)
		if err != nil {
			return false, fmt.Errorf("streamtest: the outbox: %w", err)
		}
		if n > 0 {
			return true, nil
		}
		// Nothing to take: on PostgreSQL another relay (the App's) may
		// hold what is left; it is published once that relay is done.
		st, err := ob.Status(ctx)
		if err != nil {
			return false, fmt.Errorf("streamtest: the outbox: %w", err)
		}
		if st.Backlog == 0 {
			return false, nil
		}
		select {
		case <-time.After(10 * time.Millisecond):
			return true, nil
		case <-ctx.Done():
			return false, fmt.Errorf("streamtest: the outbox still holds %d messages: %w", st.Backlog, ctx.Err())
		}
	}
}
