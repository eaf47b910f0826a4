package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/outbox/internal/inboxrecord"
)

// DefaultInboxRetention is how long the inbox keeps the record of a
// handled message unless InboxRetention says otherwise.
const DefaultInboxRetention = 7 * 24 * time.Hour

// inboxCleanBatch bounds the rows one statement of CleanInbox removes, so
// that no statement holds many locks, or the SQLite database, for long.
const inboxCleanBatch = 1000

// inboxConfig is how the inbox keeps its records.
type inboxConfig struct {
	// retention is InboxRetention's: 0 means DefaultInboxRetention, less
	// than 0 keeps the records for ever.
	retention time.Duration
}

// InboxRetention sets how long the inbox keeps the record of a message a
// *sql.Tx handler handled: a copy of it delivered again within that time
// is acknowledged without calling the handler; one delivered later is
// handled again. It must be longer than any message can take to come back:
// the broker's redeliveries, retry copies (a retry_delay ladder), a
// dead letter replayed, and the producers' own resends (an outbox relay
// publishes at least once). The default is DefaultInboxRetention, a week;
// a retention of 0 or less keeps the records for ever.
//
// An App given Option removes older records in the background, every
// tenth of the retention (at most hourly, at least every second);
// CleanInbox removes them when you run no App.
func InboxRetention(d time.Duration) OpenOption {
	return func(o *Outbox) {
		if d <= 0 {
			d = -1
		}
		o.inbox.retention = d
	}
}

// retentionInForce is the inbox's retention; 0 or less keeps the
// records for ever.
func (c inboxConfig) retentionInForce() time.Duration {
	if c.retention == 0 {
		return DefaultInboxRetention
	}
	return c.retention
}

// cleanEvery is how often the App cleans the inbox: a tenth of the
// retention, between a second and an hour.
func (c inboxConfig) cleanEvery() time.Duration {
	return min(max(c.retentionInForce()/10, time.Second), time.Hour)
}

// transactor is the outbox's runtime.Transactor: the transactions of *sql.Tx
// handlers, and the table streamgen_inbox that records, per subscription,
// the messages they handled.
type transactor struct{ o *Outbox }

// BeginOnce begins a transaction on the outbox's database and inserts the
// message's row into streamgen_inbox in it: with the BEGIN, in one round
// trip, on a database package outboxpgx opened; as a statement of its own
// on any other. The row is there already when
// a transaction that inserted it committed: then the transaction is rolled
// back, and handled is true. While another transaction that inserted it is
// open, the insert waits for it to end (PostgreSQL: the primary key's
// lock; SQLite: the database's one writer). On SQLite, a connection
// without a busy_timeout gets one (waitForTheWriter), and a database
// another connection is writing to ("database is locked", which SQLite
// also answers at once where waiting could deadlock) is tried again for a
// while, as nothing was done yet.
func (in transactor) BeginOnce(ctx context.Context, subscription, messageID string) (*sql.Tx, bool, error) {
	var tx *sql.Tx
	var handled bool
	err := in.o.whileBusy(ctx, func() error {
		var err error
		tx, handled, err = in.beginOnce(ctx, subscription, messageID)
		return err
	})
	return tx, handled, err
}

func (in transactor) beginOnce(ctx context.Context, subscription, messageID string) (*sql.Tx, bool, error) {
	// A driver that can (package outboxpgx) writes the record as it
	// begins the transaction, in the same round trip.
	rec := &inboxrecord.Record{Subscription: subscription, MessageID: messageID}
	tx, err := in.o.db.BeginTx(inboxrecord.With(ctx, rec), nil)
	if err != nil {
		return nil, false, fmt.Errorf("outbox: begin a transaction and record message %s of subscription %q in the inbox: %w", messageID, subscription, err)
	}
	recorded, err := in.record(ctx, tx, rec)
	if err != nil || !recorded {
		_ = tx.Rollback()
		return nil, err == nil, err
	}
	return tx, false, nil
}

// record records rec in the inbox in tx, unless the driver did as it
// began tx, and reports whether the record is new: false when a
// transaction that recorded the message committed before.
func (in transactor) record(ctx context.Context, tx *sql.Tx, rec *inboxrecord.Record) (bool, error) {
	if rec.Written {
		return rec.New, nil
	}
	if in.o.dialect == SQLite {
		if err := waitForTheWriter(ctx, tx); err != nil {
			return false, err
		}
	}
	res, err := tx.ExecContext(ctx, in.o.inboxInsertSQL(), rec.Subscription, rec.MessageID)
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err != nil {
		return false, fmt.Errorf("outbox: record message %s of subscription %q in the inbox: %w", rec.MessageID, rec.Subscription, err)
	}
	return n == 1, nil
}

// sqliteBusyTimeout is the busy_timeout, in milliseconds, that the inbox
// gives an SQLite connection that has none.
const sqliteBusyTimeout = 10000

// waitForTheWriter gives tx's SQLite connection a busy_timeout when it
// has none (the driver's default), so that the transaction's statements
// and its commit wait for another connection's write to end, rather than
// fail at once with "database is locked". A busy_timeout set by the
// database's address (_pragma=busy_timeout(...)) is kept. The setting is
// the connection's, and stays with it.
func waitForTheWriter(ctx context.Context, tx *sql.Tx) error {
	var ms int64
	if err := tx.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&ms); err != nil {
		return fmt.Errorf("outbox: read the SQLite connection's busy_timeout: %w", err)
	}
	if ms > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", sqliteBusyTimeout)); err != nil {
		return fmt.Errorf("outbox: set the SQLite connection's busy_timeout: %w", err)
	}
	return nil
}

