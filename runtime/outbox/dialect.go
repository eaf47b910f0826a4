package outbox

import (
	"database/sql"
	"fmt"
	"reflect"
	"strings"
)

// Dialect is the SQL database an Outbox works on.
type Dialect string

// The databases an Outbox works on.
const (
	// PostgreSQL, through github.com/jackc/pgx/v5/stdlib (driver "pgx"),
	// or opened with package outboxpgx.
	PostgreSQL Dialect = "postgres"
	// SQLite, through modernc.org/sqlite (driver "sqlite"), pure Go.
	SQLite Dialect = "sqlite"
)

// dialectOf tells db's dialect from its driver's package.
func dialectOf(db *sql.DB) (Dialect, error) {
	t := reflect.TypeOf(db.Driver())
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	pkg := t.PkgPath()
	switch {
	case strings.HasPrefix(pkg, "github.com/jackc/pgx/"), strings.HasPrefix(pkg, "github.com/lib/pq"),
		pkg == "github.com/streamgen/streamgen/runtime/outbox/outboxpgx":
		return PostgreSQL, nil
	case strings.HasPrefix(pkg, "modernc.org/sqlite"), strings.HasPrefix(pkg, "github.com/mattn/go-sqlite3"):
		return SQLite, nil
	}
	return "", fmt.Errorf("outbox: the database's driver %s.%s is not one the outbox knows: open PostgreSQL with github.com/jackc/pgx/v5/stdlib, or SQLite with modernc.org/sqlite", pkg, t.Name())
}
