package generator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/streamgen/streamgen/runtime"
)

// DefaultOutput is the name of the generated file in each package.
const DefaultOutput = "streamgen_gen.go"

// Config says which packages to generate and how.
type Config struct {
	// Dir is the directory patterns are resolved in, as the go command
	// does it; "" is the current directory.
	Dir string
	// Output is the file name of the generated file in each package;
	// "" means DefaultOutput. It is a base name, not a path.
	Output string
	// Env is the environment of the go command that lists packages; nil
	// means the current process's.
	Env []string
	// BuildFlags are passed to the go command, for example -tags.
	BuildFlags []string
	// NoJSONDecoders leaves every body to encoding/json: no JSON decoder is
	// written for any message type (see runtime.HandleJSON), and every
	// handler is made with runtime.Handle.
	NoJSONDecoders bool
}

// Package is the result of generating one package.
type Package struct {
	// Path and Name are the package's import path and name; Dir its
	// directory.
	Path, Name, Dir string
	// File is the absolute path of the generated file.
	File string
	// Source is the generated file, or nil when the package has problems
	// or no annotations.
	Source []byte
	// Existing is the file on disk before this run, or nil when there is
	// none.
	Existing []byte
	// Diagnostics lists every problem found, sorted by position. A package
	// with diagnostics has no Source.
	Diagnostics []Diagnostic
	// Annotated is false when the package has no //stream:subscriber and
	// no //stream:publisher directive (and no problems either).
	Annotated bool
	// Subscriptions are the subscriptions Mount registers, in its order;
	// set with Source.
	Subscriptions []Subscription
	// Publishers are the typed publishers //stream:publisher declares, in
	// source order; set with Source.
	Publishers []Publisher
	// Syntax holds the package's files, parsed with their comments.
	Syntax []*ast.File
	// Config is the configuration the package was loaded with, its Dir
	// absolute.
	Config Config

	// generated holds the names the generated file declares.
	generated map[string]bool
}

// Subscription is one subscription of a generated package, as its Mount
// registers it.
type Subscription struct {
	// Runtime is the runtime.Subscription the annotations stand for: the
	// one validated at generate time and written out as Mount's literal.
	// Its handlers, in the order of Handlers, hold placeholders for the
	// functions: it describes the subscription and is not for mounting.
	Runtime *runtime.Subscription
	// Handlers are the annotated functions of Runtime.Handlers.
	Handlers []Handler
}

// Handler is an annotated function.
type Handler struct {
	// Name is the function's name in its package.
	Name string
	// Doc is the text of its doc comment.
	Doc string
	// Message is the type of the messages it handles.
	Message *types.Named
	// Reply is the type of its replies when it answers requests (it
	// returns a value and an error), nil when it does not.
	Reply *types.Named
}

// Publisher is a typed publisher that a //stream:publisher directive
// declares, for a message type the package sends.
type Publisher struct {
	// Name is the generated function: PublishOrderPlaced.
	Name string
	// Message is the Go type it sends; Doc the text of its doc comment.
	Message *types.Named
	Doc     string
	// MessageType is the message type name on the wire.
	MessageType string
	// To is where it sends: an exchange and routing key, or a queue.
	To runtime.Destination
	// Broker is the broker it is for; AnyBroker when either.
	Broker runtime.BrokerKind
	// Codec is the codec it encodes with: its codec=, Protobuf for a
	// protocol buffer message; nil for the publisher's own (JSON by
	// default).
	Codec runtime.Codec
}

// publishers describes the declared publishers of m.
func (m *model) publishers() []Publisher {
	var out []Publisher
	for _, p := range m.usableDeclared() {
		doc := ""
		if p.spec.Doc != nil {
			doc = p.spec.Doc.Text()
		}
		out = append(out, Publisher{Name: p.name, Message: p.named, Doc: doc, MessageType: p.wire, To: p.to, Broker: p.broker, Codec: p.codec})
	}
	return out
}

// subscriptions describes the subscriptions of m.
func (m *model) subscriptions() []Subscription {
	out := make([]Subscription, len(m.subs))
	for i, s := range m.subs {
		out[i].Runtime = s.rs
		for _, h := range s.index {
			out[i].Handlers = append(out[i].Handlers, Handler{Name: h.name(), Doc: h.fn.Doc.Text(), Message: h.shape.msg, Reply: h.shape.reply})
		}
	}
	return out
}

// Current reports whether the file on disk is exactly what was generated.
func (p *Package) Current() bool {
	return p.Source != nil && p.Existing != nil && bytes.Equal(p.Source, p.Existing)
}

