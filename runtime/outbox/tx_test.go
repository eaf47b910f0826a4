package outbox_test

import (
	"bytes"
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/dbtest"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/outbox"
)

// databases runs fn on a PostgreSQL database and an SQLite file of the
// test's own.
func databases(t *testing.T, fn func(t *testing.T, db *sql.DB)) {
	t.Run("postgres", func(t *testing.T) { fn(t, dbtest.Postgres(t)) })
	t.Run("sqlite", func(t *testing.T) { fn(t, sqliteDB(t)) })
}

// sqliteDB opens an SQLite file of the test's own as docs/outbox.md tells
// users to: in WAL mode, where readers do not block the writer, and
// waiting up to 5 seconds for the write lock instead of failing at once.
func sqliteDB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+dbtest.SQLitePath(t)+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close the database: %v", err)
		}
	})
	return db
}

type order struct {
	ID int `json:"id"`
}

// A message published in a transaction that rolls back leaves no row; one
// published in a transaction that commits is a row with everything the
// message carries.
func TestTxWritesTheMessageWithItsTransaction(t *testing.T) {
	databases(t, func(t *testing.T, db *sql.DB) {
		ctx := context.Background()
		ob, err := outbox.Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := outbox.Open(ctx, db); err != nil { // again: the tables are there
			t.Fatalf("a second Open: %v", err)
		}
		publish := func(id int, commit bool) {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = runtime.Publish(ctx, ob.Tx(tx), runtime.Queue("orders"), "OrderPlaced", order{ID: id},
				runtime.WithMessageID("m-"+string(rune('0'+id))), runtime.WithHeader("tenant", "acme"),
				runtime.WithProperties(runtime.Properties{CorrelationID: "c", Priority: 3, Timestamp: time.Unix(1700000000, 0).UTC()}))
			if err != nil {
				t.Fatal(err)
			}
			if commit {
				err = tx.Commit()
			} else {
				err = tx.Rollback()
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		publish(1, false)
		publish(2, true)
		rows, err := db.QueryContext(ctx, "SELECT exchange, route, message_id, message_type, content_type, headers, properties, body FROM streamgen_outbox ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var got int
		for rows.Next() {
			got++
			var exchange, route, id, typ, ct, headers, props string
			var body []byte
			if err := rows.Scan(&exchange, &route, &id, &typ, &ct, &headers, &props, &body); err != nil {
				t.Fatal(err)
			}
			if exchange != "" || route != "orders" || id != "m-2" || typ != "OrderPlaced" || ct != "application/json" ||
				headers != `{"tenant":"acme"}` || !bytes.Equal(body, []byte(`{"id":2}`)) ||
				props != `{"correlation_id":"c","priority":3,"timestamp":"2023-11-14T22:13:20Z"}` {
				t.Errorf("row %q %q %q %q %q %s %s %s", exchange, route, id, typ, ct, headers, props, body)
			}
		}
		if err := rows.Err(); err != nil || got != 1 {
			t.Fatalf("%d rows (%v), want the committed message alone", got, err)
		}
	})
}

// WithoutMigration leaves the database as it is, and Open fails when the
// outbox table is missing.
func TestWithoutMigration(t *testing.T) {
	databases(t, func(t *testing.T, db *sql.DB) {
		ctx := context.Background()
		_, err := outbox.Open(ctx, db, outbox.WithoutMigration())
		if err == nil || !strings.Contains(err.Error(), "the database has no outbox table (streamgen_outbox)") {
			t.Fatalf("Open on an empty database: %v", err)
		}
		tables := "SELECT count(*) FROM sqlite_master WHERE name LIKE 'streamgen%'"
		if strings.HasSuffix(t.Name(), "/postgres") {
			tables = "SELECT count(*) FROM information_schema.tables WHERE table_name LIKE 'streamgen%'"
		}
		var n int
		if err := db.QueryRowContext(ctx, tables).Scan(&n); err != nil || n != 0 {
			t.Fatalf("%d tables made (%v), want none", n, err)
		}
		open(t, db)
		if _, err := outbox.Open(ctx, db, outbox.WithoutMigration()); err != nil {
			t.Errorf("Open once the tables exist: %v", err)
		}
	})
}
