// Package dbtest gives tests a real database of their own: a PostgreSQL
// database on the server .ci/ensure-postgres starts (Postgres,
// PostgresDatabase), or an SQLite file in the test's temporary directory
// (SQLite). Nothing is mocked, and a missing server fails the test.
package dbtest
