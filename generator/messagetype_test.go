package generator

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
	"testing"
)

// typeCheck type-checks src as package p and returns it.
func typeCheck(t *testing.T, src string) *types.Package {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: importer.Default()}
	pkg, err := conf.Check("p", fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pkg
}

func TestUndecodable(t *testing.T) {
	pkg := typeCheck(t, `package p

type Ok struct {
	A int
	B []string
	C map[int]*Ok
	D *Ok
	e chan int
	F chan int `+"`json:\"-\"`"+`
	G any
	inner
}

type inner struct{ H string }

type Self struct{ Next *Self; Fn func() }

type Promoted struct{ bad }

type bad struct{ C chan int }

type Named struct {
	Fn func() `+"`json:\"named\"`"+`
}

type Decodes struct{ C chan int }

func (d *Decodes) UnmarshalJSON([]byte) error { return nil }

type Wrapper struct{ D Decodes; K map[Key]int }

type Key struct{ A, B int }

func (k *Key) UnmarshalText([]byte) error { return nil }

type WrongSig struct{ C chan int }

func (w *WrongSig) UnmarshalJSON(string) error { return nil }
`)
	for _, tc := range []struct {
		typ  string
		want []string // the start of each problem
	}{
		{"Ok", nil},
		{"Self", []string{"Self.Fn is a func"}},
		{"Promoted", []string{"Promoted.bad.C is a chan int"}},
		{"Named", []string{"Named.Fn is a func"}},
		{"Decodes", nil},
		{"Wrapper", nil},
		{"WrongSig", []string{"WrongSig.C is a chan int"}},
	} {
		named := pkg.Scope().Lookup(tc.typ).Type().(*types.Named)
		got := undecodable(named, qualifier(pkg))
		if len(got) != len(tc.want) {
			t.Errorf("%s: problems %q, want %d", tc.typ, got, len(tc.want))
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], tc.want[i]) {
				t.Errorf("%s: problem %q, want it to start with %q", tc.typ, got[i], tc.want[i])
			}
		}
	}
}
