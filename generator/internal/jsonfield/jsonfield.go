// Package jsonfield tells, from the types of a Go package, which fields
// encoding/json writes and reads for a struct and under which names, and
// which types encode themselves. The generator checks that message types
// decode with it; the AsyncAPI document derives their JSON Schema from it.
package jsonfield

import (
	"cmp"
	"go/token"
	"go/types"
	"reflect"
	"slices"
	"strings"
	"unicode"
)

// Field is a field of a struct as encoding/json sees it (its typeFields),
// after the fields of embedded structs were promoted.
type Field struct {
	// Name is the name in JSON; Tagged is set when the json tag gave it.
	Name   string
	Tagged bool
	// Index is the field's index sequence, as reflect.Value.FieldByIndex
	// takes it.
	Index []int
	Type  types.Type
	// OmitEmpty, OmitZero and Quoted are the options of the json tag;
	// Quoted is set only where the string option applies.
	OmitEmpty, OmitZero, Quoted bool
	// Optional is set for a field promoted through an embedded pointer,
	// which is left out when the pointer is nil.
	Optional bool
	// Promoted is set for a field of an embedded struct; Embedded is then
	// that struct's named type (nil when it has none), the type that
	// declares the field, at the last index of Index.
	Promoted bool
	Embedded *types.Named
}

// AlwaysWritten reports whether encoding/json writes the field whatever
// its value.
func (f Field) AlwaysWritten() bool {
	if f.Optional || f.OmitZero {
		return false
	}
	if !f.OmitEmpty {
		return true
	}
	switch u := types.Unalias(f.Type).Underlying().(type) {
	case *types.Struct:
		return true // omitempty never leaves out a struct
	case *types.Array:
		return u.Len() > 0
	}
	return false
}

// QuotedBasic returns the basic type the string option applies to, or nil:
// the option is set, the field's type (or what its pointer points to) is a
// boolean, number or string kind, and it has no marshal method that would
// write it instead.
func (f Field) QuotedBasic() *types.Basic {
	if !f.Quoted {
		return nil
	}
	t := types.Unalias(f.Type)
	if p, ok := t.(*types.Pointer); ok {
		t = types.Unalias(p.Elem())
	}
	if HasMethod(t, "MarshalJSON") || HasMethod(t, "MarshalText") {
		return nil
	}
	b, _ := t.Underlying().(*types.Basic)
	return b
}

