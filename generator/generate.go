package generator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"maps"
	"os"
	"path/filepath"
	"regexp"
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
	// Annotated is false when the package has no //stream:subscriber
	// annotation (and no problems either).
	Annotated bool
	// Subscriptions are the subscriptions Mount registers, in its order;
	// set with Source.
	Subscriptions []Subscription
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
}

// subscriptions describes the subscriptions of m.
func (m *model) subscriptions() []Subscription {
	out := make([]Subscription, len(m.subs))
	for i, s := range m.subs {
		out[i].Runtime = s.rs
		for _, h := range s.index {
			out[i].Handlers = append(out[i].Handlers, Handler{Name: h.name(), Doc: h.fn.Doc.Text(), Message: h.shape.msg})
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

// Generate loads the packages that match patterns (default ".") and
// generates the file of each in memory. It returns an error only when the
// packages cannot be listed at all; problems in a package are its
// Diagnostics. Nothing is written: call Write on each Package.
//
// A generated file that exists already is set aside while loading (replaced
// by its package clause), so a stale file that no longer compiles never
// blocks regenerating it.
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
	olds, err := findOutputs(ctx, cfg, patterns)
	if err != nil {
		return nil, err
	}
	overlay := map[string][]byte{}
	for path, o := range olds {
		if o.ours {
			overlay[path] = o.clause
		}
	}
	pkgs, err := packages.Load(&packages.Config{
		Context:    ctx,
		Mode:       loadMode,
		Dir:        cfg.Dir,
		Env:        cfg.Env,
		BuildFlags: cfg.BuildFlags,
		Overlay:    overlay,
	}, patterns...)
	if err != nil {
		return nil, fmt.Errorf("generator: load %s: %w", strings.Join(patterns, " "), err)
	}
	slices.SortFunc(pkgs, func(a, b *packages.Package) int { return strings.Compare(a.PkgPath, b.PkgPath) })
	out := make([]*Package, 0, len(pkgs))
	for _, lp := range pkgs {
		out = append(out, generatePackage(lp, cfg, olds))
	}
	forgiveForeignGenerated(out)
	return out, nil
}

// qualifiedUndefined matches the type checker's message for a name another
// package does not declare: "undefined: billing.Mount".
var qualifiedUndefined = regexp.MustCompile(`^undefined: ([\pL_][\pL\pN_]*)\.([\pL_][\pL\pN_]*)$`)

// forgiveForeignGenerated drops from the diagnostics of packages without
// annotations their uses of what the generated file of another loaded
// package declares (a main that calls billing.Mount): those files are set
// aside while loading, so the names look undefined, as a package's own
// uses of its generated names do (see listErrors).
func forgiveForeignGenerated(pkgs []*Package) {
	byName := map[string]map[string]bool{}
	for _, p := range pkgs {
		if !p.Annotated {
			continue
		}
		if byName[p.Name] == nil {
			byName[p.Name] = map[string]bool{}
		}
		maps.Copy(byName[p.Name], p.generated)
	}
	for _, p := range pkgs {
		if p.Annotated {
			continue
		}
		p.Diagnostics = slices.DeleteFunc(p.Diagnostics, func(d Diagnostic) bool {
			m := qualifiedUndefined.FindStringSubmatch(d.Msg)
			return m != nil && byName[m[1]][m[2]]
		})
	}
}

// generatePackage checks one loaded package and generates its file.
func generatePackage(lp *packages.Package, cfg Config, olds map[string]oldOutput) *Package {
	p := &Package{Path: lp.PkgPath, Name: lp.Name, Dir: lp.Dir}
	if p.Dir == "" && len(lp.GoFiles) > 0 {
		p.Dir = filepath.Dir(lp.GoFiles[0])
	}
	p.File = filepath.Join(p.Dir, cfg.Output)
	old, hasOld := olds[p.File]
	if hasOld {
		p.Existing = old.content
	}
	ds := &diagnostics{fset: lp.Fset}
	if lp.Types == nil || lp.Fset == nil || len(lp.Syntax) == 0 {
		p.Diagnostics = listErrors(lp, nil)
		if len(p.Diagnostics) == 0 {
			p.Diagnostics = []Diagnostic{{Msg: fmt.Sprintf("package %s has no Go files to read", lp.PkgPath)}}
		}
		return p
	}
	info := lp.TypesInfo
	if info == nil {
		info = &types.Info{}
	}
	m := analyze(lp.Types, info, lp.Fset, lp.Syntax, ds)
	p.Syntax, p.Config = lp.Syntax, cfg
	m.namePublishers(ds)
	m.checkCollisions(ds)
	p.Annotated = len(m.handlers) > 0
	p.generated = m.generatedNames()
	if hasOld && !old.ours {
		ds.list = append(ds.list, Diagnostic{
			Pos: token.Position{Filename: p.File, Line: 1, Column: 1},
			Msg: fmt.Sprintf("%s was not written by streamgen (its first line is not %q), so it is not overwritten: move it away, or choose another output file with -o", cfg.Output, Header),
		})
	}
	ds.list = append(ds.list, listErrors(lp, p.generated)...)
	sortDiagnostics(ds.list)
	p.Diagnostics = ds.list
	if len(p.Diagnostics) > 0 || !p.Annotated {
		return p
	}
	src, err := emit(m)
	if err != nil {
		p.Diagnostics = []Diagnostic{{Msg: err.Error()}}
		return p
	}
	p.Source = src
	p.Subscriptions = m.subscriptions()
	return p
}

// undefinedName matches the type checker's message for an identifier that
// is not declared.
var undefinedName = regexp.MustCompile(`^undefined: ([\pL_][\pL\pN_]*)$`)

// listErrors turns the errors the go command, the parser and the type
// checker found in a package into diagnostics. References to identifiers
// the generated file declares are not errors: that file is set aside while
// loading.
func listErrors(lp *packages.Package, generated map[string]bool) []Diagnostic {
	var out []Diagnostic
	for _, e := range lp.TypeErrors {
		if m := undefinedName.FindStringSubmatch(e.Msg); m != nil && generated[m[1]] {
			continue
		}
		out = append(out, Diagnostic{Pos: e.Fset.Position(e.Pos), Msg: e.Msg})
	}
	checked := len(out) > 0
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
				out = append(out, compilerErrors(e.Msg, lp.Dir, generated)...)
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

// oldOutput is a generated file found on disk before loading.
type oldOutput struct {
	content []byte
	// ours is set when the file starts with Header.
	ours bool
	// clause is the package clause that stands in for the file while
	// loading.
	clause []byte
}

// findOutputs reads the existing output files of the packages patterns
// match. Patterns that name directories are resolved directly; others
// (import paths, ./...) are listed with the go command first.
func findOutputs(ctx context.Context, cfg Config, patterns []string) (map[string]oldOutput, error) {
	var dirs, listed []string
	for _, pat := range patterns {
		if isLocalDir(pat) {
			d := pat
			if !filepath.IsAbs(d) {
				d = filepath.Join(cfg.Dir, d)
			}
			dirs = append(dirs, d)
		} else {
			listed = append(listed, pat)
		}
	}
	if len(listed) > 0 {
		pkgs, err := packages.Load(&packages.Config{
			Context: ctx, Mode: packages.NeedName | packages.NeedFiles,
			Dir: cfg.Dir, Env: cfg.Env, BuildFlags: cfg.BuildFlags,
		}, listed...)
		if err != nil {
			return nil, fmt.Errorf("generator: list %s: %w", strings.Join(listed, " "), err)
		}
		for _, p := range pkgs {
			if p.Dir != "" {
				dirs = append(dirs, p.Dir)
			} else if len(p.GoFiles) > 0 {
				dirs = append(dirs, filepath.Dir(p.GoFiles[0]))
			}
		}
	}
	out := map[string]oldOutput{}
	for _, d := range dirs {
		path := filepath.Join(d, cfg.Output)
		content, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("generator: %w", err)
		}
		o := oldOutput{content: content, ours: bytes.HasPrefix(content, []byte(Header+"\n"))}
		if o.ours {
			name := packageName(content)
			if name == "" {
				name = dirPackageName(d, path)
			}
			if name == "" {
				// Without a package name the file cannot be set aside; the
				// loader will report it.
				o.ours = false
			}
			o.clause = []byte("package " + name + "\n")
		}
		out[path] = o
	}
	return out, nil
}

// isLocalDir reports whether a pattern names one directory: ".", "..", or a
// path starting with ./, ../ or /, without "...".
func isLocalDir(pat string) bool {
	if strings.Contains(pat, "...") {
		return false
	}
	return pat == "." || pat == ".." || filepath.IsAbs(pat) ||
		strings.HasPrefix(pat, "./") || strings.HasPrefix(pat, "../") ||
		strings.HasPrefix(pat, "."+string(filepath.Separator)) || strings.HasPrefix(pat, ".."+string(filepath.Separator))
}

// packageClause matches a package clause at the start of a line.
var packageClause = regexp.MustCompile(`(?m)^package[ \t]+([\pL_][\pL\pN_]*)`)

// packageName returns the name in the first package clause of a Go file, or
// "". The generated file has no comments that could contain one earlier.
func packageName(src []byte) string {
	m := packageClause.FindSubmatch(src)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// dirPackageName returns the package name of another non-test Go file in
// dir, or "".
func dirPackageName(dir, except string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if e.IsDir() || path == except || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if name := packageName(src); name != "" {
			return name
		}
	}
	return ""
}
