package jsoncheck

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/streamgen/streamgen/generator"
	"github.com/streamgen/streamgen/runtime"
)

// decoder is a generated decoder of one message type, type-erased for the
// tables below.
type decoder struct {
	name string
	// fast runs the generated decoder into a new value (nil for a type
	// left to encoding/json whole), and std json.Unmarshal. handler decodes
	// as the Handler that Mount builds with it does under the JSON codec,
	// and codec as runtime.JSON does alone.
	fast    func(body []byte) (any, bool)
	std     func(body []byte) (any, error)
	handler func(body []byte) (any, error)
	codec   func(body []byte) (any, error)
}

func decoderOf[T any](name string, fast func([]byte, *T) bool) decoder {
	h := runtime.HandleJSON(name, runtime.Policy{}, fast, func(context.Context, *T, runtime.Metadata) runtime.Outcome { return runtime.OutcomeOf(nil) })
	var fastOf func([]byte) (any, bool)
	if fast != nil {
		fastOf = func(body []byte) (any, bool) {
			v := new(T)
			return v, fast(body, v)
		}
	}
	return decoder{
		name: name,
		fast: fastOf,
		std: func(body []byte) (any, error) {
			v := new(T)
			return v, json.Unmarshal(body, v)
		},
		handler: func(body []byte) (any, error) { return h.Decode(runtime.JSON{}, body) },
		codec: func(body []byte) (any, error) {
			v := new(T)
			if err := (runtime.JSON{}).Decode(body, v); err != nil {
				return nil, err
			}
			return v, nil
		},
	}
}

// decoders are the generated decoders of the package's message types.
func decoders() []decoder {
	return []decoder{
		decoderOf("Scalars", streamgen_decode_Scalars),
		decoderOf("Order", streamgen_decode_Order),
		decoderOf("Node", streamgen_decode_Node),
		decoderOf("Mixed", streamgen_decode_Mixed),
		decoderOf("Empty", streamgen_decode_Empty),
		decoderOf("Euro", streamgen_decode_Euro),
		// left to encoding/json whole: their types decode themselves
		decoderOf[Methods]("Methods", nil),
		decoderOf[Calls]("Calls", nil),
	}
}

// compare holds dec to encoding/json on body: when the generated decoder
// accepts body, json.Unmarshal must accept it too, with the same value; and
// the Handler must decode body to the value, or fail with the error, that
// the JSON codec gives. It reports whether the generated decoder accepted.
func compare(t testing.TB, dec decoder, body []byte) bool {
	t.Helper()
	want, stdErr := dec.std(body)
	var got any
	ok := false
	if dec.fast != nil {
		got, ok = dec.fast(body)
	}
	if ok {
		if stdErr != nil {
			t.Errorf("%s: the generated decoder accepted %q, which encoding/json refuses: %v", dec.name, body, stdErr)
		} else if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the generated decoder decoded %q to\n\t%#v\nencoding/json to\n\t%#v", dec.name, body, got, want)
		}
	}
	hv, herr := dec.handler(body)
	cv, cerr := dec.codec(body)
	switch {
	case (herr == nil) != (cerr == nil) || herr != nil && herr.Error() != cerr.Error():
		t.Errorf("%s: the Handler's error on %q is %v, the JSON codec's %v", dec.name, body, herr, cerr)
	case herr == nil && !reflect.DeepEqual(hv, cv):
		t.Errorf("%s: the Handler decoded %q to\n\t%#v\nthe JSON codec to\n\t%#v", dec.name, body, hv, cv)
	}
	return ok
}

func ptr[T any](v T) *T { return &v }

