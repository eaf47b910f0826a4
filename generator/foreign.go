package generator

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/tools/go/packages"
)

// undefinedName matches the type checker's message for an identifier that
// is not declared.
var undefinedName = regexp.MustCompile(`^undefined: ([\pL_][\pL\pN_]*)$`)

// qualifiedUndefined matches the type checker's message for a name another
// package does not declare: "undefined: billing.Mount".
var qualifiedUndefined = regexp.MustCompile(`^undefined: ([\pL_][\pL\pN_]*)\.([\pL_][\pL\pN_]*)$`)

// generatedNames says which identifiers generated files declare: own, the
// package's own file as this run generates it; byPath, the files of the
// packages it imports, by import path. The loads leave all of them out, so
// uses of these names look undefined and are not reported.
type generatedNames struct {
	own    map[string]bool
	byPath map[string]map[string]bool
}

// with returns the names for the package of c: its own generated names
// and those of the imported packages.
func (n generatedNames) with(c *checked) generatedNames {
	return generatedNames{own: c.p.generated, byPath: n.byPath}
}

// declares reports whether the type error e of package lp is a use of a
// name a generated file declares: "undefined: Mount" in the package
// itself, "undefined: billing.PublishJob" in a package that imports one.
func (n generatedNames) declares(lp *packages.Package, e types.Error) bool {
	if m := undefinedName.FindStringSubmatch(e.Msg); m != nil {
		return n.own[m[1]]
	}
	if m := qualifiedUndefined.FindStringSubmatch(e.Msg); m != nil {
		return n.byPath[importPathOf(lp, e.Pos, m[1])][m[2]]
	}
	return false
}

// importPathOf returns the path of the package that the file of lp holding
// pos imports under name, or "".
func importPathOf(lp *packages.Package, pos token.Pos, name string) string {
	if lp.TypesInfo == nil {
		return ""
	}
	for _, f := range lp.Syntax {
		if pos < f.FileStart || pos > f.FileEnd {
			continue
		}
		for _, spec := range f.Imports {
			if pn := lp.TypesInfo.PkgNameOf(spec); pn != nil && pn.Name() == name {
				return pn.Imported().Path()
			}
		}
	}
	return ""
}

// foreignGeneratedNames finds, for the uses of another package's names
// that the type checker could not resolve in the packages of cs, the names
// the generated file of that package declares: as this run generates it
// when the package is one of cs and annotated, else as it is on disk. The
// directories of imported packages that were not loaded are listed with
// the go command, only when such uses exist.
func foreignGeneratedNames(ctx context.Context, cfg Config, cs []*checked) (generatedNames, error) {
	names := generatedNames{byPath: map[string]map[string]bool{}}
	dirs := map[string]string{}
	for _, c := range cs {
		if c.p.Annotated {
			names.byPath[c.p.Path] = c.p.generated
		} else {
			dirs[c.p.Path] = c.p.Dir
		}
	}
	var unlisted []string
	for _, c := range cs {
		for _, e := range c.lp.TypeErrors {
			m := qualifiedUndefined.FindStringSubmatch(e.Msg)
			if m == nil {
				continue
			}
			path := importPathOf(c.lp, e.Pos, m[1])
			if _, known := names.byPath[path]; known || path == "" {
				continue
			}
			if _, ok := dirs[path]; !ok {
				dirs[path] = ""
				unlisted = append(unlisted, path)
			}
			names.byPath[path] = nil // read below
		}
	}
	if len(unlisted) > 0 {
		listed, err := packages.Load(&packages.Config{
			Context: ctx, Mode: packages.NeedName | packages.NeedFiles,
			Dir: cfg.Dir, Env: cfg.Env, BuildFlags: withBuildTag(cfg.BuildFlags, cfg.Env),
		}, unlisted...)
		if err != nil {
			return generatedNames{}, fmt.Errorf("generator: list %s: %w", strings.Join(unlisted, " "), err)
		}
		for _, lp := range listed {
			dirs[lp.PkgPath] = packageDir(lp)
		}
	}
	for path, declared := range names.byPath {
		if declared != nil || dirs[path] == "" {
			continue
		}
		names.byPath[path] = declaredIn(filepath.Join(dirs[path], cfg.Output))
	}
	return names, nil
}

// declaredIn returns the package-level names a generated file of
// streamgen's declares, or nil when there is none at path.
func declaredIn(path string) map[string]bool {
	src, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(src, []byte(Header+"\n")) {
		return nil
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.SkipObjectResolution)
	if err != nil {
		return nil
	}
	names := map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				names[d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch spec := spec.(type) {
				case *ast.TypeSpec:
					names[spec.Name.Name] = true
				case *ast.ValueSpec:
					for _, id := range spec.Names {
						names[id.Name] = true
					}
				}
			}
		}
	}
	return names
}
