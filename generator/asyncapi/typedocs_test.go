package asyncapi

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"testing"

	"github.com/streamgen/streamgen/generator"
	"github.com/streamgen/streamgen/generator/internal/gentest"
)

func TestIndexDocs(t *testing.T) {
	src := `package p

// A is alone in its declaration.
type A struct {
	// X and Y share this comment.
	X, Y int
	Z    string // Z's line comment.
	N    []struct {
		// Inner is nested.
		Inner bool
	}
	NoDoc int
}

type (
	// B is in a group.
	B int
	C int
)

// The group's comment is no type's.
type (
	D int
	E int
)
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	ix := docIndex{}
	ix.indexDocs("example.com/p", []*ast.File{f})
	a := docKey{pkg: "example.com/p", typ: "A"}
	want := map[docKey]string{
		a:                                "A is alone in its declaration.",
		a.field(0):                       "X and Y share this comment.",
		a.field(1):                       "X and Y share this comment.",
		a.field(2):                       "Z's line comment.",
		a.field(3).field(0):              "Inner is nested.",
		{pkg: "example.com/p", typ: "B"}: "B is in a group.",
	}
	for k, w := range want {
		if got := ix[k]; got != w {
			t.Errorf("%+v: %q, want %q", k, got, w)
		}
	}
	if len(ix) != len(want) {
		t.Errorf("%d doc comments indexed, want %d: %v", len(ix), len(want), ix)
	}
}

func TestLoadDocsReadsPackagesNotLoaded(t *testing.T) {
	ix, err := loadDocs(context.Background(), generator.Config{Dir: gentest.RepoRoot(t)}, nil,
		[]string{"github.com/streamgen/streamgen/testdata/imported_type/orders", "time", "github.com/streamgen/streamgen/testdata/imported_type/orders"})
	if err != nil {
		t.Fatal(err)
	}
	order := docKey{pkg: "github.com/streamgen/streamgen/testdata/imported_type/orders", typ: "Order"}
	if got := ix[order]; got != "Order is placed by a customer." {
		t.Errorf("doc of orders.Order: %q", got)
	}
	for k := range ix {
		if k.pkg != order.pkg {
			t.Errorf("a doc comment of %s was read: %v", k.pkg, k)
		}
	}
}
