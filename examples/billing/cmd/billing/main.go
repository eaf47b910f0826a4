// Command billing runs the billing service of package billing on ZeroMQ:
// the job worker, the invoice worker and the reader of parked invoices,
// each on a PULL socket it binds.
//
// Usage:
//
//	billing [flags]
//
// The flags are:
//
//	-jobs endpoint
//		where the jobs queue binds (default tcp://127.0.0.1:5555)
//	-invoices endpoint
//		where the invoices queue binds (default tcp://127.0.0.1:5556)
//	-dead endpoint
//		where the invoices.dead queue binds (default tcp://127.0.0.1:5561)
//	-metrics address
//		serve the metrics (package runtime/promstream) in the Prometheus
//		format at http://address/metrics; empty (the default) serves
//		nothing
//	-log-level level
//		debug, info (the default), warn or error
//
// It logs to standard error and stops gracefully on SIGINT or SIGTERM.
// Send it a job from any ZeroMQ PUSH socket, for example from Python:
//
//	push = zmq.Context().socket(zmq.PUSH)
//	push.connect("tcp://127.0.0.1:5555")
//	push.send_multipart([b"jobs", b"type: Job\nmessage-id: job-1", b'{"id": 1, "amount_cents": 1250}'])
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/streamgen/streamgen/examples/billing"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/promstream"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stderr)
	var usage *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "billing:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "billing:", err)
		os.Exit(1)
	}
}

// usageError is a command line that cannot be run.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// config is what the flags say.
type config struct {
	jobs, invoices, dead string
	metrics              string
	level                slog.Level
}

// parseFlags reads the command line; usage and flag errors go to stderr.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("billing", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.jobs, "jobs", "tcp://127.0.0.1:5555", "where the jobs queue binds")
	fs.StringVar(&cfg.invoices, "invoices", "tcp://127.0.0.1:5556", "where the invoices queue binds")
	fs.StringVar(&cfg.dead, "dead", "tcp://127.0.0.1:5561", "where the invoices.dead queue binds")
	fs.StringVar(&cfg.metrics, "metrics", "", "serve the metrics in the Prometheus format at http://`address`/metrics (empty: off)")
	fs.TextVar(&cfg.level, "log-level", slog.LevelInfo, "`level`: debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return config{}, &usageError{err}
	}
	if fs.NArg() > 0 {
		return config{}, &usageError{fmt.Errorf("unexpected arguments %q: every setting is a flag", fs.Args())}
	}
	return cfg, nil
}

// run runs the service until ctx ends.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.level}))
	slog.SetDefault(logger) // the handlers log through slog.Default

	zq := zeromq.New(
		zeromq.Queue("jobs", zeromq.Bind(cfg.jobs)),
		zeromq.Queue("invoices", zeromq.Bind(cfg.invoices)),
		zeromq.Queue("invoices.dead", zeromq.Bind(cfg.dead)),
	)
	opts := []runtime.Option{runtime.WithLogger(logger)}
	reg := prometheus.NewRegistry()
	if cfg.metrics != "" {
		// The App's Observer measures each delivery; the registry
		// serves its metrics beside the Go runtime's and the process's.
		metrics := promstream.New()
		reg.MustRegister(metrics, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		opts = append(opts, runtime.WithObserver(metrics))
	}
	app := runtime.NewApp("billing", opts...)
	billing.Mount(app, zq)

	if cfg.metrics != "" {
		ln, err := net.Listen("tcp", cfg.metrics)
		if err != nil {
			return fmt.Errorf("serve metrics: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				logger.Error("the metrics server stopped", "err", err)
			}
		}()
		defer srv.Close()
		logger.Info("metrics served", "url", "http://"+ln.Addr().String()+"/metrics")
	}
	return app.Run(ctx)
}
