// Command orders runs the orders service of package orders on RabbitMQ: it
// declares the topic exchange orders, orders.received and orders.audit
// bound to it, the wait queues of the retry ladder and orders.parked, and
// consumes orders.received and orders.audit.
//
// Usage:
//
//	orders [flags]
//
// The flags are:
//
//	-url URL
//		the broker (default: $STREAMGEN_RABBITMQ_URL, else
//		amqp://guest:guest@127.0.0.1:5672/); its password never appears
//		in the log
//	-metrics address
//		serve the metrics (package runtime/promstream) in the Prometheus
//		format at http://address/metrics; empty (the default) serves
//		nothing
//	-log-level level
//		debug, info (the default), warn or error
//
// It logs to standard error and stops gracefully on SIGINT or SIGTERM:
// handlers running finish and settle, deliveries not started go back to
// the broker.
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

	"github.com/streamgen/streamgen/examples/orders"
	"github.com/streamgen/streamgen/internal/brokerurl"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/promstream"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stderr)
	var usage *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "orders:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "orders:", err)
		os.Exit(1)
	}
}

// usageError is a command line that cannot be run.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// config is what the flags say.
type config struct {
	url     string
	metrics string
	level   slog.Level
}

// parseFlags reads the command line; usage and flag errors go to stderr.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("orders", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.url, "url", brokerurl.RabbitMQ(), "the RabbitMQ `URL`")
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
	return serve(ctx, cfg, rabbitmq.New(cfg.url, rabbitmq.WithConnectionName("orders")), logger)
}

// serve runs the orders service on b until ctx ends.
func serve(ctx context.Context, cfg config, b runtime.Broker, logger *slog.Logger) error {
	opts := []runtime.Option{runtime.WithLogger(logger)}
	reg := prometheus.NewRegistry()
	if cfg.metrics != "" {
		// The App's Observer measures each delivery; the registry
		// serves its metrics beside the Go runtime's and the process's.
		metrics := promstream.New()
		reg.MustRegister(metrics, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		opts = append(opts, runtime.WithObserver(metrics))
	}
	app := runtime.NewApp("orders", opts...)
	orders.Mount(app, b)
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
