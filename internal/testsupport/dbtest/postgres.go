package dbtest

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	// The PostgreSQL driver the tests use (database/sql name "pgx").
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
)

// PostgresURL is the PostgreSQL server the tests use:
// STREAMGEN_POSTGRES_URL, else the cluster .ci/ensure-postgres starts on
// 127.0.0.1:5433.
func PostgresURL() string {
	if u := os.Getenv("STREAMGEN_POSTGRES_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5433/postgres?sslmode=disable"
}

// PostgresDatabase makes a database of the test's own on the server at
// PostgresURL, dropped when the test ends, and returns its URL. When the
// server does not answer it fails t saying how to start one: database
// tests are never skipped.
func PostgresDatabase(t testing.TB) string {
	t.Helper()
	admin, err := sql.Open("pgx", PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
	defer cancel()
	if err := admin.PingContext(ctx); err != nil {
		t.Fatalf("PostgreSQL does not answer at %s (%v): start one with .ci/ensure-postgres, or point STREAMGEN_POSTGRES_URL at one",
			redactedURL(PostgresURL()), err)
	}
	name := strings.ReplaceAll(testkit.UniqueName("streamgen_test"), ".", "_")
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// Postgres opens a database of the test's own (PostgresDatabase) with the
// pgx driver, closed when the test ends.
func Postgres(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", PostgresDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	db.SetConnMaxIdleTime(time.Minute)
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close the database: %v", err)
		}
	})
	return db
}

// redactedURL is rawURL with its password hidden.
func redactedURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(an unreadable URL)"
	}
	return u.Redacted()
}
