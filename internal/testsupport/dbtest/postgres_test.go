package dbtest_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/streamgen/streamgen/internal/testsupport/dbtest"
)

// A test's database is its own: empty when made, gone when the test ends.
func TestPostgresDatabaseIsTheTestsOwn(t *testing.T) {
	var url string
	t.Run("use", func(t *testing.T) {
		db := dbtest.Postgres(t)
		if _, err := db.ExecContext(context.Background(), "CREATE TABLE t (n int)"); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRowContext(context.Background(), "SELECT current_database()").Scan(&url); err != nil {
			t.Fatal(err)
		}
	})
	admin, err := sql.Open("pgx", dbtest.PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var n int
	if err := admin.QueryRow("SELECT count(*) FROM pg_database WHERE datname = $1", url).Scan(&n); err != nil || n != 0 {
		t.Fatalf("database %s after its test: %d (%v), want gone", url, n, err)
	}
}
