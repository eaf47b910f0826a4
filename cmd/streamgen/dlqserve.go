package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	goio "io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/streamgen/streamgen/generator"
	"github.com/streamgen/streamgen/internal/brokerurl"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/deadletter/console"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// TokenEnvVar holds the console's operator token.
const TokenEnvVar = "STREAMGEN_DLQ_TOKEN"

const serveUsage = `usage: streamgen dlq serve [-url URL] [-addr 127.0.0.1:8089] [-token T] [-allow-host NAME] [-pkg PACKAGES] [-dir DIR] QUEUE...

Serve the dead-letter console of the QUEUEs (RabbitMQ) and of the
directories DIR a ZeroMQ keeper writes, in the browser: their groups and
a chart of when letters were parked, each letter, and replay, purge and
export, each asked to confirm. Every page needs the operator token: -token,
else $` + TokenEnvVar + `, else a random one printed once with the address.

Flags:
`

// runDLQServe runs streamgen dlq serve with args (after "serve") until
// ctx ends or the process is interrupted, and returns the exit status.
func runDLQServe(ctx context.Context, args []string, io dlqIO) int {
	fs := flag.NewFlagSet("streamgen dlq serve", flag.ContinueOnError)
	fs.SetOutput(io.stderr)
	var url, addr, token string
	var pkgs, dirs, hosts multiFlag
	fs.StringVar(&url, "url", "", "the RabbitMQ `URL` (default $"+brokerurl.EnvVar+", else "+rabbitmq.RedactURL(brokerurl.DefaultRabbitMQ)+")")
	fs.StringVar(&addr, "addr", "127.0.0.1:8089", "listen on `host:port` (loopback: only this machine reaches it)")
	fs.StringVar(&token, "token", "", "the operator `token` (default $"+TokenEnvVar+"; prefer it: a flag shows in the process list)")
	fs.Var(&pkgs, "pkg", "also show the RabbitMQ dead-letter queues of the annotated `packages` (a go package pattern; repeatable)")
	fs.Var(&dirs, "dir", "also show the letters a ZeroMQ keeper (streamgen dlq keep) wrote to `DIR` (repeatable)")
	fs.Var(&hosts, "allow-host", "also answer to `name[:port]` in a request's Host, besides the address served (repeatable, or comma separated; * for any)")
	usage := func(w goio.Writer) {
		fmt.Fprint(w, serveUsage)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.stderr)
	}
	fs.Usage = func() {} // printed below, where it goes depends on why
	var queues []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				usage(io.stdout)
				return 0
			}
			usage(io.stderr) // after what Parse said is wrong
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		queues = append(queues, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(pkgs) > 0 {
		found, status := annotatedDeadLetters(ctx, pkgs, io)
		if status >= 0 {
			return status
		}
		for _, q := range found {
			if !slices.Contains(queues, q) {
				queues = append(queues, q)
			}
		}
	}
	if len(queues) == 0 && len(dirs) == 0 {
		fmt.Fprintf(io.stderr, "streamgen dlq serve: give the dead-letter QUEUEs to show, -pkg packages whose subscriptions have some, or a keeper's -dir\n")
		usage(io.stderr)
		return 2
	}
	if url == "" {
		url = brokerurl.RabbitMQ()
	}
	if token == "" {
		token = os.Getenv(TokenEnvVar)
	}
	made := token == ""
	redact := func(s string) string { return strings.ReplaceAll(s, url, rabbitmq.RedactURL(url)) }

	var stores []deadletter.Store
	// closeStores closes the stores opened so far, when serve gives up
	// before the console owns them.
	closeStores := func() {
		for _, s := range stores {
			_ = s.Close()
		}
	}
	var shown []string
	for _, q := range queues {
		s, err := rabbitmq.DialDeadLetterQueue(ctx, url, q)
		if err != nil {
			// The broker is not reached: no queue can be shown.
			closeStores()
			fmt.Fprintf(io.stderr, "streamgen dlq serve: %s: %s\n", redact(packagePrefixes.Replace(err.Error())), connectHint(err))
			return 1
		}
		if _, err := s.Len(ctx); err != nil {
			// This queue cannot be shown: the others still are.
			_ = s.Close()
			fmt.Fprintf(io.stderr, "streamgen dlq serve: warning: not shown: %s\n", queueUnusable(err, redact))
			continue
		}
		stores = append(stores, s)
		shown = append(shown, q)
	}
	if len(queues) > 0 && len(shown) == 0 && len(dirs) == 0 {
		fmt.Fprintf(io.stderr, "streamgen dlq serve: none of the queues can be shown: nothing to serve\n")
		return 1
	}
	queues = shown
	for _, d := range dirs {
		// A directory that is not there is a mistyped path: say so rather
		// than make an empty one.
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			closeStores()
			fmt.Fprintf(io.stderr, "streamgen dlq serve: %s is not a directory a keeper writes: give the -dir of streamgen dlq keep\n", d)
			return 1
		}
		s, err := zeromq.OpenDeadLetterDir(d)
		if err != nil {
			closeStores()
			fmt.Fprintf(io.stderr, "streamgen dlq serve: %s\n", packagePrefixes.Replace(err.Error()))
			return 1
		}
		stores = append(stores, s)
	}
	logger := slog.New(slog.NewTextHandler(io.stderr, nil))
	c, err := console.New(stores, console.Options{Token: token, Logger: logger, Redact: redact, AllowedHosts: hosts})
	if err != nil {
		closeStores()
		fmt.Fprintf(io.stderr, "streamgen dlq serve: %s\n", strings.TrimPrefix(err.Error(), "console: "))
		return 2
	}
	defer func() { _ = c.Close() }()

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(io.stderr, "streamgen dlq serve: cannot listen on %s: %v: give another -addr\n", addr, err)
		return 1
	}
	where := ln.Addr().(*net.TCPAddr)
	if !where.IP.IsLoopback() {
		fmt.Fprintf(io.stderr, "streamgen dlq serve: warning: %s is reached from other machines, over plain HTTP: the token and the letters cross the network as they are; prefer a loopback address and an SSH tunnel\n", where)
	}
	fmt.Fprintf(io.stdout, "the dead-letter console of %s is at http://%s/\n", strings.Join(append(slices.Clone(queues), dirs...), ", "), where)
	if made {
		fmt.Fprintf(io.stdout, "sign in with the operator token %s (made for this run and printed only here; set %s to choose one)\n", c.Token(), TokenEnvVar)
	}
	if f, ok := io.stdout.(interface{ Sync() error }); ok {
		_ = f.Sync()
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Handler: c, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		fmt.Fprintf(io.stderr, "streamgen dlq serve: %v\n", err)
		return 1
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	<-done
	return 0
}

