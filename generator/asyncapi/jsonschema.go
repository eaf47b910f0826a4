package asyncapi

import (
	"cmp"
	"go/types"
	"slices"
	"strconv"
	"strings"

	"github.com/streamgen/streamgen/generator/internal/jsonfield"
)

// jsonSchema is the JSON Schema (draft 07, the base of AsyncAPI's schema
// format) of the JSON that encoding/json writes for a Go type: what the
// generated publishers send and the handlers read.
type jsonSchema struct {
	// ref points to a named type's schema in components.schemas.
	ref *namedSchema
	// doc is the doc comment that describes the value; note is text said
	// after it.
	doc  docKey
	note string

	types           []string
	format          string
	contentEncoding string
	pattern         string
	enum            []node
	minimum         node // int64 or nil
	maximum         node // int64, uint64 or nil
	minItems        node // int64 or nil
	maxItems        node // int64 or nil
	items           *jsonSchema
	properties      []schemaProperty
	required        []string
	additional      *jsonSchema // additionalProperties
	propertyNames   *jsonSchema
	oneOf           []*jsonSchema
	// goType names the Go type of a components.schemas entry.
	goType string
}

// schemaProperty is one property of an object schema.
type schemaProperty struct {
	name   string
	schema *jsonSchema
}

// namedSchema is a named Go type's entry in components.schemas. Every named
// type reached gets one, so a recursive type refers to itself instead of
// repeating forever.
type namedSchema struct {
	typ *types.Named
	// id is the type written with full package paths; unique.
	id string
	// key is the entry's name, set by assignSchemaKeys.
	key    string
	schema *jsonSchema
}

// schemaBuilder derives the schemas of Go types and collects the named
// types they reach.
type schemaBuilder struct {
	byID  map[string]*namedSchema
	named []*namedSchema // in the order reached
}

func newSchemaBuilder() *schemaBuilder {
	return &schemaBuilder{byID: map[string]*namedSchema{}}
}

// ref returns a schema that refers to the components.schemas entry of the
// named type n, making the entry first if needed.
func (b *schemaBuilder) ref(n *types.Named) *jsonSchema {
	return &jsonSchema{ref: b.component(n)}
}

func (b *schemaBuilder) component(n *types.Named) *namedSchema {
	id := types.TypeString(n, nil)
	if ns := b.byID[id]; ns != nil {
		return ns
	}
	ns := &namedSchema{typ: n, id: id}
	b.byID[id] = ns
	b.named = append(b.named, ns)
	ns.schema = b.body(n)
	ns.schema.goType = id
	ns.schema.doc = typeDocKey(n)
	return ns
}

// body is the schema of the named type n itself: its own encoding when it
// has one, else that of its underlying type.
func (b *schemaBuilder) body(n *types.Named) *jsonSchema {
	switch {
	case jsonfield.HasMethod(n, "MarshalJSON") || jsonfield.HasMethod(n, "UnmarshalJSON"):
		return &jsonSchema{note: "Its MarshalJSON and UnmarshalJSON methods choose its JSON form, which the Go type does not show."}
	case jsonfield.HasMethod(n, "MarshalText") || jsonfield.HasMethod(n, "UnmarshalText"):
		return &jsonSchema{types: []string{"string"}, note: "A string, written by its MarshalText and read by its UnmarshalText method."}
	}
	if st, ok := n.Underlying().(*types.Struct); ok {
		return b.object(st, typeDocKey(n), types.TypeString(n, nil))
	}
	return b.structural(n.Underlying(), typeDocKey(n))
}

// typeDocKey is where the doc comment of the named type n is found.
func typeDocKey(n *types.Named) docKey {
	obj := n.Origin().Obj()
	if obj.Pkg() == nil {
		return docKey{}
	}
	return docKey{pkg: obj.Pkg().Path(), typ: obj.Name()}
}

// schemaOf returns the schema of a value of type t that is not nil: a
// pointer is described by what it points to (see nullable for nil). owner
// is where the doc comments of the fields of an anonymous struct type are
// found.
func (b *schemaBuilder) schemaOf(t types.Type, owner docKey) *jsonSchema {
	t = types.Unalias(t)
	if p, ok := t.(*types.Pointer); ok {
		return b.schemaOf(p.Elem(), owner)
	}
	if isTime(t) {
		return &jsonSchema{types: []string{"string"}, format: "date-time"}
	}
	if n, ok := t.(*types.Named); ok && n.Obj().Pkg() != nil {
		return b.ref(n)
	}
	return b.structural(t.Underlying(), owner)
}