// canonical returns, per message type, bodies the generated decoder must
// decode itself: what json.Marshal writes of full values, and the same
// indented.
func canonical(t testing.TB) map[string][][]byte {
	lv := Level(-7)
	when := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	values := map[string][]any{
		"Scalars": {
			Scalars{},
			Scalars{B: true, S: "ünïcode ✓ and \"quotes\"\n", I: -1 << 40, I8: -128, I16: 32767, I32: -1 << 31, I64: 1<<63 - 1,
				U: 1 << 50, U8: 255, U16: 65535, U32: 1<<32 - 1, U64: 1<<64 - 1, UP: 12345, F32: 3.25e38, F64: -1.5e-300,
				St: "shipped", Lv: -128, Rune: 'ß', CamelCase: "c", Dash: "dash", Odd: "odd", Spaced: "sp", Ünï: "u"},
		},
		"Order": {
			Order{},
			Order{ID: 4711, Customer: "ACME Corporation, Building 7",
				Items: []Item{{SKU: "SKU-1", Qty: 2, Price: 19.99}, {SKU: "SKU-2", Qty: 1, Price: 0.5}},
				Refs:  []*Item{{SKU: "r"}, nil}, Main: &Item{SKU: "m", Qty: 3}, Backup: Item{Price: 1e21},
				Note: ptr("a note"), Count: ptr(0), Grid: [][]int{{1, 2}, {}, nil}, Tags: Tags{"a", ""},
				Statuses: []Status{"new"}, Levels: []*Level{&lv, nil}, Flags: []bool{true, false}, Weights: []float32{0.1, -2}},
			Order{Items: []Item{}, Refs: []*Item{}, Grid: [][]int{}, Tags: Tags{}},
		},
		"Node": {
			Node{Name: "root", Children: []Node{{Name: "a", Children: []Node{{Name: "a1"}}}, {Name: "b"}}, Next: &Node{Name: "next"}},
		},
		"Mixed": {
			Mixed{},
			Mixed{Map: map[string]int{"x": 1}, Nested: map[string][]Item{"k": {{SKU: "n"}}}, Any: []any{1.5, "s", nil, map[string]any{"a": true}},
				Bytes: []byte("bytes"), Array: [3]int{1, 2, 3}, Raw: json.RawMessage(`{"raw":[1,2]}`), Number: "12.50",
				When: when, Until: &when, WithEmb: Wrapper{Embedded{"in"}, 3},
				Quoted: Quoted{N: 7}, IntKeys: map[int]string{3: "three"},
				Ifaces: []any{"x"}, Dup: "d1", Dup2: "d2", Untagged: "u", Tagged: "t"},
		},
		"Methods": {
			Methods{},
			Methods{Upper: "UP", Cents: 1234, CentsPtr: ptr(Cents(5)), Keys: map[Upper]Status{"K": "v"}, Uppers: []Upper{"A", "B"}, When: when},
		},
		"Calls": {
			Calls{},
			Calls{C: Counted{A: 1}, P: &Counted{A: 2}, L: []Counted{{A: 3}}, T: "t", K: map[CountedText]int{"k": 4}, X: 5},
		},
		"Empty": {Empty{}},
		"Euro":  {Euro{Euro: 1}},
	}
	out := map[string][][]byte{}
	for name, vs := range values {
		for _, v := range vs {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			var indented bytes.Buffer
			if err := json.Indent(&indented, b, "", "\t "); err != nil {
				t.Fatal(err)
			}
			out[name] = append(out[name], b, indented.Bytes())
		}
	}
	return out
}

// TestGeneratedDecodersDecodeWhatJSONMarshalWrites: on what json.Marshal
// writes, each generated decoder decodes the body itself, to encoding/json's
// value.
func TestGeneratedDecodersDecodeWhatJSONMarshalWrites(t *testing.T) {
	bodies := canonical(t)
	for _, dec := range decoders() {
		if len(bodies[dec.name]) == 0 {
			t.Fatalf("no bodies for %s", dec.name)
		}
		for _, body := range bodies[dec.name] {
			if _, err := dec.std(body); err != nil {
				t.Fatalf("%s: encoding/json refuses the test's own body %s: %v", dec.name, body, err)
			}
			switch ok := compare(t, dec, body); {
			case !ok && dec.fast != nil && fastPath:
				t.Errorf("%s: the generated decoder left %s to encoding/json", dec.name, body)
			case ok && !fastPath:
				t.Errorf("%s: the generated decoder decoded %s under GOEXPERIMENT=jsonv2", dec.name, body)
			}
		}
	}
}

// TestGeneratedDecodersLeaveTheRestToJSON lists bodies that a generated
// decoder does not decode itself, or that are not JSON at all: each gets
// encoding/json's value or error.
func TestGeneratedDecodersLeaveTheRestToJSON(t *testing.T) {
	cases := []struct {
		body string
		// decodedHere is whether the generated decoder of Order takes it.
		decodedHere bool
	}{
		{`{"id":1,"customer":"c"}`, true},
		{` {"id" : 1 , "customer" : "c" } ` + "\n", true},
		{`{"unknown":{"a":[1,2,{"b":null}]},"id":2}`, true},
		{`{"customer":"esc\u00e4ped \"q\" \ud83d\ude00"}`, true},
		{`{"items":null,"main":null,"note":null,"id":null}`, true},
		{`{"items":[null,{"sku":"x"}]}`, true},
		{`{"ID":1}`, false},                        // another case: encoding/json matches it
		{`{"Customer":"x","customer":"y"}`, false}, // both match one field
		{`{"\u0069d":1}`, false},                   // an escaped key
		{`{"id":1,"id":2}`, false},                 // a key twice
		{`{"items":[{"sku":"a"}],"items":[{"qty":1}]}`, false},
		{`{"id":1e2}`, false},
		{`{"id":1.5}`, false},
		{`{"id":"1"}`, false},
		{`{"id":99999999999999999999}`, false},
		{`{"customer":1}`, false},
		{`{"customer":"\xff"}`, false},
		{`{"customer":"tab	in"}`, false},
		{`{"items":{}}`, false},
		{`{"items":[1]}`, false},
		{`{"main":[]}`, false},
		{`{"id":1,}`, false},
		{`{"id":1 "customer":"c"}`, false},
		{`{"id":1}x`, false},
		{`{"id":1}{}`, false},
		{`{"id":01}`, false},
		{`{"id":-}`, false},
		{`{"id":nul}`, false},
		{`{"id":nullx}`, false},
		{`{"unknown":[1,]}`, false},
		{`{"unknown":"\x"}`, false},
		{`null`, false},
		{` null `, false},
		{`[]`, false},
		{`"s"`, false},
		{``, false},
		{`{`, false},
		{`{"id":1`, false},
	}
	order := decoderOf("Order", streamgen_decode_Order)
	for _, c := range cases {
		if got := compare(t, order, []byte(c.body)); got != (c.decodedHere && fastPath) {
			t.Errorf("the generated decoder of Order took %q: %v, want %v", c.body, got, c.decodedHere && fastPath)
		}
	}
	for _, dec := range decoders() {
		for _, c := range cases {
			compare(t, dec, []byte(c.body))
		}
	}
}

