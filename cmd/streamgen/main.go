// Command streamgen generates the broker wiring of annotated message
// handlers: for each package, one file (streamgen_gen.go) with a Mount
// function that registers the package's subscriptions on a runtime.App, and
// typed publishers: one per //stream:publisher directive, and one per
// handler whose queue is not bound to an exchange.
//
// Usage:
//
//	streamgen [-check] [-o file] [packages]
//	streamgen [-check] -asyncapi file [-asyncapi-title title] [-asyncapi-version version] [packages]
//	streamgen -version
//	streamgen dlq COMMAND [flags] QUEUE
//	streamgen dlq serve [-url URL] [-addr 127.0.0.1:8089] [-token T] QUEUE...
//	streamgen outbox relay -db DB [-url URL]
//	streamgen outbox status -db DB
//
// streamgen dlq works with the dead letters of a RabbitMQ dead-letter
// queue: ls, show, replay, purge, export and import (streamgen dlq -h; the
// guide's docs/dead-letters.md; package runtime/deadletter).
// streamgen dlq serve serves the dead-letter console of the queues in the
// browser (package runtime/deadletter/console).
//
// streamgen outbox relay publishes the messages a service committed to
// the transactional outbox in its database (DB: a postgres:// URL or
// sqlite:PATH) to RabbitMQ, until interrupted; streamgen outbox status
// prints how many wait and for how long (package runtime/outbox; the
// guide's docs/outbox.md).
//
// Packages are patterns as the go command takes them; the default is the
// package in the current directory. Mark a handler with a directive in its
// doc comment:
//
//	//stream:subscriber "jobs" broker=zeromq max_attempts=5 out_retry=self
//	func Work(ctx context.Context, job Job) error { ... }
//
// and run streamgen from go generate:
//
//	//go:generate go tool streamgen
//
// after adding it as a tool of the module (go get -tool
// github.com/streamgen/streamgen/cmd/streamgen), or run it without
// installing anything:
//
//	go run github.com/streamgen/streamgen/cmd/streamgen
//
// The flags are:
//
//	-check
//		Generate in memory and compare with the file on disk. Exit with
//		status 1 and say so when the file is stale or missing; write
//		nothing. Meant for CI.
//	-o file
//		The name of the generated file in each package
//		(default streamgen_gen.go).
//	-asyncapi file
//		Instead of the Go files, write one AsyncAPI 3.0 document that
//		describes every subscription and publisher of the packages: a
//		channel per queue (wait and dead-letter queues included) and per
//		RabbitMQ exchange, a receive operation per handler with its policy
//		as x-streamgen-* fields, a send operation per publisher and per
//		kind of retry or dead-letter copy, and a message per
//		message type with the JSON Schema of its Go type. A .yaml or .yml
//		file gets YAML, a .json file JSON, - writes YAML to standard output.
//		With -check, compare the document with the file instead.
//	-asyncapi-title title, -asyncapi-version version
//		The document's info.title (default: the package path, or the
//		module path for several packages) and info.version (default 0.0.0).
//	-version
//		Print the version of the streamgen module the command was built
//		from, and exit.
//
// -h prints the usage on standard output and exits with status 0; a flag
// that is wrong exits with status 2.
//
// Every problem found is printed as file:line:col: message, with the fix in
// the message, and streamgen exits with status 1 without writing any file
// (an existing one is kept). The annotation keys and the handler shapes are
// described in the documentation of package
// github.com/streamgen/streamgen/generator.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/streamgen/streamgen/generator"
)