// busyPatience bounds how long whileBusy tries again.
const busyPatience = 10 * time.Second

// whileBusy runs fn, and on SQLite runs it again while it fails because
// another connection holds the database's write lock (SQLITE_BUSY or
// SQLITE_LOCKED), pausing a little longer each time, for busyPatience at
// most or until ctx ends. fn must have done nothing when it fails so.
func (o *Outbox) whileBusy(ctx context.Context, fn func() error) error {
	err := fn()
	if o.dialect != SQLite || !isBusy(err) {
		return err
	}
	deadline := time.Now().Add(busyPatience)
	pause := time.Millisecond
	for isBusy(err) && time.Now().Before(deadline) {
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		pause = min(2*pause, 50*time.Millisecond)
		err = fn()
	}
	return err
}

// isBusy reports an SQLite error that says another connection holds the
// lock: modernc.org/sqlite's carries the result code (Code), others say
// it in words.
func isBusy(err error) bool {
	if err == nil {
		return false
	}
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		switch coded.Code() & 0xff {
		case 5, 6: // SQLITE_BUSY, SQLITE_LOCKED
			return true
		}
	}
	msg := err.Error()
	return strings.Contains(msg, "database is locked") || strings.Contains(msg, "database table is locked")
}

// inboxInsertSQL records a message, or nothing when it is recorded.
func (o *Outbox) inboxInsertSQL() string {
	if o.dialect == PostgreSQL {
		return inboxrecord.PostgresInsert
	}
	return `INSERT OR IGNORE INTO streamgen_inbox (subscription, message_id) VALUES (?, ?)`
}

// inboxCleanSQL removes up to inboxCleanBatch records older than the
// retention, given in milliseconds, by the database's clock.
func (o *Outbox) inboxCleanSQL() string {
	if o.dialect == PostgreSQL {
		return `DELETE FROM streamgen_inbox WHERE ctid = ANY (ARRAY(
    SELECT ctid FROM streamgen_inbox WHERE handled_at < now() - $1 * interval '1 millisecond' LIMIT $2))`
	}
	return `DELETE FROM streamgen_inbox WHERE rowid IN (
    SELECT rowid FROM streamgen_inbox WHERE handled_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || (? / 1000.0) || ' seconds') LIMIT ?)`
}

// CleanInbox removes the inbox's records of messages handled longer ago
// than the retention (InboxRetention), by the database's clock, a
// thousand rows a statement, and returns how many it removed. An App given
// Option runs it in the background; call it yourself (from a cron job,
// say) when you handle messages without one. With a retention of 0 or less
// it removes nothing.
func (o *Outbox) CleanInbox(ctx context.Context) (int64, error) {
	keep := o.inbox.retentionInForce()
	if keep <= 0 {
		return 0, nil
	}
	var removed int64
	for {
		var res sql.Result
		err := o.whileBusy(ctx, func() error {
			var err error
			res, err = o.db.ExecContext(ctx, o.inboxCleanSQL(), keep.Milliseconds(), inboxCleanBatch)
			return err
		})
		if err != nil {
			return removed, fmt.Errorf("outbox: remove inbox records older than %v: %w", keep, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return removed, fmt.Errorf("outbox: remove inbox records older than %v: %w", keep, err)
		}
		removed += n
		if n < inboxCleanBatch {
			return removed, nil
		}
	}
}

// inboxOption gives the App's *sql.Tx handlers their transactions
// (runtime.WithTransactor), and cleans the inbox while the App runs.
func (o *Outbox) inboxOption() runtime.Option {
	return func(a *runtime.App) {
		runtime.WithTransactor(transactor{o})(a)
		if o.inbox.retentionInForce() <= 0 {
			return
		}
		c := &inboxCleaner{o: o, app: a}
		runtime.OnStart(c.start)(a)
		runtime.OnStop(c.stop)(a)
	}
}

// inboxCleaner runs CleanInbox in the background of one App run.
type inboxCleaner struct {
	o      *Outbox
	app    *runtime.App
	cancel context.CancelFunc
	done   chan struct{}
}

func (c *inboxCleaner) start(ctx context.Context) error {
	ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	c.done = make(chan struct{})
	go c.run(ctx, c.app.Logger().With("app", c.app.Name()))
	return nil
}

func (c *inboxCleaner) stop(ctx context.Context) error {
	if c.cancel == nil {
		return nil
	}
	c.cancel()
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("outbox: the inbox cleaning did not stop: %w", context.Cause(ctx))
	}
}

// run cleans the inbox at once, then every cleanEvery, until ctx ends,
// and logs what it removed and what failed.
func (c *inboxCleaner) run(ctx context.Context, log *slog.Logger) {
	defer close(c.done)
	keep, every := c.o.inbox.retentionInForce(), c.o.inbox.cleanEvery()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		start := time.Now()
		n, err := c.o.CleanInbox(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			log.Warn("could not remove old inbox records; trying again later", "err", err, "removed", n, "retry_in", every)
		case n > 0:
			log.Info("removed old inbox records", "removed", n, "older_than", keep, "took", time.Since(start).Round(time.Millisecond))
		default:
			log.Debug("no old inbox records to remove", "older_than", keep)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
