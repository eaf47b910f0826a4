package generator

import (
	"cmp"
	"go/token"
	"go/types"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
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
	case hasMethod(n, "MarshalJSON") || hasMethod(n, "UnmarshalJSON"):
		return &jsonSchema{note: "Its MarshalJSON and UnmarshalJSON methods choose its JSON form, which the Go type does not show."}
	case hasMethod(n, "MarshalText") || hasMethod(n, "UnmarshalText"):
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
		if k, ok := key.Underlying().(*types.Basic); ok && k.Info()&types.IsInteger != 0 && !hasMethod(key, "MarshalText") {
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
	return !hasMethod(elem, "MarshalJSON") && !hasMethod(elem, "MarshalText")
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
	if n, ok := t.(*types.Named); ok && (hasMethod(n, "MarshalJSON") || hasMethod(n, "MarshalText")) {
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
// jsonFieldsOf).
func (b *schemaBuilder) object(st *types.Struct, owner docKey, id string) *jsonSchema {
	s := &jsonSchema{types: []string{"object"}, properties: []schemaProperty{}}
	for _, f := range jsonFieldsOf(st, id, owner) {
		fs := b.field(f)
		s.properties = append(s.properties, schemaProperty{name: f.name, schema: fs})
		if f.alwaysWritten() {
			s.required = append(s.required, f.name)
		}
	}
	return s
}

// field returns the schema of one struct field's value.
func (b *schemaBuilder) field(f jsonField) *jsonSchema {
	omitsNil := f.omitEmpty || f.omitZero
	var s *jsonSchema
	if basic := f.quotedBasic(); basic != nil {
		s = quotedSchema(basic)
	} else {
		s = b.schemaOf(f.typ, f.doc)
	}
	if mayBeNull(f.typ) && !omitsNil {
		s = nullable(s)
	}
	s.doc = f.doc // s is the field's own: schemaOf and nullable make new ones
	return s
}

// jsonField is a field of a struct as encoding/json sees it (its
// typeFields), after the fields of embedded structs were promoted.
type jsonField struct {
	name   string
	tagged bool
	index  []int
	typ    types.Type
	// omitEmpty, omitZero and quoted are the options of the json tag;
	// quoted is set only where the string option applies.
	omitEmpty, omitZero, quoted bool
	// optional is set for a field promoted through an embedded pointer,
	// which is left out when the pointer is nil.
	optional bool
	// doc is where the field's doc comment is found.
	doc docKey
}

// alwaysWritten reports whether encoding/json writes the field whatever its
// value.
func (f jsonField) alwaysWritten() bool {
	if f.optional || f.omitZero {
		return false
	}
	if !f.omitEmpty {
		return true
	}
	switch u := types.Unalias(f.typ).Underlying().(type) {
	case *types.Struct:
		return true // omitempty never leaves out a struct
	case *types.Array:
		return u.Len() > 0
	}
	return false
}

// quotedBasic returns the basic type the string option applies to, or nil:
// the option is set, the field's type (or what its pointer points to) is a
// boolean, number or string kind, and it has no marshal method that would
// write it instead.
func (f jsonField) quotedBasic() *types.Basic {
	if !f.quoted {
		return nil
	}
	t := types.Unalias(f.typ)
	if p, ok := t.(*types.Pointer); ok {
		t = types.Unalias(p.Elem())
	}
	if hasMethod(t, "MarshalJSON") || hasMethod(t, "MarshalText") {
		return nil
	}
	b, _ := t.Underlying().(*types.Basic)
	return b
}

// jsonFieldsOf lists the fields encoding/json writes for the struct st,
// following its rules (encoding/json's typeFields): unexported fields and
// fields tagged "-" are left out; the fields of an embedded struct without
// a tag name are promoted; of several fields with one name, the shallowest
// wins, then the tagged one, and when that leaves a tie none is written.
// id identifies st (types.TypeString of its named type, or of st when it
// has none), so that a struct that embeds itself is explored once; owner is
// where the doc comments of st's own fields are found.
func jsonFieldsOf(st *types.Struct, id string, owner docKey) []jsonField {
	type level struct {
		st       *types.Struct
		id       string
		index    []int
		optional bool
		owner    docKey
	}
	var current []level
	next := []level{{st: st, id: id, owner: owner}}
	var count, nextCount map[string]int
	visited := map[string]bool{}
	var fields []jsonField
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
					if !sf.Exported() && !isStructType(et) {
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
				if !validJSONName(name) {
					name = ""
				}
				index := append(slices.Clone(f.index), i)
				if name != "" || !sf.Embedded() || !isStructType(et) {
					field := jsonField{
						name:      cmp.Or(name, sf.Name()),
						tagged:    name != "",
						index:     index,
						typ:       sf.Type(),
						omitEmpty: hasTagOption(opts, "omitempty"),
						omitZero:  hasTagOption(opts, "omitzero"),
						quoted:    hasTagOption(opts, "string") && isQuotableKind(et),
						optional:  f.optional,
						doc:       f.owner.field(i),
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
					var o docKey
					if n, ok := et.(*types.Named); ok {
						o = typeDocKey(n)
					}
					next = append(next, level{
						st: et.Underlying().(*types.Struct), id: id, index: index,
						optional: f.optional || pointer, owner: o,
					})
				}
			}
		}
	}
	slices.SortFunc(fields, func(a, b jsonField) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := cmp.Compare(len(a.index), len(b.index)); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	out := fields[:0]
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		same := fields[i:j]
		if len(same) == 1 || len(same[0].index) != len(same[1].index) || same[0].tagged != same[1].tagged {
			out = append(out, same[0])
		}
		i = j
	}
	slices.SortFunc(out, func(a, b jsonField) int { return slices.Compare(a.index, b.index) })
	return out
}

func isStructType(t types.Type) bool {
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

// validJSONName reports whether encoding/json takes a json tag's name as
// the field's name (else it uses the Go name).
func validJSONName(s string) bool {
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

// hasMethod reports whether t has the method name that encoding/json looks
// for, with the signature of its interface: func() ([]byte, error) for
// MarshalJSON and MarshalText (json.Marshaler, encoding.TextMarshaler),
// func([]byte) error for UnmarshalJSON and UnmarshalText. The method set
// looked in is that of *t, or of t when it is a pointer.
func hasMethod(t types.Type, name string) bool {
	t = types.Unalias(t)
	if _, isPtr := t.(*types.Pointer); !isPtr {
		t = types.NewPointer(t)
	}
	obj, _, _ := types.LookupFieldOrMethod(t, false, nil, name)
	fn, ok := obj.(*types.Func)
	return ok && types.Identical(fn.Signature(), jsonMethodSignature(name))
}

// jsonMethodSignature is the signature encoding/json asks of the method
// name (see hasMethod).
func jsonMethodSignature(name string) *types.Signature {
	bytes := types.NewParam(token.NoPos, nil, "", types.NewSlice(types.Typ[types.Byte]))
	err := types.NewParam(token.NoPos, nil, "", types.Universe.Lookup("error").Type())
	if strings.HasPrefix(name, "Marshal") {
		return types.NewSignatureType(nil, nil, nil, nil, types.NewTuple(bytes, err), false)
	}
	return types.NewSignatureType(nil, nil, nil, types.NewTuple(bytes), types.NewTuple(err), false)
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
