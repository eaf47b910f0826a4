package asyncapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/tools/go/packages"

	fx "github.com/streamgen/streamgen/generator/asyncapi/testdata/jsonschema"
)

// schemasOf derives the schemas of the named types of a type-checked
// package and returns components.schemas as JSON reads it back, and the key
// of each named type asked for.
func schemasOf(t *testing.T, pkg *types.Package, files []*ast.File, names ...string) (map[string]any, map[string]string) {
	t.Helper()
	b := newSchemaBuilder()
	refs := map[string]*jsonSchema{}
	for _, name := range names {
		obj := pkg.Scope().Lookup(name)
		if obj == nil {
			t.Fatalf("no type %s in %s", name, pkg.Path())
		}
		refs[name] = b.ref(obj.Type().(*types.Named))
	}
	assignSchemaKeys(b.named)
	docs := docIndex{}
	docs.indexDocs(pkg.Path(), files)
	o := newObject()
	for _, ns := range b.named {
		o.set(ns.key, ns.schema.toNode(docs))
	}
	data, err := writeJSON(o)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := readJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for name, r := range refs {
		keys[name] = r.ref.key
	}
	return tree.(map[string]any), keys
}

// checkSnippet type-checks a package of one file.
func checkSnippet(t *testing.T, src string) (*types.Package, []*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "snippet.go", "package snippet\n\n"+src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: importer.Default()}
	pkg, err := conf.Check("example.com/snippet", fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pkg, []*ast.File{f}
}