// annotatedDeadLetters returns the dead-letter queues the RabbitMQ
// subscriptions of the packages name, in their order, or an exit status
// (>= 0) when the packages cannot be read.
func annotatedDeadLetters(ctx context.Context, patterns []string, io dlqIO) ([]string, int) {
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(io.stderr, "streamgen dlq serve: %v\n", err)
		return nil, 1
	}
	pkgs, err := generator.Generate(ctx, generator.Config{Dir: cwd}, patterns...)
	if err != nil {
		fmt.Fprintf(io.stderr, "streamgen dlq serve: -pkg: %v\n", err)
		return nil, 1
	}
	var queues []string
	problems := false
	for _, p := range pkgs {
		for _, d := range p.Diagnostics {
			fmt.Fprintf(io.stderr, "%s\n", d)
			problems = true
		}
		for _, s := range p.Subscriptions {
			for _, q := range s.Runtime.DeadLetters() {
				if s.Runtime.Broker == runtime.ZeroMQ {
					fmt.Fprintf(io.stderr, "streamgen dlq serve: %s is the dead-letter queue of ZeroMQ subscription %s, kept by a keeper, not RabbitMQ: not shown\n", q, s.Runtime.Name)
					continue
				}
				if !slices.Contains(queues, q) {
					queues = append(queues, q)
				}
			}
		}
	}
	if problems {
		fmt.Fprintf(io.stderr, "streamgen dlq serve: -pkg: the packages have problems: fix them first\n")
		return nil, 1
	}
	return queues, -1
}
