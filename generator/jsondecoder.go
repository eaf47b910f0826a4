package generator

import (
	"fmt"
	"go/types"
	"strconv"
	"strings"

	"github.com/streamgen/streamgen/generator/internal/jsonfield"
)

const jsondecodePath = "github.com/streamgen/streamgen/runtime/jsondecode"

// jsonDecoders plans the JSON decoders of a package's message types: for
// each message type that is a struct the generated code can name, one
// function that decodes a body into it (runtime.HandleJSON calls it), and
// one function per struct type reached from it through its fields.
//
// A generated decoder decodes exactly what encoding/json would into a new
// value, or reports false, and then encoding/json decodes the body (see
// runtime.HandleJSON and package runtime/jsondecode). So it decodes itself
// only what it can decode the same way: structs without embedded fields or
// the string option, slices, pointers, and boolean, number and string
// kinds. Every other field (maps, arrays, interfaces, []byte, json.Number,
// the standard library's types with an UnmarshalJSON or UnmarshalText
// method, struct types it cannot name) it hands to encoding/json with the
// field's own bytes. A message type that reaches a type with such a method
// from anywhere else, or a field encoding/json panics on, has no decoder:
// encoding/json decodes its bodies whole (see leftToJSON).
type jsonDecoders struct {
	pkg *types.Package
	// top is the decoder function of each message type that has one, in
	// the order of the handlers.
	top  map[*types.Named]string
	tops []*types.Named
	// structs is the decoder of each struct type decoded in place, nil for
	// one that cannot be (encoding/json decodes it); order is the order
	// the functions are written in.
	structs map[*types.Named]*structDecoder
	order   []*types.Named
	names   map[string]bool
	// whole caches leftToJSON of named types.
	whole map[*types.Named]bool
	// imports are the packages the decoders name types of.
	imports map[string]*types.Package
}

func newJSONDecoders(pkg *types.Package) *jsonDecoders {
	return &jsonDecoders{
		pkg: pkg,
		top: map[*types.Named]string{}, structs: map[*types.Named]*structDecoder{}, whole: map[*types.Named]bool{},
		names: map[string]bool{}, imports: map[string]*types.Package{},
	}
}

// add plans the decoder of message type t, when it can have one.
func (j *jsonDecoders) add(t *types.Named) {
	if _, ok := j.top[t]; ok {
		return
	}
	if _, ok := j.structFunc(t); !ok {
		return
	}
	j.top[t] = j.name("streamgen_decode_" + j.typeIdent(t))
	j.tops = append(j.tops, t)
}

// decoderFor returns the decoder function of message type t, or "".
func (j *jsonDecoders) decoderFor(t *types.Named) string { return j.top[t] }

// name returns base, or base with a number, that no package-level name
// of the package or of the decoders already takes.
func (j *jsonDecoders) name(base string) string {
	name := base
	for i := 2; j.names[name] || j.pkg.Scope().Lookup(name) != nil; i++ {
		name = fmt.Sprintf("%s%d", base, i)
	}
	j.names[name] = true
	return name
}

// typeIdent is the part of a function name that names t: its name, with
// its package's name in front when it is another package's.
func (j *jsonDecoders) typeIdent(t *types.Named) string {
	if p := t.Obj().Pkg(); p != j.pkg {
		return p.Name() + "_" + t.Obj().Name()
	}
	return t.Obj().Name()
}

// structFunc returns the function that decodes struct type t in place,
// planning it (and the struct types its fields reach) the first time; false
// when t is not a struct type decoded in place.
func (j *jsonDecoders) structFunc(t *types.Named) (string, bool) {
	sd, ok := j.structs[t]
	if !ok {
		sd = j.decodedInPlace(t)
		j.structs[t] = sd
	}
	if sd == nil {
		return "", false
	}
	return sd.fn, true
}

// structDecoder is the function that decodes a struct type in place, and
// the fields it decodes.
type structDecoder struct {
	fn     string
	fields []jsonfield.Field
	// goNames are the fields' Go names and values how each is decoded, set
	// by plan.
	goNames []string
	values  []*valuePlan
}

