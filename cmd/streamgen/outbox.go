package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os/signal"
	"strings"
	"syscall"

	"github.com/streamgen/streamgen/internal/brokerurl"
	"github.com/streamgen/streamgen/runtime/outbox"
	"github.com/streamgen/streamgen/runtime/outbox/outboxdb"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

const outboxUsage = `usage: streamgen outbox relay -db DB [-url URL]
       streamgen outbox status -db DB

Work with the transactional outbox in a service's database (package
runtime/outbox). DB is a PostgreSQL URL (postgres://...) or sqlite:PATH.

Commands:
  relay    publish the messages committed to the outbox to RabbitMQ, each removed
           once the broker confirmed it, until interrupted (SIGINT, SIGTERM);
           several relays may run on one PostgreSQL database, one on SQLite
  status   print how many messages wait to be published, and since when, per route

Run streamgen outbox COMMAND -h for the flags of a command.
`

// runOutbox runs streamgen outbox with args (after "outbox") and returns
// the exit status: 0, 1 for an error, 2 for bad usage.
func runOutbox(ctx context.Context, args []string, io dlqIO) int {
	if len(args) == 0 {
		fmt.Fprint(io.stderr, outboxUsage)
		return 2
	}
	var run func(ctx context.Context, ob *outbox.Outbox, url string, log *slog.Logger, io dlqIO) error
	summary := ""
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(io.stdout, outboxUsage)
		return 0
	case "relay":
		run, summary = outboxRelay, "Publish the messages committed to the outbox in DB to RabbitMQ at URL, each removed once the broker confirmed it, until interrupted"
	case "status":
		run, summary = outboxStatus, "Print how many messages the outbox in DB holds, and how long the oldest has waited, per route"
	default:
		fmt.Fprintf(io.stderr, "streamgen outbox: unknown command %q\n\n%s", args[0], outboxUsage)
		return 2
	}
	name := args[0]
	fs := flag.NewFlagSet("streamgen outbox "+name, flag.ContinueOnError)
	fs.SetOutput(io.stderr)
	dsn := fs.String("db", "", "the service's `database`: a postgres:// URL, or sqlite:PATH")
	url := new(string)
	if name == "relay" {
		// The default is resolved after parsing, so that -h never prints a
		// password the environment holds.
		fs.StringVar(url, "url", "", "the RabbitMQ `URL` (default $"+brokerurl.EnvVar+", else "+rabbitmq.RedactURL(brokerurl.DefaultRabbitMQ)+")")
	}
	form := "-db DB"
	if name == "relay" {
		form += " [-url URL]"
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: streamgen outbox %s %s\n\n%s.\n\nFlags:\n", name, form, summary)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(io.stdout)
			fs.Usage()
			return 0
		}
		return 2
	}
	if *dsn == "" || fs.NArg() > 0 {
		fmt.Fprintf(io.stderr, "streamgen outbox %s: give -db DB, and nothing else\n", name)
		fs.Usage()
		return 2
	}
	if *url == "" {
		*url = brokerurl.RabbitMQ()
	}
	redact := func(err error) string {
		msg := strings.ReplaceAll(strings.ReplaceAll(err.Error(), "outboxdb: ", ""), "outbox: ", "")
		return strings.ReplaceAll(msg, *url, rabbitmq.RedactURL(*url))
	}
	db, err := outboxdb.Open(ctx, *dsn)
	if err != nil {
		fmt.Fprintf(io.stderr, "streamgen outbox %s: %s\n", name, redact(err))
		return 1
	}
	defer func() { _ = db.Close() }()
	log := slog.New(slog.NewTextHandler(io.stderr, nil))
	opts := []outbox.OpenOption{outbox.WithLogger(log)}
	if name == "status" {
		opts = append(opts, outbox.WithoutMigration())
	}
	ob, err := outbox.Open(ctx, db, opts...)
	if err == nil {
		err = run(ctx, ob, *url, log, io)
	}
	if err != nil {
		fmt.Fprintf(io.stderr, "streamgen outbox %s: %s\n", name, redact(err))
		return 1
	}
	return 0
}

// outboxRelay runs a relay until SIGINT or SIGTERM (or ctx ends), logging
// to standard error.
func outboxRelay(ctx context.Context, ob *outbox.Outbox, url string, log *slog.Logger, _ dlqIO) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rb := rabbitmq.New(url, rabbitmq.WithConnectionName("streamgen-outbox-relay"), rabbitmq.WithLogger(log))
	defer func() { _ = rb.Close() }()
	return ob.Relay(rb).Run(ctx)
}

// outboxStatus prints the outbox's status.
func outboxStatus(ctx context.Context, ob *outbox.Outbox, _ string, _ *slog.Logger, io dlqIO) error {
	st, err := ob.Status(ctx)
	if err != nil {
		return err
	}
	return st.WriteText(io.stdout)
}
