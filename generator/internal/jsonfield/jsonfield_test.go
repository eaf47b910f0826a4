package jsonfield

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"slices"
	"testing"
)

const src = `package p

type Label string

type hidden struct {
	Promoted string ` + "`json:\"promoted\"`" + `
}

type Base struct {
	ID    string ` + "`json:\"id\"`" + `
	Clash string ` + "`json:\"clash\"`" + `
	Deep  string ` + "`json:\"deep\"`" + `
	Plain string
}

type Extra struct {
	Note  string ` + "`json:\"note\"`" + `
	Clash string ` + "`json:\"clash\"`" + `
	Plain string ` + "`json:\"Plain\"`" + `
}

type Embeds struct {
	Base
	*Extra
	hidden
	Label
	Deep string ` + "`json:\"deep\"`" + `
}

type Options struct {
	Skipped  string ` + "`json:\"-\"`" + `
	unexported int
	Count    int     ` + "`json:\"count,string\"`" + `
	Maybe    *bool   ` + "`json:\"maybe,omitempty,string\"`" + `
	Items    []int   ` + "`json:\"items,omitempty\"`" + `
	Pair     [2]int  ` + "`json:\"pair,omitempty\"`" + `
	Inner    Base    ` + "`json:\"inner,omitempty\"`" + `
	Zero     int     ` + "`json:\"zero,omitzero\"`" + `
	Bad      string  ` + "`json:\"a,b\"`" + `
	Odd      string  ` + "`json:\"ä\"`" + `
	Quoted   []int   ` + "`json:\"quoted,string\"`" + `
}

type Self struct {
	*Self
	Name string
}

type Text struct{}

func (*Text) UnmarshalText([]byte) error { return nil }
func (Text) MarshalJSON() ([]byte, error) { return nil, nil }

type WrongSig struct{}

func (*WrongSig) UnmarshalJSON(string) error { return nil }
`

func checked(t *testing.T) *types.Package {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := (&types.Config{Importer: importer.Default()}).Check("p", fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pkg
}

func structOf(t *testing.T, pkg *types.Package, name string) *types.Struct {
	t.Helper()
	return pkg.Scope().Lookup(name).Type().Underlying().(*types.Struct)
}

// TestDominance pins encoding/json's rules for fields of one name: the
// shallowest wins, then the tagged one; a tie writes none. Promoted fields
// say the type they come from.
func TestDominance(t *testing.T) {
	pkg := checked(t)
	var got []string
	for _, f := range Of(structOf(t, pkg, "Embeds"), "p.Embeds") {
		from := "-"
		if f.Embedded != nil {
			from = f.Embedded.Obj().Name()
		}
		got = append(got, fmt.Sprintf("%s%v optional=%v promoted=%v from=%s", f.Name, f.Index, f.Optional, f.Promoted, from))
	}
	want := []string{
		"id[0 0] optional=false promoted=true from=Base",
		"note[1 0] optional=true promoted=true from=Extra",
		"Plain[1 2] optional=true promoted=true from=Extra",
		"promoted[2 0] optional=false promoted=true from=hidden",
		"Label[3] optional=false promoted=false from=-",
		"deep[4] optional=false promoted=false from=-",
	}
	if !slices.Equal(got, want) {
		t.Errorf("fields\n got %q\nwant %q", got, want)
	}
	// A struct that embeds itself is explored once.
	var self []string
	for _, f := range Of(structOf(t, pkg, "Self"), "p.Self") {
		self = append(self, f.Name)
	}
	if !slices.Equal(self, []string{"Name"}) {
		t.Errorf("Self has fields %q", self)
	}
}

// TestOptions checks the tag options: names, "-", omitempty, omitzero and
// string, and which fields are always written.
func TestOptions(t *testing.T) {
	pkg := checked(t)
	type row struct {
		name                        string
		always, quoted, quotedBasic bool
	}
	var got []row
	for _, f := range Of(structOf(t, pkg, "Options"), "p.Options") {
		got = append(got, row{f.Name, f.AlwaysWritten(), f.Quoted, f.QuotedBasic() != nil})
	}
	want := []row{
		{"count", true, true, true},
		{"maybe", false, true, true},
		{"items", false, false, false},
		{"pair", true, false, false},  // omitempty never leaves out a non-empty array
		{"inner", true, false, false}, // nor a struct
		{"zero", false, false, false},
		{"a", true, false, false},
		{"ä", true, false, false},
		{"quoted", true, false, false}, // string applies to basic kinds only
	}
	if !slices.Equal(got, want) {
		t.Errorf("fields\n got %v\nwant %v", got, want)
	}
}

func TestHasMethod(t *testing.T) {
	pkg := checked(t)
	typ := func(name string) types.Type { return pkg.Scope().Lookup(name).Type() }
	for _, tc := range []struct {
		t      types.Type
		method string
		want   bool
	}{
		{typ("Text"), "UnmarshalText", true}, // on the pointer
		{types.NewPointer(typ("Text")), "UnmarshalText", true},
		{typ("Text"), "MarshalJSON", true},
		{typ("Text"), "UnmarshalJSON", false},
		{typ("WrongSig"), "UnmarshalJSON", false}, // not json.Unmarshaler's signature
		{typ("Base"), "MarshalText", false},
	} {
		if got := HasMethod(tc.t, tc.method); got != tc.want {
			t.Errorf("HasMethod(%s, %s) = %v, want %v", tc.t, tc.method, got, tc.want)
		}
	}
}