// decodedInPlace returns the decoder of t when a function of the generated
// file can decode into t as encoding/json does, else nil: t is a struct
// type it can name, that has no UnmarshalJSON or UnmarshalText method, no
// promoted fields, no field with the string option, and nothing that
// leftToJSON leaves to encoding/json.
func (j *jsonDecoders) decodedInPlace(t *types.Named) *structDecoder {
	st, ok := t.Underlying().(*types.Struct)
	if !ok || !j.nameable(t) || decodesItself(t) || j.leftToJSON(t) {
		return nil
	}
	fields := jsonfield.Of(st, types.TypeString(t, nil))
	for _, f := range fields {
		if f.Promoted || f.Quoted {
			return nil
		}
	}
	j.order = append(j.order, t)
	return &structDecoder{fn: j.name("streamgen_json_" + j.typeIdent(t)), fields: fields}
}

// leftToJSON reports whether encoding/json must decode a whole body for
// what is decoded into t to go as it goes with encoding/json, whatever a
// fast path does, because somewhere in t (its fields, elements, map keys
// and values, pointed-to types) is
//   - a type with its own UnmarshalJSON or UnmarshalText from outside the
//     few packages of the standard library whose methods only fill their
//     receiver (see pureDecoder): encoding/json checks a whole body before
//     it calls any such method, and calls each once, where a fast path
//     would call it on meeting its field, and again when it then leaves
//     the body to encoding/json;
//   - or a field that encoding/json panics on: an embedded field of an
//     unexported struct type (or pointer to one) that a json tag names,
//     which encoding/json cannot set ("reflect.Value.Set using value
//     obtained using unexported field").
//
// A struct type that reaches one is not decoded in place, and neither is
// one that reaches such a struct: the message type's body is left to
// encoding/json whole.
func (j *jsonDecoders) leftToJSON(t types.Type) bool {
	t = types.Unalias(t)
	for _, name := range []string{"UnmarshalJSON", "UnmarshalText"} {
		if m := jsonfield.Method(t, name); m != nil {
			return !pureDecoder(m)
		}
	}
	if n, ok := t.(*types.Named); ok {
		if left, seen := j.whole[n]; seen {
			return left // false while n is being looked at: a cycle adds nothing
		}
		j.whole[n] = false
		left := j.leftToJSON(n.Underlying())
		j.whole[n] = left
		return left
	}
	switch u := t.(type) {
	case *types.Pointer:
		return j.leftToJSON(u.Elem())
	case *types.Slice:
		return j.leftToJSON(u.Elem())
	case *types.Array:
		return j.leftToJSON(u.Elem())
	case *types.Map:
		if m := jsonfield.Method(u.Key(), "UnmarshalText"); m != nil && !pureDecoder(m) {
			return true
		}
		return j.leftToJSON(u.Elem())
	case *types.Struct:
		for _, f := range jsonfield.Of(u, types.TypeString(u, nil)) {
			if sf := u.Field(f.Index[0]); !f.Promoted && sf.Embedded() && !sf.Exported() {
				return true
			}
			if j.leftToJSON(f.Type) {
				return true
			}
		}
	}
	return false
}

// pureDecoder reports whether m, an UnmarshalJSON or UnmarshalText method,
// is one of the standard library's that only fill their receiver from their
// argument, so that a call encoding/json would not make cannot be seen:
// those of time, math/big, net, net/netip, log/slog and encoding/json
// (with encoding/json/jsontext, where json.RawMessage is declared under
// GOEXPERIMENT=jsonv2).
func pureDecoder(m *types.Func) bool {
	if m.Pkg() == nil {
		return false
	}
	switch m.Pkg().Path() {
	case "time", "math/big", "net", "net/netip", "log/slog", "encoding/json", "encoding/json/jsontext":
		return true
	}
	return false
}

// decodesItself reports whether encoding/json leaves t to t's own
// UnmarshalJSON or UnmarshalText method.
func decodesItself(t types.Type) bool {
	return jsonfield.HasMethod(t, "UnmarshalJSON") || jsonfield.HasMethod(t, "UnmarshalText")
}

