package outboxdb_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/streamgen/streamgen/internal/testsupport/dbtest"
	"github.com/streamgen/streamgen/runtime/outbox"
	"github.com/streamgen/streamgen/runtime/outbox/outboxdb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Open takes a PostgreSQL URL or sqlite:PATH, and the outbox works on
// either.
func TestOpen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "orders.db")
	// The SQLite file must exist: make it as a service would.
	if db, err := outboxdb.Open(ctx, "sqlite:"+path); err == nil {
		db.Close()
		t.Fatal("a missing SQLite file was opened (and made)")
	} else if !strings.Contains(err.Error(), "the SQLite file "+path) {
		t.Errorf("missing file: %v", err)
	}
	for _, dsn := range []string{dbtest.PostgresDatabase(t), "sqlite:" + sqliteFile(t)} {
		db, err := outboxdb.Open(ctx, dsn)
		if err != nil {
			t.Fatalf("%s: %v", dsn, err)
		}
		if _, err := outbox.Open(ctx, db); err != nil {
			t.Errorf("%s: %v", dsn, err)
		}
		db.Close()
	}
}

// A database it does not know, or one that does not answer, is an error
// that names the forms it takes and hides the password.
func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	for dsn, want := range map[string]string{
		"mysql://u:pw@h/db": `outboxdb: "mysql://u:xxxxx@h/db" is not a database this knows: give a postgres:// URL or sqlite:PATH`,
		"sqlite:":           "outboxdb: sqlite: names no file: give sqlite:PATH",
	} {
		if _, err := outboxdb.Open(ctx, dsn); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %s", dsn, err, want)
		}
	}
	_, err := outboxdb.Open(ctx, "postgres://u:secret@127.0.0.1:1/db?sslmode=disable&connect_timeout=2")
	if err == nil || strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "does not answer") {
		t.Errorf("a server that does not answer: %v", err)
	}
}

// sqliteFile makes an SQLite file, as a service would, and returns its
// path.
func sqliteFile(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "service.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE orders (id TEXT)"); err != nil {
		t.Fatal(err)
	}
	return path
}
