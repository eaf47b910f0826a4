package outboxpgx_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"net"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/streamgen/streamgen/internal/testsupport/dbtest"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/outbox"
	"github.com/streamgen/streamgen/runtime/outbox/internal/inboxrecord"
	"github.com/streamgen/streamgen/runtime/outbox/outboxpgx"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// countingConn counts the writes to the server: a round trip is a write
// and the wait for its answer.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// counts are what openCounted's database did on the network.
type counts struct{ writes, dials atomic.Int64 }

// openCounted opens a database of the test's own through outboxpgx, of
// one connection, counting its writes and connections, with the outbox's
// tables.
func openCounted(t *testing.T) (*sql.DB, *counts) {
	t.Helper()
	config, err := pgx.ParseConfig(dbtest.PostgresDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	n := new(counts)
	var d net.Dialer
	config.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		n.dials.Add(1)
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{c, &n.writes}, nil
	}
	db := outboxpgx.OpenDB(*config)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	if _, err := outbox.Open(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return db, n
}

// begin begins a transaction that records message id of subscription
// "orders", and returns it and what the driver said of the record.
func begin(t *testing.T, db *sql.DB, id string) (*sql.Tx, *inboxrecord.Record) {
	t.Helper()
	rec := &inboxrecord.Record{Subscription: "orders", MessageID: id}
	tx, err := db.BeginTx(inboxrecord.With(context.Background(), rec), nil)
	if err != nil {
		t.Fatalf("begin recording %s: %v", id, err)
	}
	return tx, rec
}

// The transaction's BEGIN and the inbox's insert reach the server in one
// write, once pgx has the insert prepared (its first use on a connection
// prepares it); the record says whether the message was new.
func TestBeginRecordsTheMessageInOneRoundTrip(t *testing.T) {
	db, cs := openCounted(t)
	writes := &cs.writes
	tx, rec := begin(t, db, "m-0") // prepares the statements
	if !rec.Written || !rec.New {
		t.Fatalf("first record %+v, want written and new", rec)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	before := writes.Load()
	tx, rec = begin(t, db, "m-1")
	if n := writes.Load() - before; n != 1 {
		t.Errorf("beginning a recorded transaction wrote %d times to the server, want 1", n)
	}
	if !rec.Written || !rec.New {
		t.Errorf("record %+v, want written and new", rec)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	tx, rec = begin(t, db, "m-1")
	if !rec.Written || rec.New {
		t.Errorf("record of a message recorded before %+v, want written, not new", rec)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}

	if n := inboxRows(t, db); n != 2 {
		t.Errorf("%d inbox rows, want 2 (m-0 and m-1)", n)
	}
}

// inboxRows counts the rows of streamgen_inbox.
func inboxRows(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM streamgen_inbox").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A transaction without a record, or with options, begins as pgx begins
// it, and a record it carries is left alone.
func TestBeginWithoutARecordIsPgxs(t *testing.T) {
	db, _ := openCounted(t)
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	rec := &inboxrecord.Record{Subscription: "orders", MessageID: "m-1"}
	tx, err = db.BeginTx(inboxrecord.With(ctx, rec), &sql.TxOptions{Isolation: sql.LevelSerializable})
	if err != nil {
		t.Fatal(err)
	}
	var level string
	if err := tx.QueryRow("SHOW transaction_isolation").Scan(&level); err != nil {
		t.Fatal(err)
	}
	if level != "serializable" {
		t.Errorf("isolation %q, want serializable", level)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if rec.Written {
		t.Errorf("a transaction with options wrote the record %+v: the outbox writes it itself then", rec)
	}
}

// An insert that fails ends the transaction it began, and BeginTx returns
// its error: the connection comes back to the pool with no transaction
// open, and serves the next statement (left in the failed transaction,
// database/sql would drop it and connect again).
func TestBeginThatFailsLeavesNoTransactionOpen(t *testing.T) {
	db, n := openCounted(t)
	// The insert fails as it runs, after the BEGIN (a statement that
	// cannot be prepared fails before either is sent).
	if _, err := db.Exec("ALTER TABLE streamgen_inbox ADD CONSTRAINT refuse CHECK (message_id <> 'refused')"); err != nil {
		t.Fatal(err)
	}
	tx, _ := begin(t, db, "m-0") // prepares the statements
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	rec := &inboxrecord.Record{Subscription: "orders", MessageID: "refused"}
	if tx, err := db.BeginTx(inboxrecord.With(context.Background(), rec), nil); err == nil {
		_ = tx.Rollback()
		t.Fatal("a transaction began, its inbox insert refused")
	}
	if rec.Written {
		t.Errorf("record %+v says written", rec)
	}
	// One connection: the same that failed.
	dials := n.dials.Load()
	defer func() {
		if d := n.dials.Load() - dials; d != 0 {
			t.Errorf("%d new connections after the failed begin, want 0: the failed one was dropped", d)
		}
	}()
	if status := txStatus(t, db); status != 'I' {
		t.Errorf("the connection's transaction status is %q after the failed begin, want 'I' (idle, none open)", status)
	}
	var one int
	if err := db.QueryRow("SELECT 1").Scan(&one); err != nil {
		t.Errorf("the connection after the failed begin: %v", err)
	}
}

// txStatus is the transaction status of db's connection, as the server
// last told it: 'I' none open, 'T' one open, 'E' one failed. Its Raw
// connection gives the *pgx.Conn as the package says.
func txStatus(t *testing.T, db *sql.DB) byte {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var status byte
	err = c.Raw(func(dc any) error {
		pc, ok := dc.(interface{ Conn() *pgx.Conn })
		if !ok {
			return errors.New("the driver connection has no Conn method")
		}
		status = pc.Conn().PgConn().TxStatus()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return status
}

// A commit ends the transaction as pgx's does: a transaction that failed
// commits as a rollback, and says so; a second end is an error.
func TestCommitOfAFailedTransaction(t *testing.T) {
	db, _ := openCounted(t)
	tx, _ := begin(t, db, "m-1")
	if _, err := tx.Exec("SELECT 1/0"); err == nil {
		t.Fatal("1/0 did not fail")
	}
	if err := tx.Commit(); !errors.Is(err, pgx.ErrTxCommitRollback) {
		t.Errorf("commit of a failed transaction: %v, want %v", err, pgx.ErrTxCommitRollback)
	}
	if n := inboxRows(t, db); n != 0 {
		t.Errorf("%d inbox rows after the rollback, want 0", n)
	}
}

// While a transaction that recorded a message is open, a second that
// records it waits for its end, then finds it recorded.
func TestBeginWaitsForAnOpenRecordOfTheMessage(t *testing.T) {
	config, err := pgx.ParseConfig(dbtest.PostgresDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	db := outboxpgx.OpenDB(*config)
	t.Cleanup(func() { _ = db.Close() })
	if _, err := outbox.Open(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	first, rec := begin(t, db, "m-1")
	if !rec.New {
		t.Fatalf("first record %+v, want new", rec)
	}
	second := make(chan *inboxrecord.Record, 1)
	failed := make(chan error, 1)
	go func() {
		rec := &inboxrecord.Record{Subscription: "orders", MessageID: "m-1"}
		tx, err := db.BeginTx(inboxrecord.With(context.Background(), rec), nil)
		if err != nil {
			failed <- err
			return
		}
		_ = tx.Rollback()
		second <- rec
	}()
	testkit.Eventually(t, "the second begin to wait for the first's inbox row", func() bool {
		var waiting int
		err := db.QueryRow("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'").Scan(&waiting)
		return err == nil && waiting == 1
	})
	select {
	case rec := <-second:
		t.Fatalf("the second began while the first was open: %+v", rec)
	case err := <-failed:
		t.Fatal(err)
	default:
	}
	if err := first.Commit(); err != nil {
		t.Fatal(err)
	}
	select {
	case rec := <-second:
		if !rec.Written || rec.New {
			t.Errorf("second record %+v, want written, not new", rec)
		}
	case err := <-failed:
		t.Fatal(err)
	}
}

// Open takes what pgx.ParseConfig takes, and says what is wrong.
func TestOpen(t *testing.T) {
	if _, err := outboxpgx.Open("postgres://%zz"); err == nil {
		t.Error("a malformed URL opened")
	}
	db, err := outboxpgx.Open(dbtest.PostgresDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ob, err := outbox.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if ob.Dialect() != outbox.PostgreSQL {
		t.Errorf("dialect %q, want %q", ob.Dialect(), outbox.PostgreSQL)
	}
	// The database's driver opens connections of its own, as
	// database/sql's drivers do.
	dc, err := db.Driver().Open(dbtest.PostgresDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	if _, ok := dc.(interface{ Conn() *pgx.Conn }); !ok {
		t.Errorf("the driver opened a %T, without Conn", dc)
	}
	if err := dc.(driver.Pinger).Ping(context.Background()); err != nil {
		t.Errorf("ping through the driver's connection: %v", err)
	}
}

// Every query exec mode pgx has (the simple protocol, say, for a
// connection pooler) begins and records the message the same.
func TestBeginInEveryQueryExecMode(t *testing.T) {
	for _, mode := range []pgx.QueryExecMode{
		pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeDescribeExec,
		pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol,
	} {
		t.Run(mode.String(), func(t *testing.T) {
			config, err := pgx.ParseConfig(dbtest.PostgresDatabase(t))
			if err != nil {
				t.Fatal(err)
			}
			config.DefaultQueryExecMode = mode
			db := outboxpgx.OpenDB(*config)
			t.Cleanup(func() { _ = db.Close() })
			if _, err := outbox.Open(context.Background(), db); err != nil {
				t.Fatal(err)
			}
			for i, want := range []bool{true, false} {
				tx, rec := begin(t, db, "m-'1") // a quote, for the simple protocol's own quoting
				if !rec.Written || rec.New != want {
					t.Errorf("begin %d: record %+v, want written, new %v", i+1, rec, want)
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
			}
			if n := inboxRows(t, db); n != 1 {
				t.Errorf("%d inbox rows, want 1", n)
			}
		})
	}
}