// nameable reports whether the generated file can name t: a type of the
// package, or an exported, non-generic type of a package it can import.
func (j *jsonDecoders) nameable(t types.Type) bool {
	switch t := types.Unalias(t).(type) {
	case *types.Basic:
		return t.Kind() != types.UnsafePointer && t.Info()&types.IsUntyped == 0
	case *types.Named:
		obj := t.Obj()
		if obj.Pkg() == nil {
			return false // error
		}
		if t.TypeArgs().Len() > 0 || t.TypeParams().Len() > 0 {
			return false
		}
		if obj.Parent() != obj.Pkg().Scope() {
			return false // declared in a function
		}
		if obj.Pkg() == j.pkg {
			return true
		}
		return obj.Exported() && importable(j.pkg.Path(), obj.Pkg().Path())
	case *types.Slice:
		return j.nameable(t.Elem())
	case *types.Pointer:
		return j.nameable(t.Elem())
	}
	return false
}

// importable reports whether the package at path from may import the one
// at path to, as far as internal directories go.
func importable(from, to string) bool {
	i := strings.LastIndex(to, "/internal/")
	switch {
	case i >= 0:
	case strings.HasSuffix(to, "/internal"):
		i = len(to) - len("/internal")
	case strings.HasPrefix(to, "internal/") || to == "internal":
		return !strings.Contains(from, ".") // the standard library's own
	default:
		return true
	}
	parent := to[:i]
	return from == parent || strings.HasPrefix(from, parent+"/")
}

// use records the packages whose types the decoders write when they write
// t, a nameable type.
func (j *jsonDecoders) use(t types.Type) {
	switch t := types.Unalias(t).(type) {
	case *types.Named:
		if p := t.Obj().Pkg(); p != j.pkg {
			j.imports[p.Path()] = p
		}
	case *types.Slice:
		j.use(t.Elem())
	case *types.Pointer:
		j.use(t.Elem())
	}
}

// typeCode writes t as the generated file names it, each package by the
// name qual gives it; t is nameable.
func (j *jsonDecoders) typeCode(t types.Type, qual func(path string) string) string {
	switch t := types.Unalias(t).(type) {
	case *types.Basic:
		return t.Name()
	case *types.Named:
		if p := t.Obj().Pkg(); p != j.pkg {
			return qual(p.Path()) + "." + t.Obj().Name()
		}
		return t.Obj().Name()
	case *types.Slice:
		return "[]" + j.typeCode(t.Elem(), qual)
	case *types.Pointer:
		return "*" + j.typeCode(t.Elem(), qual)
	}
	panic(fmt.Sprintf("streamgen: typeCode of %s", t))
}

// plan decides how every field of every struct decoder is decoded, planning
// the struct decoders the fields reach, and records the packages the
// decoders name: after it, writing the decoders decides nothing.
func (j *jsonDecoders) plan() {
	for _, t := range j.tops {
		j.use(t)
	}
	// Planning a struct may plan more: range over the growing list.
	for i := 0; i < len(j.order); i++ {
		t := j.order[i]
		j.use(t)
		sd := j.structs[t]
		st := t.Underlying().(*types.Struct)
		for _, fd := range sd.fields {
			sd.goNames = append(sd.goNames, st.Field(fd.Index[0]).Name())
			sd.values = append(sd.values, j.planValue(fd.Type))
		}
	}
}

// valueKind is how a decoder decodes one JSON value.
type valueKind uint8

const (
	// byStd hands the value's bytes to encoding/json (Decoder.Std).
	byStd valueKind = iota
	// byStruct calls the struct decoder fn.
	byStruct
	// byScalar calls the Decoder method of a basic kind.
	byScalar
	// byPointer decodes null as nil, and anything else into a new elem.
	byPointer
	// bySlice decodes null as nil, and an array element by element.
	bySlice
)

