// Package outboxdb opens the database of an outbox (package
// runtime/outbox) from one string, as streamgen outbox takes it with -db:
//
//	db, err := outboxdb.Open(ctx, "postgres://app@db.internal:5432/orders")
//	db, err := outboxdb.Open(ctx, "sqlite:/var/lib/orders/orders.db")
//
// It links both drivers, github.com/jackc/pgx/v5/stdlib (through package
// outboxpgx) and modernc.org/sqlite: a service opens its own database
// with the driver it uses, and passes it to outbox.Open.
package outboxdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	// SQLite's driver; PostgreSQL's is pgx's, through outboxpgx.
	_ "modernc.org/sqlite"

	"github.com/streamgen/streamgen/runtime/outbox/outboxpgx"
)

// Open opens and pings the database named by dsn: a PostgreSQL URL
// (postgres:// or postgresql://, as libpq takes it), or sqlite:PATH, an
// SQLite file that must exist (so that a mistyped path is an error, not a
// new empty database), opened to wait up to 5 seconds for the write lock.
// Errors never show a password.
func Open(ctx context.Context, dsn string) (*sql.DB, error) {
	var db *sql.DB
	var err error
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		db, err = outboxpgx.Open(dsn) // pgx's driver, the inbox's record sent with BEGIN
	case strings.HasPrefix(dsn, "sqlite:"):
		path := strings.TrimPrefix(dsn, "sqlite:")
		if path == "" {
			return nil, errors.New("outboxdb: sqlite: names no file: give sqlite:PATH")
		}
		if _, serr := os.Stat(path); serr != nil {
			return nil, fmt.Errorf("outboxdb: the SQLite file %s: %w: give the path of the service's database", path, serr)
		}
		db, err = sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	default:
		return nil, fmt.Errorf("outboxdb: %q is not a database this knows: give a postgres:// URL or sqlite:PATH", Redact(dsn))
	}
	if err != nil {
		return nil, fmt.Errorf("outboxdb: open %s: %w", Redact(dsn), err)
	}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("outboxdb: %s does not answer: %s", Redact(dsn), strings.ReplaceAll(err.Error(), dsn, Redact(dsn)))
	}
	return db, nil
}

// Redact returns dsn with the password of a URL hidden.
func Redact(dsn string) string {
	if strings.HasPrefix(dsn, "sqlite:") {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "(a database URL that does not parse)"
	}
	return u.Redacted()
}