// Write writes Source to File atomically (see WriteFile). It writes
// nothing when the file is current, and fails when there is no Source.
func (p *Package) Write() error {
	if p.Source == nil {
		return fmt.Errorf("generator: %s: nothing to write", p.Path)
	}
	if p.Current() {
		return nil
	}
	if err := WriteFile(p.File, p.Source); err != nil {
		return err
	}
	p.Existing = p.Source
	return nil
}

// loadMode is what streamgen needs of the target packages: their syntax and
// types. Dependencies come from export data.
const loadMode = packages.NeedName | packages.NeedFiles | packages.NeedCompiledGoFiles |
	packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo

// BuildTag is the build tag Generate loads packages with. A generated file
// carries the constraint //go:build !streamgen, so it is part of every
// ordinary build and left out of Generate's.
const BuildTag = "streamgen"

// buildConstraint is the line after Header in a generated file.
const buildConstraint = "//go:build !" + BuildTag

// Generate loads the packages that match patterns (default ".") and
// generates the file of each in memory. It returns an error only when the
// packages cannot be listed at all, or the patterns match none; problems
// in a package are its Diagnostics. Nothing is written: call Write on each
// Package.
//
// The packages are loaded once, with the build tag streamgen (BuildTag),
// which leaves out the generated file on disk: a stale file that no longer
// compiles never blocks regenerating it, and the dependencies come from the
// go command's export data as in any build. A file of streamgen's without
// the build constraint, as streamgen wrote them before it had one, is in
// that load: it is reported, to be deleted once.
func Generate(ctx context.Context, cfg Config, patterns ...string) ([]*Package, error) {
	if len(patterns) == 0 {
		patterns = []string{"."}
	}
	if cfg.Output == "" {
		cfg.Output = DefaultOutput
	}
	if cfg.Output != filepath.Base(cfg.Output) || !strings.HasSuffix(cfg.Output, ".go") || strings.HasSuffix(cfg.Output, "_test.go") {
		return nil, fmt.Errorf("generator: output %q must be a file name ending in .go (not _test.go), without a directory", cfg.Output)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("generator: %w", err)
	}
	cfg.Dir = dir
	pkgs, err := packages.Load(&packages.Config{
		Context:    ctx,
		Mode:       loadMode,
		Dir:        cfg.Dir,
		Env:        cfg.Env,
		BuildFlags: withBuildTag(cfg.BuildFlags, cfg.Env),
	}, patterns...)
	if err != nil {
		return nil, fmt.Errorf("generator: load %s: %w", strings.Join(patterns, " "), err)
	}
	if len(pkgs) == 0 {
		return nil, noPackages(ctx, cfg, patterns)
	}
	olds, err := readOutputs(pkgs, cfg.Output)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(pkgs, func(a, b *packages.Package) int { return strings.Compare(a.PkgPath, b.PkgPath) })
	cs := make([]*checked, len(pkgs))
	for i, lp := range pkgs {
		cs[i] = checkPackage(lp, cfg, olds)
	}
	names, err := foreignGeneratedNames(ctx, cfg, cs)
	if err != nil {
		return nil, err
	}
	out := make([]*Package, len(cs))
	for i, c := range cs {
		out[i] = c.finish(names.with(c))
	}
	return out, nil
}

// noPackages says why patterns matched no package: go/packages reports
// nothing when the directory is in no module, or a pattern names nothing.
func noPackages(ctx context.Context, cfg Config, patterns []string) error {
	cmd := exec.CommandContext(ctx, "go", "env", "GOMOD")
	cmd.Dir, cmd.Env = cfg.Dir, cfg.Env
	out, err := cmd.Output()
	if gomod := strings.TrimSpace(string(out)); err == nil && (gomod == "" || gomod == os.DevNull) {
		return fmt.Errorf("generator: %s is not in a Go module (no go.mod in it or above): run streamgen in a module, or create one with go mod init", cfg.Dir)
	}
	return fmt.Errorf("generator: no package matches %s", strings.Join(patterns, " "))
}

// withBuildTag returns the build flags with BuildTag added to the tags they
// set, or to those GOFLAGS in env (the process's when nil) sets, since a
// -tags flag replaces those.
func withBuildTag(flags, env []string) []string {
	out := slices.Clone(flags)
	for i := len(out) - 1; i >= 0; i-- {
		name, value, hasValue := strings.Cut(out[i], "=")
		if name != "-tags" && name != "--tags" {
			continue
		}
		if hasValue {
			out[i] = name + "=" + addTag(value)
			return out
		}
		if i+1 < len(out) {
			out[i+1] = addTag(out[i+1])
			return out
		}
	}
	if env == nil {
		env = os.Environ()
	}
	var goflags string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GOFLAGS="); ok {
			goflags = v
		}
	}
	tags := ""
	for _, f := range strings.Fields(goflags) {
		if name, value, ok := strings.Cut(f, "="); ok && (name == "-tags" || name == "--tags") {
			tags = value
		}
	}
	return append(out, "-tags="+addTag(tags))
}