// valuePlan is how the next JSON value is decoded into a value of type t.
type valuePlan struct {
	kind valueKind
	t    types.Type
	// fn is the struct decoder (byStruct); method the Decoder method and
	// conv the basic type a named basic type is converted to (byScalar).
	fn, method, conv string
	// elem is the plan of the pointed-to type or of the elements
	// (byPointer, bySlice), of type elemType.
	elem     *valuePlan
	elemType types.Type
}

// planValue decides how a value of type t is decoded.
func (j *jsonDecoders) planValue(t types.Type) *valuePlan {
	std := &valuePlan{kind: byStd, t: t}
	t = types.Unalias(t)
	if decodesItself(t) {
		return std
	}
	named, _ := t.(*types.Named)
	if named != nil {
		if obj := named.Obj(); obj.Pkg() != nil && obj.Pkg().Path() == "encoding/json" && obj.Name() == "Number" {
			return std
		}
	}
	switch u := t.Underlying().(type) {
	case *types.Struct:
		if named == nil {
			return std
		}
		fn, ok := j.structFunc(named)
		if !ok {
			return std
		}
		return &valuePlan{kind: byStruct, t: t, fn: fn}
	case *types.Basic:
		method := scalarMethod(u.Kind())
		if method == "" {
			return std
		}
		p := &valuePlan{kind: byScalar, t: t, method: method}
		if named != nil {
			p.conv = types.Typ[u.Kind()].Name()
		}
		return p
	case *types.Pointer:
		elem := types.Unalias(u.Elem())
		if _, ok := elem.(*types.Pointer); ok || named != nil || !j.nameable(elem) {
			return std // **T, a named pointer type, or an element it cannot name
		}
		j.use(elem)
		return &valuePlan{kind: byPointer, t: t, elem: j.planValue(elem), elemType: elem}
	case *types.Slice:
		elem := types.Unalias(u.Elem())
		if b, ok := elem.Underlying().(*types.Basic); ok && b.Kind() == types.Uint8 {
			return std // base64, or an array of numbers
		}
		if !j.nameable(t) {
			return std
		}
		j.use(t)
		return &valuePlan{kind: bySlice, t: t, elem: j.planValue(elem), elemType: elem}
	}
	return std
}

// write appends the decoders to w, in gofmt's layout. locals gives the
// functions' local names, so that none hides a name the functions use;
// qual gives the name of an imported package. plan has run.
func (j *jsonDecoders) write(w *codeWriter, locals func() nameSet, qual func(path string) string) {
	if len(j.tops) == 0 {
		return
	}
	jd := qual(jsondecodePath)
	w.blank()
	w.comment("// The JSON decoders of the message types (see runtime.HandleJSON). Each\n// decodes a body exactly as encoding/json would, or reports false, and then\n// encoding/json decodes it.")
	for _, t := range j.tops {
		local := locals()
		body, v, d := freshName("body", local), freshName("v", local), freshName("d", local)
		w.blank()
		w.line("// %s decodes %s into *%s, a new %s.", j.top[t], body, v, types.TypeString(t, qualifier(j.pkg)))
		w.open("func %s(%s %s.Body, %s *%s) %s.Flag {", j.top[t], body, jd, v, j.typeCode(t, qual), jd)
		w.line("%s := %s.Start(%s)", d, jd, body)
		w.line("%s(&%s, %s)", j.structs[t].fn, d, v)
		w.line("return %s.End()", d)
		w.close("}")
	}
	for _, t := range j.order {
		if sd := j.structs[t]; sd != nil {
			j.writeStruct(w, t, sd, locals(), qual)
		}
	}
}

// structWriter writes the body of one struct decoder.
type structWriter struct {
	j     *jsonDecoders
	w     *codeWriter
	qual  func(path string) string
	d     string
	local nameSet
}

