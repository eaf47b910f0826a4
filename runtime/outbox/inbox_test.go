package outbox_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/streamgen/streamgen/internal/testsupport/dbtest"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/outbox"
	"github.com/streamgen/streamgen/runtime/outbox/outboxpgx"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// sqliteDSN are the settings an SQLite database shared by concurrent
// transactions needs: wait for the one writer rather than fail with
// "database is locked", WAL so that readers do not block it, and foreign
// keys enforced.
const sqliteDSN = "?_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)&_pragma=foreign_keys(1)"

// inboxDatabases runs fn on a PostgreSQL database opened as pgx's
// database/sql driver opens it and as package outboxpgx does (the inbox's
// record written with the transaction's BEGIN), and on an SQLite file of
// the test's own, opened with sqliteDSN.
func inboxDatabases(t *testing.T, fn func(t *testing.T, db *sql.DB)) {
	t.Run("postgres", func(t *testing.T) { fn(t, dbtest.Postgres(t)) })
	t.Run("postgres-outboxpgx", func(t *testing.T) { fn(t, openDB(t, "outboxpgx", dbtest.PostgresDatabase(t))) })
	t.Run("sqlite", func(t *testing.T) { fn(t, openSQLite(t, dbtest.SQLitePath(t))) })
}

// openDB opens the database at dsn with the database/sql driver named, or
// with package outboxpgx for "outboxpgx", closed when the test ends.
func openDB(t testing.TB, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := openDriver(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// openDriver opens the database at dsn with the database/sql driver
// named, or with package outboxpgx for "outboxpgx".
func openDriver(driver, dsn string) (*sql.DB, error) {
	if driver == "outboxpgx" {
		return outboxpgx.Open(dsn)
	}
	return sql.Open(driver, dsn)
}

// openSQLite opens the SQLite file at path with sqliteDSN, closed when
// the test ends.
func openSQLite(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+sqliteDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// execSQL runs statements on db, failing t on an error.
func execSQL(t testing.TB, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.ExecContext(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// count returns the result of a SELECT count(*) on db.
func count(t testing.TB, db *sql.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// rebind rewrites the ? of query as $1, $2, ... on PostgreSQL.
func rebind(ob *outbox.Outbox, query string) string {
	if ob.Dialect() != outbox.PostgreSQL {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// effects is the table the handlers of these tests write their effect
// into: one row per call that committed, with no key, so that a message
// handled twice shows as two rows.
const effects = "CREATE TABLE effects (message_id TEXT NOT NULL, attempt INTEGER NOT NULL)"

// inboxHarness is a harness running ob on an emulated RabbitMQ, its logs
// kept out of the test's output.
func inboxHarness(t *testing.T, ob *outbox.Outbox, opts ...streamtest.Option) *streamtest.Harness {
	return streamtest.New(t, runtime.RabbitMQ, append([]streamtest.Option{streamtest.WithOutbox(ob), streamtest.WithQuietLogs()}, opts...)...)
}

// stats returns the counters of the subscription named name.
func stats(t testing.TB, app *runtime.App, name string) runtime.SubscriptionStats {
	t.Helper()
	for _, s := range app.Stats() {
		if s.Subscription == name {
			return s
		}
	}
	t.Fatalf("no counters for subscription %q in %+v", name, app.Stats())
	return runtime.SubscriptionStats{}
}

// A *sql.Tx handler runs in a transaction that records its message: the
// same message delivered again is acknowledged without a second call,
// counted as a duplicate and logged with its subscription and id, and its
// effect exists once. Middleware around the call sees the transaction
// committed when next returns, and the duplicate as such.
func TestInboxHandlesAMessageOnce(t *testing.T) {
	inboxDatabases(t, func(t *testing.T, db *sql.DB) {
		ctx := context.Background()
		ob, err := outbox.Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		execSQL(t, db, effects)
		var calls atomic.Int32
		var mu sync.Mutex
		var seen []string // what the middleware saw after each call
		mw := func(ctx context.Context, msg any, md runtime.Metadata, next runtime.Next) runtime.Outcome {
			out := next(ctx, msg, md)
			// Read on another connection: only what is committed shows.
			n := count(t, db, rebind(ob, "SELECT count(*) FROM effects WHERE message_id = ?"), md.MessageID)
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, fmt.Sprintf("%s duplicate=%v committed=%d", out.Action(), out.Duplicate(), n))
			return out
		}
		h := inboxHarness(t, ob, streamtest.WithAppOptions(runtime.WithMiddleware(mw)))
		h.App().Mount(h.Broker(), &runtime.Subscription{Name: "orders", Handlers: []runtime.Handler{
			runtime.HandleJSON[order]("Order", runtime.Policy{}, nil, func(ctx context.Context, tx *sql.Tx, o order, md runtime.Metadata) error {
				calls.Add(1)
				_, err := tx.ExecContext(ctx, rebind(ob, "INSERT INTO effects (message_id, attempt) VALUES (?, ?)"), md.MessageID, md.Attempt)
				return err
			}),
		}})
		h.Start()
		h.Publish("orders", "Order", order{ID: 1}, runtime.WithMessageID("m-1"))
		h.Wait()
		h.Publish("orders", "Order", order{ID: 1}, runtime.WithMessageID("m-1"))
		h.Wait()

		if n := calls.Load(); n != 1 {
			t.Errorf("the handler was called %d times, want once", n)
		}
		if n := count(t, db, "SELECT count(*) FROM effects"); n != 1 {
			t.Errorf("%d effect rows, want 1", n)
		}
		if n := count(t, db, rebind(ob, "SELECT count(*) FROM streamgen_inbox WHERE subscription = ? AND message_id = ?"), "orders", "m-1"); n != 1 {
			t.Errorf("%d inbox rows for m-1, want 1", n)
		}
		want := []string{"ack duplicate=false committed=1", "ack duplicate=true committed=1"}
		mu.Lock()
		defer mu.Unlock()
		if strings.Join(seen, "; ") != strings.Join(want, "; ") {
			t.Errorf("the middleware saw %q, want %q", seen, want)
		}
		ds := h.Deliveries("orders")
		if len(ds) != 2 || ds[0].Verdict.Kind != streamtest.VerdictAck || ds[0].Verdict.Duplicate ||
			ds[1].Verdict.Kind != streamtest.VerdictAck || !ds[1].Verdict.Duplicate {
			t.Errorf("deliveries %+v, want an ack and a duplicate's ack", ds)
		}
		if st := stats(t, h.App(), "orders"); st.Delivered != 2 || st.Acked != 2 || st.Duplicates != 1 {
			t.Errorf("stats %+v, want 2 delivered, 2 acked, 1 duplicate", st)
		}
		lines := h.Logs().Containing("duplicate message acknowledged without calling its handler")
		if len(lines) != 1 || lines[0].Level != slog.LevelInfo || lines[0].Attr("message_id") != "m-1" || lines[0].Attr("subscription") != "orders" {
			t.Errorf("duplicate log lines %v, want one at INFO naming m-1 and orders", lines)
		}
	})
}

// The inbox is kept per subscription: one message id handled by two
// subscriptions is handled by each.
func TestInboxIsPerSubscription(t *testing.T) {
	db := openSQLite(t, dbtest.SQLitePath(t))
	ob, err := outbox.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	execSQL(t, db, effects)
	h := inboxHarness(t, ob)
	for _, name := range []string{"orders", "audit"} {
		h.App().Mount(h.Broker(), &runtime.Subscription{Name: name, Handlers: []runtime.Handler{
			runtime.HandleJSON[order]("Order", runtime.Policy{}, nil, func(ctx context.Context, tx *sql.Tx, o *order, md runtime.Metadata) error {
				_, err := tx.ExecContext(ctx, "INSERT INTO effects (message_id, attempt) VALUES (?, ?)", md.Subscription+"/"+md.MessageID, md.Attempt)
				return err
			}),
		}})
	}
	h.Start()
	for range 2 {
		h.Publish("orders", "Order", order{ID: 1}, runtime.WithMessageID("m-1"))
		h.Publish("audit", "Order", order{ID: 1}, runtime.WithMessageID("m-1"))
		h.Wait()
	}
	for _, name := range []string{"orders", "audit"} {
		if n := count(t, db, "SELECT count(*) FROM effects WHERE message_id = ?", name+"/m-1"); n != 1 {
			t.Errorf("%s: %d effect rows, want 1", name, n)
		}
		if st := stats(t, h.App(), name); st.Acked != 2 || st.Duplicates != 1 {
			t.Errorf("%s: stats %+v, want 2 acked, 1 duplicate", name, st)
		}
	}
}

// A failure, a panic and a dead letter roll the handler's transaction
// back: neither its effect nor the inbox's record stays, so the retry
// runs the handler again and commits once.
func TestInboxRollsBackWhatFails(t *testing.T) {
	inboxDatabases(t, func(t *testing.T, db *sql.DB) {
		ctx := context.Background()
		ob, err := outbox.Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		execSQL(t, db, effects)
		h := inboxHarness(t, ob)
		insert := rebind(ob, "INSERT INTO effects (message_id, attempt) VALUES (?, ?)")
		h.App().Mount(h.Broker(), &runtime.Subscription{Name: "orders", RetryDelays: []time.Duration{time.Second}, Handlers: []runtime.Handler{
			runtime.HandleJSON[order]("Order", runtime.Policy{MaxAttempts: 3, DeadLetter: "orders.dead"}, nil,
				func(ctx context.Context, tx *sql.Tx, o order, md runtime.Metadata) runtime.Outcome {
					if _, err := tx.ExecContext(ctx, insert, md.MessageID, md.Attempt); err != nil {
						return runtime.Retry().Because(err)
					}
					switch {
					case o.ID == 1 && md.Attempt == 1:
						return runtime.Retry().Because(errors.New("failed once"))
					case o.ID == 2 && md.Attempt == 1:
						panic("panicked once")
					case o.ID == 3:
						return runtime.DeadLetterNow().Because(errors.New("poison"))
					}
					return runtime.Ack()
				}),
		}})
		h.Start()
		for id := 1; id <= 3; id++ {
			h.Publish("orders", "Order", order{ID: id}, runtime.WithMessageID(fmt.Sprintf("m-%d", id)))
		}
		h.Wait()
		if n := count(t, db, "SELECT count(*) FROM effects"); n != 0 {
			t.Errorf("%d effect rows after failures, want none: the transactions roll back", n)
		}
		if n := count(t, db, "SELECT count(*) FROM streamgen_inbox"); n != 0 {
			t.Errorf("%d inbox rows after failures, want none", n)
		}
		h.Advance(time.Second)
		for _, id := range []string{"m-1", "m-2"} {
			if n := count(t, db, rebind(ob, "SELECT count(*) FROM effects WHERE message_id = ? AND attempt = 2"), id); n != 1 {
				t.Errorf("%s: %d effect rows of attempt 2, want 1", id, n)
			}
		}
		if n := count(t, db, "SELECT count(*) FROM effects"); n != 2 {
			t.Errorf("%d effect rows in all, want 2", n)
		}
		if n := count(t, db, "SELECT count(*) FROM streamgen_inbox"); n != 2 {
			t.Errorf("%d inbox rows, want 2 (m-1 and m-2)", n)
		}
		if dead := h.Queue("orders.dead"); len(dead) != 1 || dead[0].ID != "m-3" {
			t.Errorf("dead letters %+v, want m-3", dead)
		}
	})
}

// A commit that fails is a failure, retried: the next attempt finds the
// message unrecorded and runs the handler again.
func TestInboxRetriesAFailedCommit(t *testing.T) {
	inboxDatabases(t, func(t *testing.T, db *sql.DB) {
		ctx := context.Background()
		ob, err := outbox.Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		// A constraint checked at commit: a reference to a parent row
		// that does not exist passes the insert and fails the commit.
		execSQL(t, db,
			"CREATE TABLE parents (id TEXT PRIMARY KEY)",
			"INSERT INTO parents (id) VALUES ('there')",
			"CREATE TABLE children (parent TEXT NOT NULL REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED)")
		insert := rebind(ob, "INSERT INTO children (parent) VALUES (?)")
		h := inboxHarness(t, ob)
		h.App().Mount(h.Broker(), &runtime.Subscription{Name: "orders", RetryDelays: []time.Duration{time.Second}, Handlers: []runtime.Handler{
			runtime.HandleJSON[order]("Order", runtime.Policy{MaxAttempts: 2}, nil, func(ctx context.Context, tx *sql.Tx, o order, md runtime.Metadata) error {
				parent := "there"
				if md.Attempt == 1 {
					parent = "missing"
				}
				_, err := tx.ExecContext(ctx, insert, parent)
				return err
			}),
		}})
		h.Start()
		h.Publish("orders", "Order", order{ID: 1}, runtime.WithMessageID("m-1"))
		h.Wait()
		h.Advance(time.Second)
		ds := h.Deliveries("orders")
		if len(ds) != 2 {
			t.Fatalf("%d deliveries, want 2", len(ds))
		}
		if v := ds[0].Verdict; v.Kind != streamtest.VerdictRetry || !strings.Contains(v.Reason, "commit the handler's transaction") {
			t.Errorf("first delivery: %v %q, want a retry because the commit failed", v.Kind, v.Reason)
		}
		if v := ds[1].Verdict; v.Kind != streamtest.VerdictAck || v.Duplicate {
			t.Errorf("second delivery: %+v, want handled", v)
		}
		if n := count(t, db, "SELECT count(*) FROM children"); n != 1 {
			t.Errorf("%d child rows, want the second attempt's", n)
		}
		if n := count(t, db, "SELECT count(*) FROM streamgen_inbox"); n != 1 {
			t.Errorf("%d inbox rows, want 1", n)
		}
	})
}

// A message without an id cannot be recorded: it is parked as poison,
// with the reason, and the handler is not called.
func TestInboxParksAMessageWithoutID(t *testing.T) {
	db := openSQLite(t, dbtest.SQLitePath(t))
	ob, err := outbox.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	h := inboxHarness(t, ob)
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "orders", Handlers: []runtime.Handler{
		runtime.HandleJSON[order]("Order", runtime.Policy{MaxAttempts: 3, DeadLetter: "orders.dead"}, nil, func(context.Context, *sql.Tx, order) error {
			calls.Add(1)
			return nil
		}),
	}})
	h.Start()
	h.Publish("orders", "Order", order{ID: 1}, runtime.WithMessageID(""))
	h.Wait()
	if n := calls.Load(); n != 0 {
		t.Errorf("the handler was called %d times, want never", n)
	}
	ds := h.Deliveries("orders")
	if len(ds) != 1 || ds[0].Verdict.Kind != streamtest.VerdictPark || !ds[0].Verdict.Poison ||
		ds[0].Verdict.Reason != runtime.ErrNoMessageID.Error() {
		t.Fatalf("deliveries %+v, want one parked as poison for its missing id", ds)
	}
	dead := h.Queue("orders.dead")
	if len(dead) != 1 || dead[0].Headers[runtime.HeaderDeadLetterReason] != runtime.ErrNoMessageID.Error() {
		t.Errorf("dead letters %+v, want one with the reason", dead)
	}
}

// Two deliveries of one message at once (PostgreSQL): the second waits
// for the first's transaction on the inbox row, then finds it recorded,
// and is acknowledged without a call.
func TestInboxSerializesConcurrentDeliveriesOfOneMessage(t *testing.T) {
	t.Run("pgx", func(t *testing.T) { serializesConcurrentDeliveries(t, dbtest.Postgres(t)) })
	t.Run("outboxpgx", func(t *testing.T) {
		serializesConcurrentDeliveries(t, openDB(t, "outboxpgx", dbtest.PostgresDatabase(t)))
	})
}

func serializesConcurrentDeliveries(t *testing.T, db *sql.DB) {
	ctx := context.Background()
	ob, err := outbox.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	execSQL(t, db, effects)
	started, release := make(chan struct{}, 2), make(chan struct{})
	var calls atomic.Int32
	h := inboxHarness(t, ob)
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "orders", Concurrency: 2, Handlers: []runtime.Handler{
		runtime.HandleJSON[order]("Order", runtime.Policy{}, nil, func(ctx context.Context, tx *sql.Tx, o order, md runtime.Metadata) error {
			calls.Add(1)
			started <- struct{}{}
			<-release
			_, err := tx.ExecContext(ctx, "INSERT INTO effects (message_id, attempt) VALUES ($1, $2)", md.MessageID, md.Attempt)
			return err
		}),
	}})
	h.Start()
	h.Publish("orders", "Order", order{ID: 1}, runtime.WithMessageID("m-1"))
	h.Publish("orders", "Order", order{ID: 1}, runtime.WithMessageID("m-1"))
	<-started
	testkit.Eventually(t, "the second delivery to wait for the first's inbox row", func() bool {
		return count(t, db, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'") == 1
	})
	close(release)
	h.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("the handler was called %d times, want once", n)
	}
	if n := count(t, db, "SELECT count(*) FROM effects"); n != 1 {
		t.Errorf("%d effect rows, want 1", n)
	}
	if st := stats(t, h.App(), "orders"); st.Acked != 2 || st.Duplicates != 1 {
		t.Errorf("stats %+v, want 2 acked, 1 duplicate", st)
	}
}

// An App whose handler takes a *sql.Tx and that has no database refuses
// to start, saying what to give it; an App given the outbox's option runs
// it.
func TestInboxHandlerNeedsTheOutboxOption(t *testing.T) {
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs())
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "orders", Handlers: []runtime.Handler{
		runtime.HandleJSON[order]("Order", runtime.Policy{}, nil, func(context.Context, *sql.Tx, order) error { return nil }),
	}})
	err := h.App().Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), `subscription "orders": the handler of "Order" takes a *sql.Tx`) ||
		!strings.Contains(err.Error(), "ob.Option(broker)") {
		t.Fatalf("Run: %v, want the *sql.Tx handler refused for want of outbox.Option", err)
	}
}

