// Command streamgen generates the broker wiring of annotated message
// handlers: for each package, one file (streamgen_gen.go) with a Mount
// function that registers the package's subscriptions on a runtime.App, and
// a typed publisher per message type.
//
// Usage:
//
//	streamgen [-check] [-o file] [packages]
//	streamgen [-check] -asyncapi file [-asyncapi-title title] [-asyncapi-version version] [packages]
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
//		describes every subscription of the packages: a channel per queue
//		(wait and dead-letter queues included), a receive operation per
//		handler with its policy as x-streamgen-* fields, and a message per
//		message type with the JSON Schema of its Go type. A .yaml or .yml
//		file gets YAML, a .json file JSON, - writes YAML to standard output.
//		With -check, compare the document with the file instead.
//	-asyncapi-title title, -asyncapi-version version
//		The document's info.title (default: the package path, or the
//		module path for several packages) and info.version (default 0.0.0).
//
// Every problem found is printed as file:line:col: message, with the fix in
// the message, and streamgen exits with status 1 without writing any file
// (an existing one is kept). The annotation keys and the handler shapes are
// described in the documentation of package
// github.com/streamgen/streamgen/generator.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/streamgen/streamgen/generator"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stderr))
}

// run is main with its inputs and outputs passed in; it returns the exit
// status.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("streamgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	check := fs.Bool("check", false, "compare the generated file with the one on disk; exit 1 when it is stale")
	output := fs.String("o", generator.DefaultOutput, "name of the generated `file` in each package")
	asyncapi := addAsyncAPIFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: streamgen [-check] [-o file] [packages]\n")
		fmt.Fprintf(stderr, "       streamgen [-check] -asyncapi file [-asyncapi-title title] [-asyncapi-version version] [packages]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if msg := asyncapi.misuse(fs, *check); msg != "" {
		fmt.Fprintf(stderr, "streamgen: %s\n", msg)
		return 2
	}
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(stderr, "streamgen: %v\n", err)
		return 1
	}
	pkgs, err := generator.Generate(ctx, generator.Config{Dir: cwd, Output: *output}, fs.Args()...)
	if err != nil {
		fmt.Fprintf(stderr, "streamgen: %v\n", err)
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
			fmt.Fprintf(stderr, "streamgen: package %s has no //stream:subscriber annotations\n", p.Path)
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
		return asyncapi.write(ctx, annotated, *check, cwd, os.Stdout, stderr)
	}
	for _, p := range annotated {
		file := generator.RelativePath(cwd, p.File)
		if *check {
			status = max(status, reportCheck(stderr, file, p.Existing != nil, p.Current()))
		} else if err := p.Write(); err != nil {
			fmt.Fprintf(stderr, "streamgen: %v\n", err)
			status = 1
		}
	}
	return status
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
