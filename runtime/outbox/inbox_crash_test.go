package outbox_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/dbtest"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/outbox"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

// inboxWorkerEnv holds, in the test binary run again as a worker (see
// runInboxWorker), what it works on: the queue, the database driver and
// the database's address, separated by spaces.
const inboxWorkerEnv = "STREAMGEN_TEST_INBOX_WORKER"

// init makes the test binary, run again with inboxWorkerEnv set, the
// worker of the crash test: it runs before TestMain and the tests, and
// exits with the worker's status.
func init() {
	if spec := os.Getenv(inboxWorkerEnv); spec != "" {
		os.Exit(runInboxWorker(spec))
	}
}

// inboxCrashExit is the exit status of a worker that ended itself after a
// handler's transaction committed and before the message's ack.
const inboxCrashExit = 3

// runInboxWorker is the worker of TestInboxKilledAfterCommitHandlesEachMessageOnce:
// a *sql.Tx handler on queue that writes one effect row per call, and a
// middleware that ends the process when a call returns having committed
// (an ack that is not a duplicate), so that the message is never acked.
// It runs until SIGTERM and returns the exit status.
func runInboxWorker(spec string) int {
	f := strings.Fields(spec)
	if len(f) != 3 {
		fmt.Fprintf(os.Stderr, "inbox worker: %s=%q, want queue, driver and address\n", inboxWorkerEnv, spec)
		return 1
	}
	queue, driver, dsn := f[0], f[1], f[2]
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	db, err := openDriver(driver, dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, "inbox worker:", err)
		return 1
	}
	defer db.Close()
	ob, err := outbox.Open(ctx, db)
	if err != nil {
		fmt.Fprintln(os.Stderr, "inbox worker:", err)
		return 1
	}
	insert := rebind(ob, "INSERT INTO effects (message_id, attempt) VALUES (?, ?)")
	exitAfterCommit := func(ctx context.Context, msg any, md runtime.Metadata, next runtime.Next) runtime.Outcome {
		out := next(ctx, msg, md)
		if out.Action() == runtime.ActionAck && !out.Duplicate() {
			os.Exit(inboxCrashExit) // committed, not acked: as if killed here
		}
		return out
	}
	broker := rabbitmq.New(testkit.RabbitMQURL(), rabbitmq.WithConnectionName("streamgen-test-inbox-worker"))
	app := runtime.NewApp("inbox-worker",
		runtime.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))),
		ob.Option(broker),
		runtime.WithMiddleware(exitAfterCommit))
	app.Mount(broker, &runtime.Subscription{Name: queue, Prefetch: 1, Handlers: []runtime.Handler{
		runtime.HandleJSON[order]("Order", runtime.Policy{}, nil, func(ctx context.Context, tx *sql.Tx, o order, md runtime.Metadata) error {
			_, err := tx.ExecContext(ctx, insert, md.MessageID, md.Attempt)
			return err
		}),
	}})
	if err := app.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "inbox worker:", err)
		return 1
	}
	return 0
}

// The test: a worker killed after a handler's commit and before
// its ack, once for each of 100 messages (100 kills, a worker started
// again after each), on PostgreSQL (opened as pgx opens it and as
// package outboxpgx does) and on SQLite. Every message's effect
// row exists exactly once: each redelivery of a committed message is
// acknowledged as a duplicate, without a second call. The worker is the
// test binary run again; it ends itself with os.Exit at the exact point,
// in a middleware that sees the committed outcome before the Consumer
// acks, so the broker holds the message unacknowledged and delivers it
// again to the next worker.
func TestInboxKilledAfterCommitHandlesEachMessageOnce(t *testing.T) {
	const messages = 100
	t.Run("postgres", func(t *testing.T) {
		crashLoop(t, "pgx", dbtest.PostgresDatabase(t), messages)
	})
	t.Run("postgres-outboxpgx", func(t *testing.T) {
		crashLoop(t, "outboxpgx", dbtest.PostgresDatabase(t), messages)
	})
	t.Run("sqlite", func(t *testing.T) {
		crashLoop(t, "sqlite", "file:"+dbtest.SQLitePath(t)+sqliteDSN, messages)
	})
}

