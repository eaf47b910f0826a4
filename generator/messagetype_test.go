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

type Bytes []byte

// NamedParam's method takes a named byte slice, so it is no json.Unmarshaler.
type NamedParam struct{ C chan int }

func (n *NamedParam) UnmarshalJSON(Bytes) error { return nil }

type Audit struct{ Hook func(); By string }

// Shadowed's own Hook hides Audit.Hook from encoding/json.
type Shadowed struct {
	Audit
	Hook string
}

type Left struct{ Cb func() }

type Right struct{ Cb chan int }

// Tied: Left.Cb and Right.Cb tie, so encoding/json decodes neither.
type Tied struct {
	Left
	Right
}

type Untagged struct{ Cb func() }

type Tagged struct{ N int `+"`json:\"Cb\"`"+` }

// TaggedWins: of two Cb at one depth the tagged one is decoded.
type TaggedWins struct {
	Untagged
	Tagged
}

type Loose struct{ X chan int }

// BadName: encoding/json ignores the invalid tag name and promotes Loose's
// fields, so X hides Loose.X.
type BadName struct {
	Loose `+"`json:\"bad'name\"`"+`
	X     int
}

// Deeper: Loose.X is promoted and decoded.
type Deeper struct{ Loose `+"`json:\"bad'name\"`"+` }
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
		{"NamedParam", []string{"NamedParam.C is a chan int"}},
		{"Shadowed", nil},
		{"Tied", nil},
		{"TaggedWins", nil},
		{"BadName", nil},
		{"Deeper", []string{"Deeper.Loose.X is a chan int"}},
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