// addTag adds BuildTag to a comma-separated list of build tags.
func addTag(list string) string {
	if strings.TrimSpace(list) == "" {
		return BuildTag
	}
	return list + "," + BuildTag
}

// checked is a loaded package, analyzed, before its type errors are
// reported.
type checked struct {
	p  *Package
	lp *packages.Package
	m  *model // nil when the package could not be analyzed
	ds *diagnostics
	// untagged is set when the package's generated file has no build
	// constraint, so the load did not leave it out (reported).
	untagged bool
}

// checkPackage analyzes one loaded package: its annotations, handlers and
// the names its generated file declares.
func checkPackage(lp *packages.Package, cfg Config, olds map[string]oldOutput) *checked {
	p := &Package{Path: lp.PkgPath, Name: lp.Name, Dir: packageDir(lp)}
	p.File = filepath.Join(p.Dir, cfg.Output)
	c := &checked{p: p, lp: lp, ds: &diagnostics{fset: lp.Fset}}
	old, hasOld := olds[p.File]
	if hasOld {
		p.Existing = old.content
	}
	if hasOld && old.ours && (slices.Contains(lp.GoFiles, p.File) || slices.Contains(lp.CompiledGoFiles, p.File)) {
		c.untagged = true
		return c
	}
	if lp.Types == nil || lp.Fset == nil || len(lp.Syntax) == 0 {
		return c
	}
	info := lp.TypesInfo
	if info == nil {
		info = &types.Info{}
	}
	ds := c.ds
	c.m = analyze(lp.Types, info, lp.Fset, lp.Syntax, ds)
	c.m.noJSONDecoders = cfg.NoJSONDecoders
	p.Syntax, p.Config = lp.Syntax, cfg
	c.m.checkDeclaredQueues(ds)
	c.m.namePublishers(ds)
	c.m.checkCollisions(ds)
	c.m.nameRequesters(ds)
	p.Annotated = len(c.m.handlers) > 0 || len(c.m.declared) > 0
	p.generated = c.m.generatedNames()
	for _, name := range c.m.requesterNames() {
		p.generated[name] = true
	}
	if hasOld && !old.ours {
		ds.list = append(ds.list, Diagnostic{
			Pos: token.Position{Filename: p.File, Line: 1, Column: 1},
			Msg: fmt.Sprintf("%s was not written by streamgen (its first line is not %q), so it is not overwritten: move it away, or choose another output file with -o", cfg.Output, Header),
		})
	}
	return c
}

// finish adds the errors of the go command, the parser and the type
// checker to the package's diagnostics, leaving out uses of names that
// generated files declare (own says which), and generates its file when
// there are none.
func (c *checked) finish(own generatedNames) *Package {
	p := c.p
	if c.untagged {
		// Its declarations, stale or not, are in the package's scope and
		// would clash with the new file's: it is the one problem to say.
		p.Diagnostics = []Diagnostic{{
			Pos: token.Position{Filename: p.File, Line: 1, Column: 1},
			Msg: fmt.Sprintf("%s has no %q line: an older streamgen wrote it, and it is compiled into the package it is generated from; delete it and run go generate again", filepath.Base(p.File), buildConstraint),
		}}
		return p
	}
	if c.m == nil && len(c.lp.GoFiles) == 0 && len(c.lp.IgnoredFiles) == 1 && c.lp.IgnoredFiles[0] == p.File && bytes.HasPrefix(p.Existing, []byte(Header+"\n")) {
		p.Diagnostics = []Diagnostic{{
			Pos: token.Position{Filename: p.File, Line: 1, Column: 1},
			Msg: fmt.Sprintf("%s is the only Go file left in the package: the handlers it was generated for are gone, so delete it", filepath.Base(p.File)),
		}}
		return p
	}
	if c.m == nil {
		p.Diagnostics = listErrors(c.lp, own)
		if len(p.Diagnostics) == 0 {
			p.Diagnostics = []Diagnostic{{Msg: fmt.Sprintf("package %s has no Go files to read", c.lp.PkgPath)}}
		}
		return p
	}
	ds := c.ds
	ds.list = append(ds.list, listErrors(c.lp, own)...)
	sortDiagnostics(ds.list)
	p.Diagnostics = ds.list
	if len(p.Diagnostics) > 0 || !p.Annotated {
		return p
	}
	src, err := emit(c.m)
	if err != nil {
		p.Diagnostics = []Diagnostic{{Msg: err.Error()}}
		return p
	}
	p.Source = src
	p.Subscriptions = c.m.subscriptions()
	p.Publishers = c.m.publishers()
	return p
}