// isTime reports whether t is time.Time, which encodes as an RFC 3339
// string.
func isTime(t types.Type) bool {
	n, ok := t.(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "time" && n.Obj().Name() == "Time"
}

// structural returns the schema of the type structure u.
func (b *schemaBuilder) structural(u types.Type, owner docKey) *jsonSchema {
	switch u := u.(type) {
	case *types.Basic:
		return basicSchema(u)
	case *types.Struct:
		return b.object(u, owner, types.TypeString(u, nil))
	case *types.Slice:
		if isByteSlice(u) {
			return &jsonSchema{types: []string{"string"}, contentEncoding: "base64"}
		}
		return &jsonSchema{types: []string{"array"}, items: b.element(u.Elem(), owner)}
	case *types.Array:
		n := u.Len()
		return &jsonSchema{types: []string{"array"}, items: b.element(u.Elem(), owner), minItems: n, maxItems: n}
	case *types.Map:
		s := &jsonSchema{types: []string{"object"}, additional: b.element(u.Elem(), owner)}
		key := types.Unalias(u.Key())
		if k, ok := key.Underlying().(*types.Basic); ok && k.Info()&types.IsInteger != 0 && !jsonfield.HasMethod(key, "MarshalText") {
			pattern := "^-?[0-9]+$"
			if k.Info()&types.IsUnsigned != 0 {
				pattern = "^[0-9]+$"
			}
			s.propertyNames = &jsonSchema{pattern: pattern}
		}
		return s
	case *types.Pointer:
		// the underlying type of a named pointer type
		return b.schemaOf(u.Elem(), owner)
	case *types.Interface:
		return &jsonSchema{}
	}
	// channels and functions: encoding/json cannot write them, and the
	// message type check reports any a message reaches.
	return &jsonSchema{note: "encoding/json cannot write this type."}
}

// element returns the schema of a slice, array or map element of type t:
// null stands for a nil element.
func (b *schemaBuilder) element(t types.Type, owner docKey) *jsonSchema {
	s := b.schemaOf(t, owner)
	if mayBeNull(t) {
		s = nullable(s)
	}
	return s
}

// isByteSlice reports whether encoding/json writes s as a base64 string: a
// slice of a byte kind whose pointer has no marshal method.
func isByteSlice(s *types.Slice) bool {
	elem := types.Unalias(s.Elem())
	b, ok := elem.Underlying().(*types.Basic)
	if !ok || b.Kind() != types.Uint8 {
		return false
	}
	return !jsonfield.HasMethod(elem, "MarshalJSON") && !jsonfield.HasMethod(elem, "MarshalText")
}

// basicSchema is the schema of a boolean, number or string.
func basicSchema(b *types.Basic) *jsonSchema {
	integer := func(format string, minimum, maximum node) *jsonSchema {
		return &jsonSchema{types: []string{"integer"}, format: format, minimum: minimum, maximum: maximum}
	}
	switch b.Kind() {
	case types.Bool:
		return &jsonSchema{types: []string{"boolean"}}
	case types.String:
		return &jsonSchema{types: []string{"string"}}
	case types.Int8:
		return integer("int32", int64(-1<<7), int64(1<<7-1))
	case types.Int16:
		return integer("int32", int64(-1<<15), int64(1<<15-1))
	case types.Int32:
		return integer("int32", nil, nil)
	case types.Int, types.Int64:
		return integer("int64", nil, nil)
	case types.Uint8:
		return integer("int32", int64(0), int64(1<<8-1))
	case types.Uint16:
		return integer("int32", int64(0), int64(1<<16-1))
	case types.Uint32:
		return integer("int64", int64(0), int64(1<<32-1))
	case types.Uint, types.Uint64, types.Uintptr:
		// larger than int64 allows: no format
		return integer("", int64(0), uint64(1<<64-1))
	case types.Float32:
		return &jsonSchema{types: []string{"number"}, format: "float"}
	case types.Float64:
		return &jsonSchema{types: []string{"number"}, format: "double"}
	}
	return &jsonSchema{note: "encoding/json cannot write this type."}
}

// quotedSchema is the schema of a field tagged with the string option: its
// value JSON-encoded inside a string.
func quotedSchema(b *types.Basic) *jsonSchema {
	s := &jsonSchema{types: []string{"string"}, note: "The value written as JSON inside a string (the json tag's string option)."}
	switch {
	case b.Info()&types.IsBoolean != 0:
		s.enum = []node{"true", "false"}
	case b.Info()&types.IsUnsigned != 0:
		s.pattern = "^[0-9]+$"
	case b.Info()&types.IsInteger != 0:
		s.pattern = "^-?[0-9]+$"
	}
	return s
}

// mayBeNull reports whether encoding/json writes null for some value of
// type t: a nil pointer, slice, map or interface, when the type does not
// choose its own encoding.
func mayBeNull(t types.Type) bool {
	t = types.Unalias(t)
	if _, ok := t.(*types.Pointer); ok {
		return true
	}
	if n, ok := t.(*types.Named); ok && (jsonfield.HasMethod(n, "MarshalJSON") || jsonfield.HasMethod(n, "MarshalText")) {
		return false
	}
	switch t.Underlying().(type) {
	case *types.Pointer, *types.Slice, *types.Map:
		return true
	}
	return false
}

// nullable returns a schema that also allows null.
func nullable(s *jsonSchema) *jsonSchema {
	switch {
	case s.ref != nil || len(s.oneOf) > 0:
		return &jsonSchema{oneOf: []*jsonSchema{s, {types: []string{"null"}}}}
	case len(s.types) == 0:
		return s // allows anything already
	case slices.Contains(s.types, "null"):
		return s
	}
	c := *s
	c.types = append(slices.Clone(s.types), "null")
	if c.enum != nil {
		c.enum = append(slices.Clone(s.enum), nil)
	}
	return &c
}

// object is the schema of a struct: its properties are the fields
// encoding/json writes, in the order it writes them. A field is required
// when encoding/json always writes it. id identifies the struct type (see
// jsonfield.Of). owner is where the doc comments of st's own fields are
// found.
func (b *schemaBuilder) object(st *types.Struct, owner docKey, id string) *jsonSchema {
	s := &jsonSchema{types: []string{"object"}, properties: []schemaProperty{}}
	for _, f := range jsonfield.Of(st, id) {
		fs := b.field(f, fieldDocKey(owner, f))
		s.properties = append(s.properties, schemaProperty{name: f.Name, schema: fs})
		if f.AlwaysWritten() {
			s.required = append(s.required, f.Name)
		}
	}
	return s
}

// fieldDocKey is where the doc comment of the field f of a struct whose own
// fields' comments are at owner is found: at owner, or, for a promoted
// field, at the named type it was promoted from.
func fieldDocKey(owner docKey, f jsonfield.Field) docKey {
	i := f.Index[len(f.Index)-1]
	switch {
	case !f.Promoted:
		return owner.field(i)
	case f.Embedded != nil:
		return typeDocKey(f.Embedded).field(i)
	}
	return docKey{}
}

// field returns the schema of one struct field's value; doc is where its
// doc comment is.
func (b *schemaBuilder) field(f jsonfield.Field, doc docKey) *jsonSchema {
	omitsNil := f.OmitEmpty || f.OmitZero
	var s *jsonSchema
	if basic := f.QuotedBasic(); basic != nil {
		s = quotedSchema(basic)
	} else {
		s = b.schemaOf(f.Type, doc)
	}
	if mayBeNull(f.Type) && !omitsNil {
		s = nullable(s)
	}
	s.doc = doc // s is the field's own: schemaOf and nullable make new ones
	return s
}

// docKey says where a doc comment is: the declaration of the type typ of
// package pkg, or with path, a field of it ("2" is its third field, "2.0"
// the first field of the anonymous struct that field has).
type docKey struct {
	pkg, typ, path string
}

// field returns the key of the i-th field of the struct k is the key of.
func (k docKey) field(i int) docKey {
	if k.typ == "" {
		return docKey{}
	}
	if k.path == "" {
		k.path = strconv.Itoa(i)
	} else {
		k.path += "." + strconv.Itoa(i)
	}
	return k
}

// toNode writes s as a document node. docs holds the doc comments.
func (s *jsonSchema) toNode(docs docIndex) *object {
	o := newObject()
	if s.ref != nil {
		o.set("$ref", schemaRef(s.ref.key))
	}
	o.setNonEmpty("description", joinText(docs[s.doc], s.note))
	switch len(s.types) {
	case 0:
	case 1:
		o.set("type", s.types[0])
	default:
		ts := make([]node, len(s.types))
		for i, t := range s.types {
			ts[i] = t
		}
		o.set("type", ts)
	}
	o.setNonEmpty("format", s.format)
	o.setNonEmpty("contentEncoding", s.contentEncoding)
	o.setNonEmpty("pattern", s.pattern)
	if s.enum != nil {
		o.set("enum", slices.Clone(s.enum))
	}
	for _, kv := range []struct {
		key string
		v   node
	}{{"minimum", s.minimum}, {"maximum", s.maximum}, {"minItems", s.minItems}, {"maxItems", s.maxItems}} {
		if kv.v != nil {
			o.set(kv.key, kv.v)
		}
	}
	if s.items != nil {
		o.set("items", s.items.toNode(docs))
	}
	if s.properties != nil {
		props := newObject()
		for _, p := range s.properties {
			props.set(p.name, p.schema.toNode(docs))
		}
		o.set("properties", props)
	}
	if len(s.required) > 0 {
		req := make([]node, len(s.required))
		for i, r := range s.required {
			req[i] = r
		}
		o.set("required", req)
	}
	if s.additional != nil {
		o.set("additionalProperties", s.additional.toNode(docs))
	}
	if s.propertyNames != nil {
		o.set("propertyNames", s.propertyNames.toNode(docs))
	}
	if len(s.oneOf) > 0 {
		alts := make([]node, len(s.oneOf))
		for i, a := range s.oneOf {
			alts[i] = a.toNode(docs)
		}
		o.set("oneOf", alts)
	}
	o.setNonEmpty("x-go-type", s.goType)
	return o
}

// schemaRef is the reference to the components.schemas entry key.
func schemaRef(key string) string { return "#/components/schemas/" + key }

// joinText joins the non-empty texts with a blank line.
func joinText(texts ...string) string {
	var parts []string
	for _, t := range texts {
		if t = strings.TrimSpace(t); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n\n")
}

// assignSchemaKeys names the components.schemas entries: the type's name
// (with its type arguments, Page_Item for Page[Item]) where that is
// unique; else qualified by the package name (orders.Item); else by the
// package path; a name still shared gets a number.
func assignSchemaKeys(named []*namedSchema) {
	base := func(ns *namedSchema) string {
		return componentKey(types.TypeString(ns.typ, func(*types.Package) string { return "" }))
	}
	byPkgName := func(ns *namedSchema) string {
		return componentKey(ns.typ.Obj().Pkg().Name()) + "." + base(ns)
	}
	byPath := func(ns *namedSchema) string {
		return componentKey(ns.typ.Obj().Pkg().Path()) + "." + base(ns)
	}
	assignUnique(named, func(ns *namedSchema) string { return ns.id },
		func(ns *namedSchema, key string) { ns.key = key }, base, byPkgName, byPath)
}

// assignUnique gives each item the first of the names that no other item
// of the list gets, trying the namers in turn; items left with a shared
// name get the last name with a number, in the order of id.
func assignUnique[T any](items []T, id func(T) string, set func(T, string), namers ...func(T) string) {
	left := slices.Clone(items)
	taken := map[string]bool{}
	for _, name := range namers {
		counts := map[string]int{}
		for _, it := range left {
			counts[name(it)]++
		}
		var still []T
		for _, it := range left {
			if n := name(it); counts[n] == 1 && !taken[n] {
				set(it, n)
				taken[n] = true
			} else {
				still = append(still, it)
			}
		}
		left = still
	}
	if len(left) == 0 {
		return
	}
	slices.SortFunc(left, func(a, b T) int { return strings.Compare(id(a), id(b)) })
	last := namers[len(namers)-1]
	for _, it := range left {
		for i := 2; ; i++ {
			if n := last(it) + "_" + strconv.Itoa(i); !taken[n] {
				set(it, n)
				taken[n] = true
				break
			}
		}
	}
}

// componentKey turns a Go type or package name into a key AsyncAPI
// accepts for a component: each run of characters other than ASCII
// letters, digits, '.' and '_' becomes one '_', and none is left at the
// end.
func componentKey(s string) string { return documentKey(s, "._") }

// documentKey turns s into a key of letters, digits and the characters of
// keep: each run of other characters becomes one '_', and none is left at
// the end; "_" when nothing is left.
func documentKey(s, keep string) string {
	var b strings.Builder
	under := false
	for _, r := range s {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(keep, r)) {
			b.WriteRune(r)
			under = r == '_'
		} else if !under {
			b.WriteByte('_')
			under = true
		}
	}
	return cmp.Or(strings.TrimRight(b.String(), "_"), "_")
}
