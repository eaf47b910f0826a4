package dbtest

import (
	"database/sql"
	"path/filepath"
	"testing"

	// The pure-Go SQLite driver (database/sql name "sqlite").
	_ "modernc.org/sqlite"
)

// SQLitePath is the path of a new SQLite database file in the test's
// temporary directory.
func SQLitePath(t testing.TB) string {
	return filepath.Join(t.TempDir(), "test.db")
}

// SQLite opens a new SQLite database file of the test's own, closed when
// the test ends.
func SQLite(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", SQLitePath(t))
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