// compact writes v as compact JSON with sorted keys.
func compact(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSchemaTable pins the schema of small types, one rule each.
func TestSchemaTable(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      string // the schema of T, compact JSON with sorted keys
		others    string // the other entries of components.schemas, the same way; "" when none
	}{
		{"integers", "type T struct{ A int; B int32; C uint8; D uint64 }",
			`{"properties":{"A":{"format":"int64","type":"integer"},"B":{"format":"int32","type":"integer"},"C":{"format":"int32","maximum":255,"minimum":0,"type":"integer"},"D":{"maximum":18446744073709551615,"minimum":0,"type":"integer"}},"required":["A","B","C","D"],"type":"object","x-go-type":"example.com/snippet.T"}`, ""},
		{"floats bool string", "type T struct{ A float32; B float64; C bool; D string }",
			`{"properties":{"A":{"format":"float","type":"number"},"B":{"format":"double","type":"number"},"C":{"type":"boolean"},"D":{"type":"string"}},"required":["A","B","C","D"],"type":"object","x-go-type":"example.com/snippet.T"}`, ""},
		{"json names, omitempty, skipped", "type T struct{ A int `json:\"a\"`; B int `json:\"b,omitempty\"`; C int `json:\"-\"`; d int; E int `json:\",omitempty\"` }",
			`{"properties":{"E":{"format":"int64","type":"integer"},"a":{"format":"int64","type":"integer"},"b":{"format":"int64","type":"integer"}},"required":["a"],"type":"object","x-go-type":"example.com/snippet.T"}`, ""},
		{"string option", "type T struct{ A int `json:\"a,string\"`; B bool `json:\"b,string\"` }",
			`{"properties":{"a":{"description":"The value written as JSON inside a string (the json tag's string option).","pattern":"^-?[0-9]+$","type":"string"},"b":{"description":"The value written as JSON inside a string (the json tag's string option).","enum":["true","false"],"type":"string"}},"required":["a","b"],"type":"object","x-go-type":"example.com/snippet.T"}`, ""},
		{"pointers are nullable unless omitted", "type T struct{ A *int `json:\"a\"`; B *int `json:\"b,omitempty\"` }",
			`{"properties":{"a":{"format":"int64","type":["integer","null"]},"b":{"format":"int64","type":"integer"}},"required":["a"],"type":"object","x-go-type":"example.com/snippet.T"}`, ""},
		{"nil slices and maps are null", "type T struct{ A []string `json:\"a\"`; B map[string]int `json:\"b\"`; C []string `json:\"c,omitempty\"` }",
			`{"properties":{"a":{"items":{"type":"string"},"type":["array","null"]},"b":{"additionalProperties":{"format":"int64","type":"integer"},"type":["object","null"]},"c":{"items":{"type":"string"},"type":"array"}},"required":["a","b"],"type":"object","x-go-type":"example.com/snippet.T"}`, ""},
		{"bytes and arrays", "type T struct{ A []byte `json:\"a,omitempty\"`; B [2]byte `json:\"b\"` }",
			`{"properties":{"a":{"contentEncoding":"base64","type":"string"},"b":{"items":{"format":"int32","maximum":255,"minimum":0,"type":"integer"},"maxItems":2,"minItems":2,"type":"array"}},"required":["b"],"type":"object","x-go-type":"example.com/snippet.T"}`, ""},
		{"integer map keys", "type T struct{ A map[int]bool `json:\"a,omitempty\"`; B map[uint]bool `json:\"b,omitempty\"` }",
			`{"properties":{"a":{"additionalProperties":{"type":"boolean"},"propertyNames":{"pattern":"^-?[0-9]+$"},"type":"object"},"b":{"additionalProperties":{"type":"boolean"},"propertyNames":{"pattern":"^[0-9]+$"},"type":"object"}},"type":"object","x-go-type":"example.com/snippet.T"}`, ""},
		{"time", "import \"time\"\ntype T struct{ A time.Time `json:\"a\"`; B *time.Time `json:\"b\"` }",
			`{"properties":{"a":{"format":"date-time","type":"string"},"b":{"format":"date-time","type":["string","null"]}},"required":["a","b"],"type":"object","x-go-type":"example.com/snippet.T"}`, ""},
		{"named types are components; doc comments describe", "// T is the root.\ntype T struct {\n\t// A is a child.\n\tA U `json:\"a\"`\n\tB *U `json:\"b\"`\n}\n\n// U is a child.\ntype U string",
			`{"description":"T is the root.","properties":{"a":{"$ref":"#/components/schemas/U","description":"A is a child."},"b":{"oneOf":[{"$ref":"#/components/schemas/U"},{"type":"null"}]}},"required":["a","b"],"type":"object","x-go-type":"example.com/snippet.T"}`,
			`{"U":{"description":"U is a child.","type":"string","x-go-type":"example.com/snippet.U"}}`},
		{"recursion refers to itself", "type T struct{ Next *T `json:\"next,omitempty\"` }",
			`{"properties":{"next":{"$ref":"#/components/schemas/T"}},"type":"object","x-go-type":"example.com/snippet.T"}`, ""},
		{"embedded structs are flattened", "type T struct{ U; *V; W int `json:\"w\"` }\ntype U struct{ A int `json:\"a\"` }\ntype V struct{ B int `json:\"b\"` }",
			`{"properties":{"a":{"format":"int64","type":"integer"},"b":{"format":"int64","type":"integer"},"w":{"format":"int64","type":"integer"}},"required":["a","w"],"type":"object","x-go-type":"example.com/snippet.T"}`, ""},
		{"text marshaler is a string", "type T struct{ A U `json:\"a\"` }\ntype U int\nfunc (U) MarshalText() ([]byte, error) { return nil, nil }",
			`{"properties":{"a":{"$ref":"#/components/schemas/U"}},"required":["a"],"type":"object","x-go-type":"example.com/snippet.T"}`,
			`{"U":{"description":"A string, written by its MarshalText and read by its UnmarshalText method.","type":"string","x-go-type":"example.com/snippet.U"}}`},
		{"json marshaler is anything", "type T struct{ A U `json:\"a\"`; B any `json:\"b\"` }\ntype U struct{ X int }\nfunc (*U) UnmarshalJSON([]byte) error { return nil }",
			`{"properties":{"a":{"$ref":"#/components/schemas/U"},"b":{}},"required":["a","b"],"type":"object","x-go-type":"example.com/snippet.T"}`,
			`{"U":{"description":"Its MarshalJSON and UnmarshalJSON methods choose its JSON form, which the Go type does not show.","x-go-type":"example.com/snippet.U"}}`},
		{"generic instances get a name of their own", "type T struct{ A P[int] `json:\"a\"` }\ntype P[X any] struct{ V X `json:\"v\"` }",
			`{"properties":{"a":{"$ref":"#/components/schemas/P_int"}},"required":["a"],"type":"object","x-go-type":"example.com/snippet.T"}`,
			`{"P_int":{"properties":{"v":{"format":"int64","type":"integer"}},"required":["v"],"type":"object","x-go-type":"example.com/snippet.P[int]"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pkg, files := checkSnippet(t, tc.src)
			schemas, keys := schemasOf(t, pkg, files, "T")
			if got := compact(t, schemas[keys["T"]]); got != tc.want {
				t.Errorf("schema of T:\n got %s\nwant %s", got, tc.want)
			}
			delete(schemas, keys["T"])
			others := ""
			if len(schemas) > 0 {
				others = compact(t, schemas)
			}
			if others != tc.others {
				t.Errorf("other schemas:\n got %s\nwant %s", others, tc.others)
			}
		})
	}
}

// fixture is the type-checked package generator/asyncapi/testdata/jsonschema.
var fixture = sync.OnceValues(func() (*packages.Package, error) {
	pkgs, err := packages.Load(&packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
	}, "./testdata/jsonschema")
	if err != nil {
		return nil, err
	}
	if len(pkgs) != 1 || len(pkgs[0].Errors) > 0 {
		return nil, fmt.Errorf("loading the fixture: %v", pkgs[0].Errors)
	}
	return pkgs[0], nil
})

// TestSchemaAcceptsWhatEncodingJSONWrites encodes values of the fixture's
// types with encoding/json, the way the generated publishers do (through a
// pointer), and checks each against the schema derived from the same types:
// the JSON must be valid; a value with every field set must have exactly the
// schema's properties; the zero value exactly its required ones.
func TestSchemaAcceptsWhatEncodingJSONWrites(t *testing.T) {
	lp, err := fixture()
	if err != nil {
		t.Fatal(err)
	}
	str, level := "s", fx.Level(1)
	at := time.Date(2026, 11, 29, 21, 30, 0, 123, time.UTC)
	wait := 3 * time.Second
	full := []struct {
		name       string
		zero, full any
	}{
		{"Basics", &fx.Basics{}, &fx.Basics{I: math.MinInt64, I8: math.MinInt8, I16: math.MaxInt16, I32: math.MinInt32, I64: math.MaxInt64,
			U: math.MaxUint, U8: math.MaxUint8, U16: math.MaxUint16, U32: math.MaxUint32, U64: math.MaxUint64, UP: 7,
			F32: 1.5, F64: -2.25e100, B: true, S: "x"}},
		{"Tags", &fx.Tags{}, &fx.Tags{Renamed: "r", Omitted: "o", Skipped: "s", Dash: "d", Count: -4, Unsigned: 9, Flag: true, Ratio: 0.5,
			Quoted: `say "hi"`, MaybeInt: new(int), Zero: fx.Inner{N: 1}, Struct: fx.Inner{N: 2}, FullArr: [2]int{1, 2}, Text: level, Bad: "b", Opts: "o"}},
		{"Embeds", &fx.Embeds{}, &fx.Embeds{Base: fx.Base{ID: "i", Clash: "c", Deep: "hidden", Plain: "p"},
			Extra: &fx.Extra{Note: "n", Clash: "c", Plain: "P"}, Label: "l", Deep: "d"}},
		{"Collections", &fx.Collections{}, &fx.Collections{Strings: []string{"a"}, Nested: [][]int{{1}, nil}, Bytes: []byte{0, 255}, Raw: fx.Blob("raw"),
			Fixed: [2]byte{1, 2}, ByName: map[string]int{"a": 1}, ByInt: map[int]string{-1: "x"}, ByUint: map[uint8]bool{255: true},
			ByLevel: map[fx.Level]int{1: 2}, Pointers: map[string]*fx.Inner{"a": {N: 1}, "b": nil}, Items: []*fx.Inner{{N: 1}, nil},
			Any: map[string]any{"k": []any{1, "x"}}, JSON: json.RawMessage(`{"raw":true}`), Levels: []fx.Level{0, 1},
			Anon: struct {
				A int     `json:"a"`
				B *string `json:"b,omitempty"`
			}{A: 1, B: &str}}},
		{"Times", &fx.Times{}, &fx.Times{At: at, Maybe: &at, Wait: wait, Later: &wait}},
		{"Tree", &fx.Tree{}, &fx.Tree{Name: "root", Children: []fx.Tree{{Name: "leaf"}}, Parent: &fx.Tree{Name: "up"}}},
		{"Generic", &fx.Generic{}, &fx.Generic{A: fx.Pair[string, int]{Key: "k", Value: 1}, B: fx.Pair[int, []string]{Key: 2, Value: []string{"v"}}}},
	}
	var names []string
	for _, s := range full {
		names = append(names, s.name)
	}
	schemas, keys := schemasOf(t, lp.Types, lp.Syntax, names...)
	v := &validator{schemas: schemas}
	for _, s := range full {
		t.Run(s.name, func(t *testing.T) {
			schema := schemas[keys[s.name]].(map[string]any)
			props := sortedKeys(schema["properties"].(map[string]any))
			var required []string
			for _, r := range asList(schema["required"]) {
				required = append(required, r.(string))
			}
			sort.Strings(required)
			for _, c := range []struct {
				what string
				val  any
				keys []string
			}{{"zero value", s.zero, required}, {"full value", s.full, props}} {
				data, err := json.Marshal(c.val)
				if err != nil {
					t.Fatal(err)
				}
				got, err := readJSON(data)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range v.validate("", got, schema) {
					t.Errorf("%s %s: %s", c.what, data, e)
				}
				if written := sortedKeys(got.(map[string]any)); !slices.Equal(written, c.keys) {
					t.Errorf("%s %s has the keys %v, want %v", c.what, data, written, c.keys)
				}
			}
		})
	}
	// The validator rejects what the schemas forbid, so the checks above can
	// fail.
	for _, bad := range []struct{ typ, json string }{
		{"Basics", `{"I":1.5,"I8":0,"I16":0,"I32":0,"I64":0,"U":0,"U8":0,"U16":0,"U32":0,"U64":0,"UP":0,"F32":0,"F64":0,"B":false,"S":""}`},
		{"Basics", `{"I":0,"I8":128,"I16":0,"I32":0,"I64":0,"U":0,"U8":0,"U16":0,"U32":0,"U64":0,"UP":0,"F32":0,"F64":0,"B":false,"S":""}`},
		{"Basics", `{"I":0,"I8":0,"I16":0,"I32":0,"I64":0,"U":-1,"U8":0,"U16":0,"U32":0,"U64":0,"UP":0,"F32":0,"F64":0,"B":false,"S":""}`},
		{"Tags", `{"renamed":"","-":"","count":"x","unsigned":"0","flag":"false","ratio":"0","quoted":"\"\"","maybe_int":null,"struct":{"n":0},"full_arr":[0,0],"text":"low","Bad":""}`},
		{"Times", `{"at":"yesterday","maybe":null,"wait":0}`},
		{"Tree", `{"name":"x","children":[{"name":1,"children":null,"parent":null}],"parent":null}`},
		{"Collections", `{"strings":null,"nested":null,"bytes":"not base64!","raw":null,"fixed":[0,0],"by_name":null,"by_int":null,"by_uint":null,"by_level":null,"pointers":null,"items":null,"any":null,"json":null,"custom":{},"levels":null,"anon":{"a":0}}`},
		{"Embeds", `{"id":"","promoted":"","Label":""}`},
	} {
		got, err := readJSON([]byte(bad.json))
		if err != nil {
			t.Fatal(err)
		}
		if errs := v.validate("", got, schemas[keys[bad.typ]].(map[string]any)); len(errs) == 0 {
			t.Errorf("%s accepted %s", bad.typ, bad.json)
		}
	}
}

func sortedKeys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// validator checks JSON against the schemas streamgen writes: the keywords
// it uses, no others.
type validator struct {
	schemas map[string]any // components.schemas
}

var knownKeywords = []string{"$ref", "description", "x-go-type", "type", "format", "contentEncoding", "pattern", "enum", "const",
	"minimum", "maximum", "minItems", "maxItems", "items", "properties", "required", "additionalProperties", "propertyNames", "oneOf"}

// validate returns what is wrong with val under schema.
func (v *validator) validate(path string, val any, schema map[string]any) []string {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, path+": "+fmt.Sprintf(format, args...)) }
	for k := range schema {
		if !slices.Contains(knownKeywords, k) {
			fail("the schema has the keyword %s, which the validator does not know", k)
		}
	}
	if ref, ok := schema["$ref"].(string); ok {
		target, ok := v.schemas[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)
		if !strings.HasPrefix(ref, "#/components/schemas/") || !ok {
			fail("$ref %s does not resolve", ref)
			return errs
		}
		return append(errs, v.validate(path, val, target)...)
	}
	if alts, ok := schema["oneOf"].([]any); ok {
		n := 0
		for _, a := range alts {
			if len(v.validate(path, val, a.(map[string]any))) == 0 {
				n++
			}
		}
		if n != 1 {
			fail("%v matches %d of oneOf, want 1", val, n)
		}
	}
	if enum, ok := schema["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return reflect.DeepEqual(e, val) }) {
		fail("%v is not one of %v", val, enum)
	}
	if c, ok := schema["const"]; ok && !reflect.DeepEqual(c, val) {
		fail("%v is not %v", val, c)
	}
	if ts, ok := schema["type"]; ok {
		var types []string
		switch ts := ts.(type) {
		case string:
			types = []string{ts}
		case []any:
			for _, x := range ts {
				types = append(types, x.(string))
			}
		}
		if !slices.ContainsFunc(types, func(t string) bool { return jsonTypeIs(val, t) }) {
			fail("%v is not of type %v", val, types)
			return errs
		}
	}
	switch val := val.(type) {
	case string:
		if p, ok := schema["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(val) {
			fail("%q does not match %s", val, p)
		}
		if schema["format"] == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, val); err != nil {
				fail("%q is not a date-time", val)
			}
		}
		if schema["contentEncoding"] == "base64" {
			if _, err := base64.StdEncoding.DecodeString(val); err != nil {
				fail("%q is not base64", val)
			}
		}
	case json.Number:
		n, ok := new(big.Float).SetString(string(val))
		if !ok {
			fail("%v is not a number", val)
			break
		}
		for key, below := range map[string]bool{"minimum": true, "maximum": false} {
			bound, ok := schema[key].(json.Number)
			if !ok {
				continue
			}
			b, _ := new(big.Float).SetString(string(bound))
			if c := n.Cmp(b); below && c < 0 || !below && c > 0 {
				fail("%v is beyond the %s %v", val, key, bound)
			}
		}
	case []any:
		for key, atLeast := range map[string]bool{"minItems": true, "maxItems": false} {
			if bound, ok := schema[key].(json.Number); ok {
				b, _ := bound.Int64()
				if atLeast && int64(len(val)) < b || !atLeast && int64(len(val)) > b {
					fail("%d items, %s is %d", len(val), key, b)
				}
			}
		}
		if items, ok := schema["items"].(map[string]any); ok {
			for i, item := range val {
				errs = append(errs, v.validate(fmt.Sprintf("%s[%d]", path, i), item, items)...)
			}
		}
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		for _, r := range asList(schema["required"]) {
			if _, ok := val[r.(string)]; !ok {
				fail("the required property %s is missing", r)
			}
		}
		for k, x := range val {
			if names, ok := schema["propertyNames"].(map[string]any); ok {
				errs = append(errs, v.validate(path+"."+k+" (name)", k, names)...)
			}
			if ps, ok := props[k].(map[string]any); ok {
				errs = append(errs, v.validate(path+"."+k, x, ps)...)
			} else if ap, ok := schema["additionalProperties"].(map[string]any); ok {
				errs = append(errs, v.validate(path+"."+k, x, ap)...)
			}
		}
	}
	return errs
}

// jsonTypeIs reports whether the JSON value val is of the JSON Schema type
// t.
func jsonTypeIs(val any, t string) bool {
	switch val := val.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case string:
		return t == "string"
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	case json.Number:
		if t == "number" {
			return true
		}
		_, ok := new(big.Int).SetString(string(val), 10)
		return t == "integer" && ok
	}
	return false
}

func TestAssignUnique(t *testing.T) {
	type item struct{ id, a, b string }
	items := []*item{{"1", "x", "p.x"}, {"2", "x", "q.x"}, {"3", "y", "r.y"}, {"4", "z", "s.z"}, {"5", "z", "s.z"}}
	keys := map[string]string{}
	assignUnique(items, func(i *item) string { return i.id }, func(i *item, k string) { keys[i.id] = k },
		func(i *item) string { return i.a }, func(i *item) string { return i.b })
	want := map[string]string{"1": "p.x", "2": "q.x", "3": "y", "4": "s.z_2", "5": "s.z_3"}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
}

func TestDocumentKey(t *testing.T) {
	for _, tc := range []struct{ in, keep, want string }{
		{"Page[Item]", "._", "Page_Item"},
		{"Pair[string, int]", "._", "Pair_string_int"},
		{"github.com/a-b/c", "._", "github.com_a_b_c"},
		{"jobs.dead", ".-_", "jobs.dead"},
		{"orders v2/#", ".-_", "orders_v2"},
		{"日本", "._", "_"},
	} {
		if got := documentKey(tc.in, tc.keep); got != tc.want {
			t.Errorf("documentKey(%q, %q) = %q, want %q", tc.in, tc.keep, got, tc.want)
		}
	}
}
