package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/brokerurl"
	"github.com/streamgen/streamgen/internal/testsupport/dbtest"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/outbox"
)

// outboxRun runs the built streamgen outbox with args and returns its
// output and exit status.
func outboxRun(t *testing.T, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"outbox"}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errOut.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run streamgen: %v", err)
	}
	return out.String(), errOut.String(), 0
}

// outboxDB opens the outbox on a database of the test's own, PostgreSQL
// or SQLite, and returns it with its -db argument.
func outboxDB(t *testing.T, kind string) (*sql.DB, *outbox.Outbox, string) {
	t.Helper()
	var db *sql.DB
	var dsn string
	if kind == "postgres" {
		dsn = dbtest.PostgresDatabase(t)
		var err error
		if db, err = sql.Open("pgx", dsn); err != nil {
			t.Fatal(err)
		}
	} else {
		path := filepath.Join(t.TempDir(), "service.db")
		dsn = "sqlite:" + path
		var err error
		if db, err = sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = db.Close() })
	ob, err := outbox.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return db, ob, dsn
}

// publishOrders commits n messages to queue through the outbox.
func publishOrders(t *testing.T, db *sql.DB, ob *outbox.Outbox, queue string, n int) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := runtime.Publish(ctx, ob.Tx(tx), runtime.Queue(queue), "OrderPlaced", map[string]int{"id": i}, runtime.WithMessageID(fmt.Sprintf("o-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// streamgen outbox status prints the backlog per route; streamgen outbox
// relay publishes it to RabbitMQ until SIGTERM, then exits 0; status then
// says nothing waits.
func TestOutboxCommandEndToEnd(t *testing.T) {
	for _, kind := range []string{"postgres", "sqlite"} {
		t.Run(kind, func(t *testing.T) {
			db, ob, dsn := outboxDB(t, kind)
			conn := testkit.DialRabbitMQ(t, brokerurl.RabbitMQ())
			q := dlqQueue(t, conn, "outbox")
			publishOrders(t, db, ob, q, 25)

			out, errOut, status := outboxRun(t, "status", "-db", dsn)
			if status != 0 || !strings.HasPrefix(out, "25 messages wait to be published; the oldest for ") ||
				!strings.Contains(out, "queue "+q) || errOut != "" {
				t.Fatalf("status: %d\n%s%s", status, out, errOut)
			}

			cmd := exec.Command(binary, "outbox", "relay", "-db", dsn, "-url", brokerurl.RabbitMQ())
			logs := &testkit.SyncBuffer{}
			cmd.Stdout, cmd.Stderr = logs, logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			testkit.Eventually(t, "the relay to publish 25 messages", func() bool { return count(t, conn, q) == 25 })
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("the relay exited with %v:\n%s", err, logs)
				}
			case <-time.After(testkit.Patience):
				_ = cmd.Process.Kill()
				t.Fatalf("the relay did not stop on SIGTERM:\n%s", logs)
			}
			if !strings.Contains(logs.String(), "outbox: relay running") || !strings.Contains(logs.String(), "outbox: relay stopped") {
				t.Errorf("logs:\n%s", logs)
			}
			if out, _, status := outboxRun(t, "status", "-db", dsn); status != 0 || out != "no message waits to be published\n" {
				t.Errorf("status after the relay: %d %q", status, out)
			}
		})
	}
}

// Misuse exits 2 with the usage; a database that cannot be had exits 1
// naming it, without its password; status never makes the tables.
func TestOutboxCommandUsage(t *testing.T) {
	if out, _, status := outboxRun(t, "-h"); status != 0 || !strings.HasPrefix(out, "usage: streamgen outbox relay -db DB [-url URL]") {
		t.Errorf("-h: %d %q", status, out)
	}
	if out, _, status := outboxRun(t, "relay", "-h"); status != 0 || !strings.Contains(out, "-db database") || !strings.Contains(out, "-url URL") {
		t.Errorf("relay -h: %d %q", status, out)
	}
	for _, args := range [][]string{{}, {"ship"}, {"status"}, {"status", "-db", "sqlite:x", "extra"}, {"relay", "-nope"}} {
		if _, errOut, status := outboxRun(t, args...); status != 2 || errOut == "" {
			t.Errorf("%v: %d %q, want 2 and the usage", args, status, errOut)
		}
	}
	missing := filepath.Join(t.TempDir(), "typo.db")
	if _, errOut, status := outboxRun(t, "status", "-db", "sqlite:"+missing); status != 1 || !strings.Contains(errOut, "the SQLite file "+missing) {
		t.Errorf("a missing file: %d %q", status, errOut)
	}
	_, errOut, status := outboxRun(t, "status", "-db", "postgres://u:secret@127.0.0.1:1/db?connect_timeout=2")
	if status != 1 || strings.Contains(errOut, "secret") || !strings.Contains(errOut, "does not answer") {
		t.Errorf("a server that does not answer: %d %q", status, errOut)
	}
	plain := filepath.Join(t.TempDir(), "plain.db")
	db, err := sql.Open("sqlite", plain)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE orders (id TEXT)"); err != nil {
		t.Fatal(err)
	}
	dsn := "sqlite:" + plain
	if _, errOut, status := outboxRun(t, "status", "-db", dsn); status != 1 || !strings.Contains(errOut, "has no outbox table") {
		t.Errorf("a database without the outbox: %d %q", status, errOut)
	}
}