// writeStruct writes the function that decodes a JSON object into the
// struct type t in place, as encoding/json's object decoding does: a null
// leaves it as it is, members are matched to fields by exact name (any
// other name that a field's matches without regard to case, and a name
// given twice, fail the decoder), members of no field are skipped.
func (j *jsonDecoders) writeStruct(w *codeWriter, t *types.Named, sd *structDecoder, local nameSet, qual func(path string) string) {
	fields := sd.fields
	d, v := freshName("d", local), freshName("v", local)
	sw := &structWriter{j: j, w: w, qual: qual, d: d, local: local}
	w.blank()
	w.line("// %s decodes a JSON object into *%s.", sd.fn, v)
	w.open("func %s(%s *%s.Decoder, %s *%s) {", sd.fn, d, qual(jsondecodePath), v, j.typeCode(t, qual))
	w.open("if !%s.Object() {", d)
	w.line("return")
	w.close("}")
	i := freshName("i", local)
	loop := fmt.Sprintf("for %s := 0; %s.Member(%s); %s++ {", i, d, i, i)
	if len(fields) == 0 {
		w.open("%s", loop)
		w.line("%s.Unknown()", d)
		w.close("}")
	} else {
		seen := freshName("seen", local)
		w.line("var %s [%d]%s.Flag", seen, len(fields), qual(jsondecodePath))
		w.open("%s", loop)
		w.line("switch %s.Text(%s.Key()) {", qual(jsondecodePath), d) // case labels at the switch's depth
		names := make([]string, len(fields))
		for k, fd := range fields {
			names[k] = strconv.Quote(fd.Name)
			w.line("case %s:", names[k])
			w.depth++
			w.line("%s.Seen(&%s[%d])", d, seen, k)
			name := v + "." + sd.goNames[k]
			sw.value(sd.values[k], "&"+name)
			w.depth--
		}
		w.line("default:")
		w.depth++
		w.line("%s.Unknown(%s)", d, strings.Join(names, ", "))
		w.depth--
		w.line("}")
		w.close("}")
	}
	w.close("}")
}

// scalarMethod returns the Decoder method of a basic kind, or "" when
// encoding/json decodes it (complex numbers: an error).
func scalarMethod(k types.BasicKind) string {
	switch k {
	case types.Bool:
		return "Bool"
	case types.String:
		return "String"
	case types.Int, types.Int8, types.Int16, types.Int32, types.Int64,
		types.Uint, types.Uint8, types.Uint16, types.Uint32, types.Uint64, types.Uintptr,
		types.Float32, types.Float64:
		name := types.Typ[k].Name()
		return strings.ToUpper(name[:1]) + name[1:]
	}
	return ""
}

// value writes the statements that decode the next JSON value as p says,
// into the operand whose address is ptr (&v.Items, x).
// A target holds its zero value when it is decoded (a new message, a new
// element, a new pointed-to value; a key given twice fails), so JSON null,
// which encoding/json makes nil of a pointer or slice, leaves it as it is.
//
// The code written names no builtin and no predeclared type (new, append,
// len, nil, bool, byte, string), which the package may declare its own of:
// package jsondecode does that work (New, Next, NotNil, Flag, Body, Text).
func (sw *structWriter) value(p *valuePlan, ptr string) {
	w, d := sw.w, sw.d
	jd := sw.qual(jsondecodePath)
	switch p.kind {
	case byStruct:
		w.line("%s(%s, %s)", p.fn, d, ptr)
	case byScalar:
		if p.conv != "" {
			ptr = fmt.Sprintf("(*%s)(%s)", p.conv, ptr)
		}
		w.line("%s.%s(%s)", d, p.method, ptr)
	case byPointer:
		x := freshName("x", sw.local)
		w.open("if !%s.Null() {", d)
		w.line("%s := %s.New(%s)", x, jd, ptr)
		sw.value(p.elem, x)
		w.close("}")
	case bySlice:
		e, i := freshName("e", sw.local), freshName("i", sw.local)
		w.open("if !%s.Null() {", d)
		w.open("for %s := 0; %s.Element(%s); %s++ {", i, d, i, i)
		w.line("%s := %s.Next(%s)", e, jd, ptr)
		sw.value(p.elem, e)
		w.close("}")
		w.line("%s.NotNil(%s)", jd, ptr)
		w.close("}")
	default:
		w.line("%s.Std(%s)", d, ptr)
	}
}