func main() {
	if len(os.Args) > 1 {
		for _, sc := range subcommands() {
			if os.Args[1] == sc.name {
				os.Exit(sc.run(context.Background(), os.Args[2:], dlqIO{os.Stdin, os.Stdout, os.Stderr, isTerminal(os.Stdin), isTerminal(os.Stderr)}))
			}
		}
	}
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// subcommand is a command of streamgen's own, named by its first argument.
type subcommand struct {
	name string
	// usage is its usage line after "streamgen ", summary what it does.
	usage, summary string
	// run runs it with the arguments after its name and returns the exit
	// status.
	run func(ctx context.Context, args []string, io dlqIO) int
}

// subcommands are streamgen's subcommands: main runs them, and the usage
// lists them.
func subcommands() []subcommand {
	return []subcommand{
		{name: "dlq", usage: "dlq COMMAND [flags] QUEUE",
			summary: "the dead letters of a RabbitMQ dead-letter queue or a ZeroMQ keeper's directory: ls, show, replay, purge, export, import, keep, serve (streamgen dlq -h)",
			run:     runDLQ},
		{name: "outbox", usage: "outbox relay|status -db DB",
			summary: "publish what services committed to a transactional outbox (relay), or show its backlog (status) (streamgen outbox -h)",
			run:     runOutbox},
	}
}

// run is main with its inputs and outputs passed in; it returns the exit
// status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("streamgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	check := fs.Bool("check", false, "compare the generated file with the one on disk; exit 1 when it is stale")
	output := fs.String("o", generator.DefaultOutput, "name of the generated `file` in each package")
	version := fs.Bool("version", false, "print the version of streamgen and exit")
	jsonDecoders := fs.Bool("json-decoders", true, "write a JSON decoder for each message type it can (false: encoding/json decodes every body; give -check the same)")
	asyncapi := addAsyncAPIFlags(fs)
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "usage: streamgen [-check] [-o file] [-json-decoders=false] [packages]\n")
		fmt.Fprintf(w, "       streamgen [-check] -asyncapi file [-asyncapi-title title] [-asyncapi-version version] [packages]\n")
		fmt.Fprintf(w, "       streamgen -version\n")
		cmds := subcommands()
		for _, sc := range cmds {
			fmt.Fprintf(w, "       streamgen %s\n", sc.usage)
		}
		fmt.Fprintf(w, "\nCommands:\n")
		for _, sc := range cmds {
			fmt.Fprintf(w, "  %-8s %s\n", sc.name, sc.summary)
		}
		fmt.Fprintf(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	fs.Usage = func() {} // printed below, where it goes depends on why
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			// Asked for: no failure, and on standard output.
			usage(stdout)
			return 0
		}
		usage(stderr) // after what Parse said is wrong
		return 2
	}
	if *version {
		info, _ := debug.ReadBuildInfo()
		fmt.Fprintln(stdout, versionLine(info))
		return 0
	}
	if msg := asyncapi.misuse(fs, *check); msg != "" {
		fmt.Fprintf(stderr, "streamgen: %s\n", msg)
		return 2
	}
	cwd, err := os.Getwd()
	if err != nil {
		fail(stderr, err)
		return 1
	}
	pkgs, err := generator.Generate(ctx, generator.Config{Dir: cwd, Output: *output, NoJSONDecoders: !*jsonDecoders}, fs.Args()...)
	if err != nil {
		fail(stderr, err)
		return 1
	}
	status := 0
	for _, p := range pkgs {
		for _, d := range p.Diagnostics {
			if d.Pos.Filename == "" {
				fmt.Fprintf(stderr, "streamgen: %s: %s\n", p.Path, d.Format(cwd))
			} else {
				fmt.Fprintln(stderr, d.Format(cwd))
			}
			status = 1
		}
	}
	if status != 0 {
		return status
	}
	// A pattern with "..." may match packages without handlers; those are
	// skipped. A package named on its own must have some.
	wildcard := slices.ContainsFunc(fs.Args(), func(a string) bool { return strings.Contains(a, "...") })
	var annotated []*generator.Package
	for _, p := range pkgs {
		switch {
		case p.Annotated:
			annotated = append(annotated, p)
		case !wildcard:
			fmt.Fprintf(stderr, "streamgen: package %s has no //stream:subscriber or //stream:publisher directives\n", p.Path)
			status = 1
		}
	}
	if wildcard && len(annotated) == 0 {
		fmt.Fprintf(stderr, "streamgen: no package matched by %s has //stream:subscriber annotations\n", strings.Join(fs.Args(), " "))
		status = 1
	}
	if status != 0 {
		return status
	}
	if asyncapi.file != "" {
		return asyncapi.write(ctx, annotated, *check, cwd, stdout, stderr)
	}
	for _, p := range annotated {
		file := generator.RelativePath(cwd, p.File)
		if *check {
			status = max(status, reportCheck(stderr, file, p.Existing != nil, p.Current()))
		} else if err := p.Write(); err != nil {
			fmt.Fprintf(stderr, "streamgen: cannot write %s: %v\n", file, writeCause(err))
			status = 1
		}
	}
	return status
}

// fail prints an error as the command's message: "streamgen: " and the
// error without the prefix of the generator package it comes from, so that
// the line has one prefix.
func fail(stderr io.Writer, err error) {
	msg := err.Error()
	for _, prefix := range []string{"generator: ", "asyncapi: "} {
		msg = strings.TrimPrefix(msg, prefix)
	}
	fmt.Fprintf(stderr, "streamgen: %s\n", msg)
}

// versionLine is what -version prints: the version of the module the
// command was built from, as the build info says (v1.2.0; (devel) when
// built inside its own module, with the commit when it was recorded).
func versionLine(info *debug.BuildInfo) string {
	if info == nil {
		return "streamgen (unknown version: built without module information)"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	if v == "(devel)" {
		var rev, modified string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = ", modified"
				}
			}
		}
		if rev != "" {
			v += fmt.Sprintf(" (commit %.12s%s)", rev, modified)
		}
	}
	return "streamgen " + v
}

// reportCheck says on stderr when the generated file name is missing or
// stale, and returns the exit status of -check for it: 1 then, else 0.
func reportCheck(stderr io.Writer, name string, exists, current bool) int {
	switch {
	case !exists:
		fmt.Fprintf(stderr, "%s is missing: run go generate\n", name)
	case !current:
		fmt.Fprintf(stderr, "%s is stale: run go generate\n", name)
	default:
		return 0
	}
	return 1
}