// oldRecords inserts n inbox records of subscription "old", handled two
// hours ago by the database's clock, and one handled now.
func oldRecords(t *testing.T, db *sql.DB, ob *outbox.Outbox, n int) {
	t.Helper()
	old := "now() - interval '2 hours'"
	if ob.Dialect() == outbox.SQLite {
		old = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-2 hours')"
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	for i := range n {
		if _, err := tx.Exec(rebind(ob, "INSERT INTO streamgen_inbox (subscription, message_id, handled_at) VALUES ('old', ?, "+old+")"), fmt.Sprintf("m-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Exec("INSERT INTO streamgen_inbox (subscription, message_id) VALUES ('new', 'm-0')"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// CleanInbox removes the records older than the retention, by the
// database's clock, a statement at a time, and keeps the others; a
// retention of 0 keeps them all.
func TestCleanInboxRemovesOldRecords(t *testing.T) {
	inboxDatabases(t, func(t *testing.T, db *sql.DB) {
		ctx := context.Background()
		ob, err := outbox.Open(ctx, db, outbox.InboxRetention(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		oldRecords(t, db, ob, 2500)
		forever, err := outbox.Open(ctx, db, outbox.InboxRetention(0))
		if err != nil {
			t.Fatal(err)
		}
		if n, err := forever.CleanInbox(ctx); err != nil || n != 0 {
			t.Fatalf("CleanInbox with a retention of 0: %d, %v; want nothing removed", n, err)
		}
		if n, err := ob.CleanInbox(ctx); err != nil || n != 2500 {
			t.Fatalf("CleanInbox: %d, %v; want 2500 removed", n, err)
		}
		if n := count(t, db, "SELECT count(*) FROM streamgen_inbox WHERE subscription = 'new'"); n != 1 {
			t.Errorf("%d recent records left, want 1", n)
		}
		if n := count(t, db, "SELECT count(*) FROM streamgen_inbox"); n != 1 {
			t.Errorf("%d records left, want the recent one", n)
		}
		if n, err := ob.CleanInbox(ctx); err != nil || n != 0 {
			t.Errorf("a second CleanInbox: %d, %v; want nothing more", n, err)
		}
	})
}

// An App running the outbox removes the old records in the background,
// logs how many, and stops doing so when it stops.
func TestAppCleansTheInboxInTheBackground(t *testing.T) {
	inboxDatabases(t, func(t *testing.T, db *sql.DB) {
		before := goleak.IgnoreCurrent()
		ctx := context.Background()
		ob, err := outbox.Open(ctx, db, outbox.InboxRetention(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		oldRecords(t, db, ob, 1200)
		h := inboxHarness(t, ob)
		h.App().Mount(h.Broker(), &runtime.Subscription{Name: "orders", Handlers: []runtime.Handler{
			runtime.HandleJSON[order]("Order", runtime.Policy{}, nil, func(context.Context, *sql.Tx, order) error { return nil }),
		}})
		h.Start()
		testkit.Eventually(t, "the old records to be removed", func() bool {
			return len(h.Logs().Find(slog.LevelInfo, "removed old inbox records")) == 1
		})
		line := h.Logs().Find(slog.LevelInfo, "removed old inbox records")[0]
		if line.Attr("removed") != "1200" || line.Attr("older_than") != "1h0m0s" {
			t.Errorf("log line %v, want 1200 removed, older than 1h0m0s", line)
		}
		if n := count(t, db, "SELECT count(*) FROM streamgen_inbox"); n != 1 {
			t.Errorf("%d records left, want the recent one", n)
		}
		if err := h.Stop(); err != nil {
			t.Fatal(err)
		}
		// The database's own goroutine, started by the first query, is not
		// the cleaning's.
		goleak.VerifyNone(t, before, goleak.IgnoreTopFunction("database/sql.(*DB).connectionCleaner"))
	})
}

// On an SQLite database opened without a busy_timeout, a handler's
// transaction that finds another connection writing waits for it, rather
// than failing the attempt with "database is locked".
func TestInboxWaitsForAnotherSQLiteWriter(t *testing.T) {
	db := dbtest.SQLite(t) // no busy_timeout
	ctx := context.Background()
	ob, err := outbox.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	execSQL(t, db, effects)
	blocker, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := blocker.ExecContext(ctx, "INSERT INTO effects (message_id, attempt) VALUES ('blocker', 0)"); err != nil {
		t.Fatal(err)
	}
	h := inboxHarness(t, ob)
	started := make(chan struct{})
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "orders", Middleware: []runtime.Middleware{
		func(ctx context.Context, msg any, md runtime.Metadata, next runtime.Next) runtime.Outcome {
			close(started)
			return next(ctx, msg, md)
		},
	}, Handlers: []runtime.Handler{
		runtime.HandleJSON[order]("Order", runtime.Policy{MaxAttempts: 2}, nil, func(ctx context.Context, tx *sql.Tx, o order, md runtime.Metadata) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO effects (message_id, attempt) VALUES (?, ?)", md.MessageID, md.Attempt)
			return err
		}),
	}})
	h.Start()
	h.Publish("orders", "Order", order{ID: 1}, runtime.WithMessageID("m-1"))
	<-started
	time.Sleep(100 * time.Millisecond) // the handler's transaction meets the lock meanwhile
	if err := blocker.Commit(); err != nil {
		t.Fatal(err)
	}
	h.Wait()
	ds := h.Deliveries("orders")
	if len(ds) != 1 || ds[0].Verdict.Kind != streamtest.VerdictAck || ds[0].Attempt != 1 {
		t.Fatalf("deliveries %+v, want the first attempt handled", ds)
	}
	if n := count(t, db, "SELECT count(*) FROM effects WHERE message_id = 'm-1'"); n != 1 {
		t.Errorf("%d effects of m-1, want 1", n)
	}
}

// A handler's transaction gives an SQLite connection without a
// busy_timeout one of ten seconds, so that its statements and its commit
// wait for another writer; a busy_timeout the database's address sets is
// kept.
func TestInboxGivesSQLiteConnectionsABusyTimeout(t *testing.T) {
	for _, tc := range []struct {
		dsn  string
		want int
	}{
		{"", 10000},
		{"?_pragma=busy_timeout(2500)", 2500},
	} {
		t.Run("dsn="+tc.dsn, func(t *testing.T) {
			db, err := sql.Open("sqlite", "file:"+dbtest.SQLitePath(t)+tc.dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			db.SetMaxOpenConns(1) // one connection: the handler's, then the test's
			ob, err := outbox.Open(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			h := inboxHarness(t, ob)
			h.App().Mount(h.Broker(), &runtime.Subscription{Name: "orders", Handlers: []runtime.Handler{
				runtime.HandleJSON[order]("Order", runtime.Policy{}, nil, func(context.Context, *sql.Tx, order) error { return nil }),
			}})
			h.Start()
			h.Publish("orders", "Order", order{ID: 1}, runtime.WithMessageID("m-1"))
			h.Wait()
			if n := count(t, db, "PRAGMA busy_timeout"); n != tc.want {
				t.Errorf("busy_timeout %d, want %d", n, tc.want)
			}
		})
	}
}

// On an SQLite database opened without any settings, many *sql.Tx
// handlers at once (eight subscriptions, two calls at a time each) all
// succeed on their first attempt: each transaction waits for the one
// writer instead of failing with "database is locked".
func TestInboxOnAPlainSQLiteUnderConcurrency(t *testing.T) {
	db := dbtest.SQLite(t)
	ob, err := outbox.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	execSQL(t, db, effects)
	h := inboxHarness(t, ob)
	const subs, perSub = 8, 40
	for i := range subs {
		h.App().Mount(h.Broker(), &runtime.Subscription{Name: fmt.Sprintf("q%d", i), Concurrency: 2, Handlers: []runtime.Handler{
			runtime.HandleJSON[order]("Order", runtime.Policy{}, nil, func(ctx context.Context, tx *sql.Tx, o order, md runtime.Metadata) error {
				// A read, then a write: the shape that deadlocks without waits.
				if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM effects").Scan(new(int)); err != nil {
					return err
				}
				_, err := tx.ExecContext(ctx, "INSERT INTO effects (message_id, attempt) VALUES (?, ?)", md.Subscription+"/"+md.MessageID, md.Attempt)
				return err
			}),
		}})
	}
	h.Start()
	for i := range subs {
		for j := range perSub {
			h.Publish(fmt.Sprintf("q%d", i), "Order", order{ID: j}, runtime.WithMessageID(fmt.Sprintf("m-%d", j)))
		}
	}
	h.Wait()
	for _, st := range h.App().Stats() {
		if st.Acked != perSub || st.Dropped != 0 || st.Failed != 0 {
			t.Errorf("%s: %+v, want all %d acked at once", st.Subscription, st, perSub)
		}
	}
	if n := count(t, db, "SELECT count(*) FROM effects"); n != subs*perSub {
		t.Errorf("%d effects, want %d", n, subs*perSub)
	}
}

// The App cleans the inbox again while it runs, every tenth of the
// retention (at least every second): a record made after the App started
// is removed once it is older than the retention.
func TestAppCleansTheInboxAgainWhileItRuns(t *testing.T) {
	db := openSQLite(t, dbtest.SQLitePath(t))
	ob, err := outbox.Open(context.Background(), db, outbox.InboxRetention(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	h := inboxHarness(t, ob)
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "orders", Handlers: []runtime.Handler{
		runtime.HandleJSON[order]("Order", runtime.Policy{}, nil, func(context.Context, *sql.Tx, order) error { return nil }),
	}})
	h.Start()
	h.Publish("orders", "Order", order{ID: 1}, runtime.WithMessageID("m-1"))
	h.Wait()
	if n := count(t, db, "SELECT count(*) FROM streamgen_inbox"); n != 1 {
		t.Fatalf("%d inbox records after the message, want 1", n)
	}
	testkit.Eventually(t, "the record to be removed once older than 2s", func() bool {
		return count(t, db, "SELECT count(*) FROM streamgen_inbox") == 0
	})
	// The cleaner logs once its delete returned, a moment after the
	// record is gone.
	testkit.Eventually(t, "a log line that the record was removed", func() bool {
		lines := h.Logs().Find(slog.LevelInfo, "removed old inbox records")
		return len(lines) > 0 && lines[len(lines)-1].Attr("removed") == "1"
	})
}

// A handler of every message type may take a *sql.Tx too: each message,
// of whatever type, is handled once per id.
func TestAHandlerOfEveryTypeRunsInATransaction(t *testing.T) {
	db := openSQLite(t, dbtest.SQLitePath(t))
	ob, err := outbox.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE audit (id TEXT, type TEXT)"); err != nil {
		t.Fatal(err)
	}
	h := inboxHarness(t, ob)
	calls := 0
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "audit", Handlers: []runtime.Handler{
		runtime.HandleEvery(runtime.Policy{}, func(ctx context.Context, tx *sql.Tx, d runtime.Delivery) error {
			calls++
			_, err := tx.ExecContext(ctx, "INSERT INTO audit VALUES (?, ?)", d.MessageID, d.MessageType)
			return err
		}),
	}})
	h.Start()
	for _, m := range []struct{ id, typ string }{{"m-1", "OrderPlaced"}, {"m-2", "OrderCancelled"}, {"m-1", "OrderPlaced"}} {
		h.Publish("audit", m.typ, order{ID: 1}, runtime.WithMessageID(m.id))
	}
	h.Wait()
	if n := count(t, db, "SELECT count(*) FROM audit"); n != 2 || calls != 2 {
		t.Fatalf("%d audit rows, %d calls; want 2 of each, the repeated m-1 acknowledged as a duplicate", n, calls)
	}
	if st := stats(t, h.App(), "audit"); st.Duplicates != 1 {
		t.Fatalf("stats %+v, want one duplicate", st)
	}
}
