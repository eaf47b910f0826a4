package outbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/streamgen/streamgen/runtime/outbox"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

// relayChildEnv holds the PostgreSQL URL and the RabbitMQ URL, separated
// by a space, of the relay that the test binary, run again with it set,
// runs until SIGTERM (see TestMain and runRelayChild): the fault test
// kills it with SIGKILL.
const relayChildEnv = "STREAMGEN_TEST_OUTBOX_RELAY"

func TestMain(m *testing.M) {
	if v := os.Getenv(relayChildEnv); v != "" {
		os.Exit(runRelayChild(v))
	}
	goleak.VerifyTestMain(m)
}

// runRelayChild runs a relay of the outbox at the PostgreSQL URL through
// the RabbitMQ URL (urls: both, separated by a space) until SIGTERM, and
// returns the process's exit status.
func runRelayChild(urls string) int {
	var dbURL, amqpURL string
	if _, err := fmt.Sscan(urls, &dbURL, &amqpURL); err != nil {
		fmt.Fprintln(os.Stderr, "relay child:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay child:", err)
		return 1
	}
	defer db.Close()
	var ob *outbox.Outbox
	for {
		// The database may be restarting: Open is tried until it answers.
		ob, err = outbox.Open(ctx, db, outbox.WithLogger(log), outbox.WithPollInterval(200*time.Millisecond),
			outbox.WithRetryBackoff(100*time.Millisecond, time.Second), outbox.WithBatchSize(200))
		if err == nil || ctx.Err() != nil {
			break
		}
		log.Warn("relay child: open the outbox", "err", err)
		time.Sleep(200 * time.Millisecond)
	}
	if ctx.Err() != nil {
		return 0
	}
	rb := rabbitmq.New(amqpURL, rabbitmq.WithConnectionName("streamgen-test-outbox-relay"), rabbitmq.WithLogger(log),
		rabbitmq.WithConfirmTimeout(5*time.Second))
	defer rb.Close()
	if err := ob.Relay(rb).Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "relay child:", err)
		return 1
	}
	return 0
}
