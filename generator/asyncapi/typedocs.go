package asyncapi

import (
	"context"
	"fmt"
	"go/ast"
	"go/token"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/streamgen/streamgen/generator"
)

// docIndex holds the doc comments of types and of their fields, and the
// file descriptors of protocol buffer messages (indexDescriptors).
type docIndex map[docKey]string

// indexDocs adds the doc comments of the types declared in files, and of
// their fields, for the package path pkg. A type's comment is the one on its
// spec, or on its declaration when that declares only it; a field's is the
// comment above it, or else the one after it on its line.
func (ix docIndex) indexDocs(pkg string, files []*ast.File) {
	ix.indexDescriptors(pkg, files)
	for _, f := range files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				key := docKey{pkg: pkg, typ: ts.Name.Name}
				ix.add(key, doc)
				ix.indexFields(key, ts.Type)
			}
		}
	}
}

// indexFields adds the doc comments of the fields of the struct type that
// expr is, or holds as the element of pointers, slices, arrays and maps.
func (ix docIndex) indexFields(key docKey, expr ast.Expr) {
	for {
		switch e := expr.(type) {
		case *ast.ParenExpr:
			expr = e.X
			continue
		case *ast.StarExpr:
			expr = e.X
			continue
		case *ast.ArrayType:
			expr = e.Elt
			continue
		case *ast.MapType:
			expr = e.Value
			continue
		case *ast.StructType:
			i := 0
			for _, f := range e.Fields.List {
				doc := f.Doc
				if doc == nil {
					doc = f.Comment
				}
				for range max(len(f.Names), 1) {
					fk := key.field(i)
					ix.add(fk, doc)
					ix.indexFields(fk, f.Type)
					i++
				}
			}
		}
		return
	}
}

func (ix docIndex) add(key docKey, doc *ast.CommentGroup) {
	if text := strings.TrimSpace(doc.Text()); text != "" {
		ix[key] = text
	}
}

// loadDocs returns the doc comments of the types of the packages paths,
// reading the files of those not among pkgs (which have their syntax) with
// the go command as cfg says. The standard library's are left out: its
// types are documented with Go, and its long comments, which change from
// one Go release to the next, would make a document stale with each.
func loadDocs(ctx context.Context, cfg generator.Config, pkgs []*generator.Package, paths []string) (docIndex, error) {
	ix := docIndex{}
	have := map[string]bool{}
	for _, p := range pkgs {
		ix.indexDocs(p.Path, p.Syntax)
		have[p.Path] = true
	}
	var missing []string
	for _, p := range paths {
		if !have[p] && !slices.Contains(missing, p) {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return ix, nil
	}
	slices.Sort(missing)
	loaded, err := packages.Load(&packages.Config{
		Context:    ctx,
		Mode:       packages.NeedName | packages.NeedFiles | packages.NeedCompiledGoFiles | packages.NeedSyntax | packages.NeedModule,
		Dir:        cfg.Dir,
		Env:        cfg.Env,
		BuildFlags: cfg.BuildFlags,
	}, missing...)
	if err != nil {
		return nil, fmt.Errorf("asyncapi: read the doc comments of %s: %w", strings.Join(missing, " "), err)
	}
	for _, lp := range loaded {
		if lp.Module != nil {
			ix.indexDocs(lp.PkgPath, lp.Syntax)
		}
	}
	return ix, nil
}