// listErrors turns the errors the go command, the parser and the type
// checker found in a package into diagnostics. Uses of the identifiers
// generated files declare are not errors: those files are left out while
// loading. names says which the package's own file and the files of the
// packages it imports declare.
func listErrors(lp *packages.Package, names generatedNames) []Diagnostic {
	var out []Diagnostic
	for _, e := range lp.TypeErrors {
		if names.declares(lp, e) {
			continue
		}
		out = append(out, Diagnostic{Pos: e.Fset.Position(e.Pos), Msg: e.Msg})
	}
	checked := len(lp.TypeErrors) > 0
	for _, e := range lp.Errors {
		switch {
		case e.Kind == packages.TypeError:
			continue // reported from TypeErrors, with exact positions
		case e.Kind == packages.ParseError:
			checked = true
		}
	}
	for _, e := range lp.Errors {
		switch {
		case e.Kind == packages.TypeError:
		case strings.HasPrefix(e.Msg, "# "+lp.PkgPath+"\n"):
			// The go command compiled the package for export data and
			// failed. The parser and the type checker report the same
			// problems with exact positions; only when they found none is
			// the compiler's word needed.
			if !checked {
				out = append(out, compilerErrors(e.Msg, lp.Dir, names.own)...)
			}
		default:
			out = append(out, Diagnostic{Pos: parsePosition(e.Pos), Msg: e.Msg})
		}
	}
	return out
}

// compilerErrors reads the compiler's output ("# pkg" then one
// "file:line:col: message" per line) into diagnostics, leaving out
// references to identifiers the generated file declares. Relative file
// names are taken relative to dir.
func compilerErrors(text, dir string, generated map[string]bool) []Diagnostic {
	var out []Diagnostic
	for _, line := range strings.Split(text, "\n")[1:] {
		if strings.TrimSpace(line) == "" {
			continue
		}
		pos, msg, ok := cutPosition(line)
		if !ok {
			out = append(out, Diagnostic{Msg: line})
			continue
		}
		if m := undefinedName.FindStringSubmatch(msg); m != nil && generated[m[1]] {
			continue
		}
		if pos.Filename != "" && !filepath.IsAbs(pos.Filename) {
			pos.Filename = filepath.Join(dir, filepath.Base(pos.Filename))
		}
		out = append(out, Diagnostic{Pos: pos, Msg: msg})
	}
	return out
}

// cutPosition splits "file:line:col: message".
func cutPosition(line string) (token.Position, string, bool) {
	for i := 0; i+2 < len(line); i++ {
		if line[i] == ':' && line[i+1] == ' ' {
			pos := parsePosition(line[:i])
			if pos.Line > 0 {
				return pos, line[i+2:], true
			}
		}
	}
	return token.Position{}, "", false
}

// parsePosition reads "file:line:col", "file:line" or "file" as the go
// command writes positions.
func parsePosition(s string) token.Position {
	if s == "" || s == "-" {
		return token.Position{}
	}
	var p token.Position
	rest := s
	var nums []int
	for range 2 {
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			break
		}
		n, err := strconv.Atoi(rest[i+1:])
		if err != nil {
			break
		}
		nums = append([]int{n}, nums...)
		rest = rest[:i]
	}
	p.Filename = rest
	if len(nums) > 0 {
		p.Line = nums[0]
	}
	if len(nums) > 1 {
		p.Column = nums[1]
	}
	return p
}

// oldOutput is a generated file found on disk.
type oldOutput struct {
	content []byte
	// ours is set when the file starts with Header.
	ours bool
}

// readOutputs reads the output file of each loaded package that has one.
func readOutputs(pkgs []*packages.Package, output string) (map[string]oldOutput, error) {
	olds := map[string]oldOutput{}
	for _, lp := range pkgs {
		dir := packageDir(lp)
		if dir == "" {
			continue
		}
		path := filepath.Join(dir, output)
		content, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("generator: %w", err)
		}
		olds[path] = oldOutput{content: content, ours: bytes.HasPrefix(content, []byte(Header+"\n"))}
	}
	return olds, nil
}

// packageDir returns the directory of a loaded package, or "".
func packageDir(lp *packages.Package) string {
	switch {
	case lp.Dir != "":
		return lp.Dir
	case len(lp.GoFiles) > 0:
		return filepath.Dir(lp.GoFiles[0])
	case len(lp.IgnoredFiles) > 0:
		return filepath.Dir(lp.IgnoredFiles[0])
	}
	return ""
}