// crashLoop runs the crash test on the database driver opens at dsn.
func crashLoop(t *testing.T, driver, dsn string, messages int) {
	ctx := context.Background()
	db := openDB(t, driver, dsn)
	if _, err := outbox.Open(ctx, db); err != nil {
		t.Fatal(err)
	}
	execSQL(t, db, effects)
	queue := testkit.UniqueName("streamgen-test.inbox-crash")
	conn := testkit.DialRabbitMQ(t, testkit.RabbitMQURL())
	t.Cleanup(func() {
		if ch, err := conn.Channel(); err == nil {
			for _, q := range []string{queue, queue + ".suspect"} {
				_, _ = ch.QueueDelete(q, false, false, false)
			}
			_ = ch.Close()
		}
	})
	publisher := rabbitmq.New(testkit.RabbitMQURL(), rabbitmq.WithConnectionName("streamgen-test-inbox-publisher"))
	t.Cleanup(func() { _ = publisher.Close() })

	kills, duplicates, crashed, published := 0, 0, 0, false
	for run := 1; ; run++ {
		if run > messages+5 {
			t.Fatalf("%d worker runs, %d kills: the messages are not all handled", run-1, kills)
		}
		out := &testkit.SyncBuffer{}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), inboxWorkerEnv+"="+queue+" "+driver+" "+dsn)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		if !published {
			testkit.Eventually(t, "the worker to declare its queue", func() bool { return queueExists(conn, queue) })
			for i := range messages {
				if err := runtime.Publish(ctx, publisher, runtime.Queue(queue), "Order", order{ID: i}, runtime.WithMessageID(fmt.Sprintf("m-%03d", i))); err != nil {
					t.Fatal(err)
				}
			}
			published = true
		}
		if kills == messages {
			// Every message was committed once; this worker acks what is
			// left, each a duplicate: the last one killed, and those a
			// crash set aside to run alone later (the suspect queue), and
			// then has nothing to do.
			deadline := time.After(2 * time.Minute)
			for duplicates+strings.Count(out.String(), "duplicate message acknowledged")+crashed+strings.Count(out.String(), "crashed the worker") < messages {
				select {
				case err := <-exited:
					t.Fatalf("worker run %d ended (%v) after the %d messages had each committed once: a message was handled again\n%s", run, err, messages, out)
				case <-deadline:
					_ = cmd.Process.Kill()
					t.Fatalf("worker run %d did not acknowledge every message left as a duplicate in 2 minutes:\n%s", run, out)
				case <-time.After(20 * time.Millisecond):
				}
			}
			_ = cmd.Process.Signal(syscall.SIGTERM)
			if err := <-exited; err != nil {
				t.Fatalf("the last worker did not stop cleanly: %v\n%s", err, out)
			}
			duplicates += strings.Count(out.String(), "duplicate message acknowledged")
			crashed += strings.Count(out.String(), "crashed the worker")
			break
		}
		select {
		case err := <-exited:
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != inboxCrashExit {
				t.Fatalf("worker run %d ended with %v, want exit status %d after a commit:\n%s", run, err, inboxCrashExit, out)
			}
			kills++
			duplicates += strings.Count(out.String(), "duplicate message acknowledged")
			crashed += strings.Count(out.String(), "crashed the worker")
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			t.Fatalf("worker run %d neither committed a message nor ended in 2 minutes:\n%s", run, out)
		}
	}

	if kills != messages {
		t.Errorf("%d kills after a commit, want %d: one per message", kills, messages)
	}
	// Each killed message comes back once its worker died, and is then
	// acknowledged as a duplicate; or, when a later kill found it in hand
	// too (set aside to run alone after the kill, it waited for the next
	// message's handler, whose commit was killed), the crash limit parks
	// it without a call. Either way its handler ran once.
	if duplicates+crashed != messages || duplicates == 0 {
		t.Errorf("%d duplicates acknowledged and %d parked for crashing the worker, want %d in all, most of them duplicates: each killed message once", duplicates, crashed, messages)
	}
	if n := count(t, db, "SELECT count(*) FROM effects"); n != messages {
		t.Errorf("%d effect rows, want %d", n, messages)
	}
	if n := count(t, db, "SELECT count(DISTINCT message_id) FROM effects"); n != messages {
		t.Errorf("%d messages have an effect row, want %d", n, messages)
	}
	if n := count(t, db, "SELECT count(*) FROM (SELECT message_id FROM effects GROUP BY message_id HAVING count(*) > 1) AS twice"); n != 0 {
		t.Errorf("%d messages have more than one effect row", n)
	}
	if n := count(t, db, "SELECT count(*) FROM streamgen_inbox"); n != messages {
		t.Errorf("%d inbox records, want %d", n, messages)
	}
	if info, err := queueInfo(conn, queue); err != nil || info.Messages != 0 {
		t.Errorf("queue %s holds %d messages (%v), want none", queue, info.Messages, err)
	}
}

// queueExists reports whether queue is declared.
func queueExists(conn *amqp.Connection, queue string) bool {
	_, err := queueInfo(conn, queue)
	return err == nil
}

// queueInfo inspects queue with a passive declare on a channel of its own
// (a failed one closes its channel).
func queueInfo(conn *amqp.Connection, queue string) (amqp.Queue, error) {
	ch, err := conn.Channel()
	if err != nil {
		return amqp.Queue{}, err
	}
	defer func() { _ = ch.Close() }()
	return ch.QueueDeclarePassive(queue, true, false, false, false, nil)
}
