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
	fs.StringVar(&f.version, "asyncapi-version", "", "the document's info.version (default "+generator.DefaultAsyncAPIVersion+")")
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
	if _, err := generator.DocumentFormatFor(f.file); err != nil {
		return fmt.Sprintf("-asyncapi %s: the document is YAML (.yaml or .yml) or JSON (.json): name the file with one of these extensions", f.file)
	}
	return ""
}

// write writes the AsyncAPI document of pkgs to the file, or with check
// compares it with the file, and returns the exit status.
func (f *asyncAPIFlags) write(ctx context.Context, pkgs []*generator.Package, check bool, cwd string, stdout, stderr io.Writer) int {
	format, err := generator.DocumentFormatFor(f.file)
	if err != nil {
		fmt.Fprintf(stderr, "streamgen: %v\n", err)
		return 2
	}
	doc, err := generator.AsyncAPI(ctx, pkgs, generator.AsyncAPIOptions{Title: f.title, Version: f.version, Format: format})
	if err != nil {
		fmt.Fprintf(stderr, "streamgen: %v\n", err)
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
	switch {
	case check && errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(stderr, "%s is missing: run go generate\n", name)
		return 1
	case check && err != nil:
		fmt.Fprintf(stderr, "streamgen: %v\n", err)
		return 1
	case check && !bytes.Equal(old, doc):
		fmt.Fprintf(stderr, "%s is stale: run go generate\n", name)
		return 1
	case check || (err == nil && bytes.Equal(old, doc)):
		return 0
	}
	if err := writeAtomically(path, doc); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		fmt.Fprintf(stderr, "streamgen: cannot write %s: %v\n", name, err)
		return 1
	}
	return 0
}

// writeAtomically writes data to path through a temporary file in the same
// directory renamed over it, so that a reader never sees half a document
// and a failed write keeps the old one.
func writeAtomically(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