// TestDepth: nesting beyond encoding/json's limit is its error, not a
// crash or a value.
func TestDepth(t *testing.T) {
	node := decoderOf("Node", streamgen_decode_Node)
	for _, depth := range []int{100, 9999, 10001, 100000} {
		var b bytes.Buffer
		for range depth {
			b.WriteString(`{"next":`)
		}
		b.WriteString(`{}`)
		for range depth {
			b.WriteString(`}`)
		}
		compare(t, node, b.Bytes())
	}
}

// FuzzGeneratedDecoders holds every generated decoder to encoding/json on
// any body.
func FuzzGeneratedDecoders(f *testing.F) {
	for _, bodies := range canonical(f) {
		for _, b := range bodies {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"ID":1,"items":[{"SKU":"x"}],"next":{"name":"n"}}`))
	f.Add([]byte(`{"i8":-129,"u8":256,"f32":3.5e38,"u":-0,"i":-0}`))
	f.Add([]byte(`{"Euro":1}`)) // 1 under encoding/json v1, 0 under jsonv2
	for _, b := range callBodies {
		f.Add([]byte(b))
	}
	decs := decoders()
	calls := mounted(f)["Calls"]
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, dec := range decs {
			compare(t, dec, body)
		}
		compareCalls(t, calls, body)
	})
}

// TestGeneratedFileIsCurrent: the decoders under test are the ones
// streamgen writes today.
func TestGeneratedFileIsCurrent(t *testing.T) {
	pkgs, err := generator.Generate(t.Context(), generator.Config{Dir: "."}, ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 1 || len(pkgs[0].Diagnostics) > 0 || !pkgs[0].Current() {
		t.Fatalf("streamgen_gen.go is stale or the package has problems (run go generate ./internal/testsupport/jsoncheck): %+v", pkgs)
	}
}

// valuelessDecodes are generated decoders run on bodies whose values hold
// nothing (no strings, slices or pointed-to values), by name, as
// BenchmarkGeneratedDecoderAllocation names them.
func valuelessDecodes(t testing.TB) []struct {
	name   string
	decode func() bool
} {
	scalars := canonical(t)["Scalars"][0] // the zero Scalars: empty strings, zero numbers
	order := []byte(`{"id":4711,"backup":{"qty":2,"price":19.99,"unknown":[1,{"a":"b"}]},"main":null,"items":null}`)
	return []struct {
		name   string
		decode func() bool
	}{
		{"Scalars", func() bool { var v Scalars; return streamgen_decode_Scalars(scalars, &v) }},
		{"Order", func() bool { var v Order; return streamgen_decode_Order(order, &v) }},
	}
}

// The generated decoders decode the bodies of valuelessDecodes
// themselves, where there is a fast path
// (BenchmarkGeneratedDecoderAllocation counts what they allocate).
func TestDecoderDecodesValuelessBodies(t *testing.T) {
	for _, c := range valuelessDecodes(t) {
		if got := c.decode(); got != fastPath {
			t.Errorf("%s: decoded here %v, want %v", c.name, got, fastPath)
		}
	}
}

// BenchmarkGeneratedDecoderAllocation: a generated decoder allocates only
// what the value holds (strings, slices, pointed-to values): on bodies
// whose values hold none, nothing at all, the decoder's own state
// included. make bench checks the allocs/op.
func BenchmarkGeneratedDecoderAllocation(b *testing.B) {
	for _, c := range valuelessDecodes(b) {
		b.Run(c.name, func(b *testing.B) {
			if !fastPath {
				b.Skip("nothing to measure: no fast path under jsonv2")
			}
			b.ReportAllocs()
			for b.Loop() {
				if !c.decode() {
					b.Fatal("left to encoding/json")
				}
			}
		})
	}
}

// BenchmarkGeneratedDecoder compares the generated decoder of Order with
// json.Unmarshal on a full Order.
func BenchmarkGeneratedDecoder(b *testing.B) {
	body := canonical(b)["Order"][2]
	b.Run("generated", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var o Order
			if !streamgen_decode_Order(body, &o) {
				b.Fatal("left to encoding/json")
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var o Order
			if err := json.Unmarshal(body, &o); err != nil {
				b.Fatal(err)
			}
		}
	})
}
