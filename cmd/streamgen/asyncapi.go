package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/streamgen/streamgen/generator"
	"github.com/streamgen/streamgen/generator/asyncapi"
)

// asyncAPIFlags are the flags of the AsyncAPI document.
type asyncAPIFlags struct {
	file, title, version string
}

// addAsyncAPIFlags defines the flags of the AsyncAPI document on fs.
func addAsyncAPIFlags(fs *flag.FlagSet) *asyncAPIFlags {
	f := &asyncAPIFlags{}
	fs.StringVar(&f.file, "asyncapi", "", "write an AsyncAPI 3.0 document of the packages' subscriptions to `file` (.yaml, .yml or .json; - for standard output) instead of the generated Go files")
	fs.StringVar(&f.title, "asyncapi-title", "", "the document's info.title (default: the package path, or the module path for several packages)")
	fs.StringVar(&f.version, "asyncapi-version", "", "the document's info.version (default "+asyncapi.DefaultVersion+")")
	return f
}

// misuse says what is wrong with the flags as given, or returns "".
func (f *asyncAPIFlags) misuse(fs *flag.FlagSet, check bool) string {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	switch {
	case !set["asyncapi"] && (set["asyncapi-title"] || set["asyncapi-version"]):
		return "-asyncapi-title and -asyncapi-version are for the AsyncAPI document: add -asyncapi file"
	case !set["asyncapi"]:
		return ""
	case f.file == "":
		return "-asyncapi needs a file name (.yaml, .yml or .json), or - for standard output"
	case set["o"]:
		return "-o names the generated Go file, which -asyncapi does not write: use one or the other"
	case check && f.file == "-":
		return "-check compares the document with a file: give -asyncapi a file name, not -"
	}
	if _, err := asyncapi.FormatFor(f.file); err != nil {
		return fmt.Sprintf("-asyncapi %s: the document is YAML (.yaml or .yml) or JSON (.json): name the file with one of these extensions", f.file)
	}
	return ""
}

// write writes the AsyncAPI document of pkgs to the file, or with check
// compares it with the file, and returns the exit status.
func (f *asyncAPIFlags) write(ctx context.Context, pkgs []*generator.Package, check bool, cwd string, stdout, stderr io.Writer) int {
	format, err := asyncapi.FormatFor(f.file)
	if err != nil {
		fail(stderr, err)
		return 2
	}
	doc, err := asyncapi.Generate(ctx, pkgs, asyncapi.Options{Title: f.title, Version: f.version, Format: format})
	if err != nil {
		fail(stderr, err)
		return 1
	}
	if f.file == "-" {
		if _, err := stdout.Write(doc); err != nil {
			fmt.Fprintf(stderr, "streamgen: write the document: %v\n", err)
			return 1
		}
		return 0
	}
	path := f.file
	if !filepath.IsAbs(path) {
		path = filepath.Join(cwd, path)
	}
	name := generator.RelativePath(cwd, path)
	old, err := os.ReadFile(path)
	if check {
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			fail(stderr, err)
			return 1
		}
		return reportCheck(stderr, name, err == nil, bytes.Equal(old, doc))
	}
	if err == nil && bytes.Equal(old, doc) {
		return 0
	}
	if err := generator.WriteFile(path, doc); err != nil {
		fmt.Fprintf(stderr, "streamgen: cannot write %s: %v\n", name, writeCause(err))
		return 1
	}
	return 0
}

// writeCause is what went wrong in a failed generator.WriteFile, without
// the paths the message already names.
func writeCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