// Of lists the fields encoding/json writes for the struct st, following
// its rules (encoding/json's typeFields): unexported fields and fields
// tagged "-" are left out; the fields of an embedded struct without a tag
// name are promoted; of several fields with one name, the shallowest wins,
// then the tagged one, and when that leaves a tie none is written. id
// identifies st (types.TypeString of its named type, or of st when it has
// none), so that a struct that embeds itself is explored once.
func Of(st *types.Struct, id string) []Field {
	type level struct {
		st       *types.Struct
		id       string
		index    []int
		optional bool
		embedded *types.Named
	}
	var current []level
	next := []level{{st: st, id: id}}
	var count, nextCount map[string]int
	visited := map[string]bool{}
	var fields []Field
	for len(next) > 0 {
		current, next = next, nil
		count, nextCount = nextCount, map[string]int{}
		for _, f := range current {
			if visited[f.id] {
				continue
			}
			visited[f.id] = true
			for i := range f.st.NumFields() {
				sf := f.st.Field(i)
				ft := types.Unalias(sf.Type())
				// et is the field's type, or what it points to
				et, pointer := ft, false
				if p, ok := ft.(*types.Pointer); ok {
					et, pointer = types.Unalias(p.Elem()), true
				}
				if sf.Embedded() {
					if !sf.Exported() && !IsStruct(et) {
						continue
					}
				} else if !sf.Exported() {
					continue
				}
				tag := reflect.StructTag(f.st.Tag(i)).Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validName(name) {
					name = ""
				}
				index := append(slices.Clone(f.index), i)
				if name != "" || !sf.Embedded() || !IsStruct(et) {
					field := Field{
						Name:      cmp.Or(name, sf.Name()),
						Tagged:    name != "",
						Index:     index,
						Type:      sf.Type(),
						OmitEmpty: hasTagOption(opts, "omitempty"),
						OmitZero:  hasTagOption(opts, "omitzero"),
						Quoted:    hasTagOption(opts, "string") && isQuotableKind(et),
						Optional:  f.optional,
						Promoted:  len(f.index) > 0,
						Embedded:  f.embedded,
					}
					fields = append(fields, field)
					if count[f.id] > 1 {
						// the struct is embedded twice at this depth: make
						// the tie visible to the dominance rule below
						fields = append(fields, field)
					}
					continue
				}
				id := types.TypeString(et, nil)
				nextCount[id]++
				if nextCount[id] == 1 {
					n, _ := et.(*types.Named)
					next = append(next, level{
						st: et.Underlying().(*types.Struct), id: id, index: index,
						optional: f.optional || pointer, embedded: n,
					})
				}
			}
		}
	}
	slices.SortFunc(fields, func(a, b Field) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		if c := cmp.Compare(len(a.Index), len(b.Index)); c != 0 {
			return c
		}
		if a.Tagged != b.Tagged {
			if a.Tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.Index, b.Index)
	})
	out := fields[:0]
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].Name == fields[i].Name {
			j++
		}
		same := fields[i:j]
		if len(same) == 1 || len(same[0].Index) != len(same[1].Index) || same[0].Tagged != same[1].Tagged {
			out = append(out, same[0])
		}
		i = j
	}
	slices.SortFunc(out, func(a, b Field) int { return slices.Compare(a.Index, b.Index) })
	return out
}

// IsStruct reports whether t's underlying type is a struct.
func IsStruct(t types.Type) bool {
	_, ok := t.Underlying().(*types.Struct)
	return ok
}

// isQuotableKind reports whether the string option applies to t: a
// boolean, number or string kind.
func isQuotableKind(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Info()&(types.IsBoolean|types.IsInteger|types.IsFloat|types.IsString) != 0 && b.Info()&types.IsComplex == 0
}

// hasTagOption reports whether the comma-separated options of a json tag
// include name.
func hasTagOption(opts, name string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == name {
			return true
		}
	}
	return false
}

// validName reports whether encoding/json takes a json tag's name as the
// field's name (else it uses the Go name).
func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// HasMethod reports whether t has the method name that encoding/json looks
// for, with the signature of its interface: func() ([]byte, error) for
// MarshalJSON and MarshalText (json.Marshaler, encoding.TextMarshaler),
// func([]byte) error for UnmarshalJSON and UnmarshalText. The method set
// looked in is that of *t, or of t when it is a pointer.
func HasMethod(t types.Type, name string) bool { return Method(t, name) != nil }

// Method returns the method HasMethod finds, or nil.
func Method(t types.Type, name string) *types.Func {
	t = types.Unalias(t)
	if _, isPtr := t.(*types.Pointer); !isPtr {
		t = types.NewPointer(t)
	}
	obj, _, _ := types.LookupFieldOrMethod(t, false, nil, name)
	if fn, ok := obj.(*types.Func); ok && types.Identical(fn.Signature(), methodSignature(name)) {
		return fn
	}
	return nil
}

// methodSignature is the signature encoding/json asks of the method name
// (see HasMethod).
func methodSignature(name string) *types.Signature {
	bytes := types.NewParam(token.NoPos, nil, "", types.NewSlice(types.Typ[types.Byte]))
	err := types.NewParam(token.NoPos, nil, "", types.Universe.Lookup("error").Type())
	if strings.HasPrefix(name, "Marshal") {
		return types.NewSignatureType(nil, nil, nil, nil, types.NewTuple(bytes, err), false)
	}
	return types.NewSignatureType(nil, nil, nil, types.NewTuple(bytes), types.NewTuple(err), false)
}
