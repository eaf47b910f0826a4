//go:build !goexperiment.jsonv2

package jsondecode_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/streamgen/streamgen/runtime/jsondecode"
)

// order and item are a message as a service would declare it; decodeOrder
// and decodeItem are written the way the generator emits decoders.
type order struct {
	ID       int     `json:"id"`
	Customer string  `json:"customer"`
	Items    []item  `json:"items"`
	Note     *string `json:"note"`
}

type item struct {
	SKU   string
	Qty   int
	Price float64
}

func decodeOrder(d *jsondecode.Decoder, v *order) {
	if !d.Object() {
		return
	}
	var seen [4]bool
	for i := 0; d.Member(i); i++ {
		switch string(d.Key()) {
		case "id":
			d.Seen(&seen[0])
			d.Int(&v.ID)
		case "customer":
			d.Seen(&seen[1])
			d.String(&v.Customer)
		case "items":
			d.Seen(&seen[2])
			if d.Null() {
				v.Items = nil
				break
			}
			v.Items = []item{}
			for j := 0; d.Element(j); j++ {
				v.Items = append(v.Items, item{})
				decodeItem(d, &v.Items[j])
			}
		case "note":
			d.Seen(&seen[3])
			if d.Null() {
				v.Note = nil
				break
			}
			v.Note = new(string)
			d.String(v.Note)
		default:
			d.Unknown("id", "customer", "items", "note")
		}
	}
}

func decodeItem(d *jsondecode.Decoder, v *item) {
	if !d.Object() {
		return
	}
	var seen [3]bool
	for i := 0; d.Member(i); i++ {
		switch string(d.Key()) {
		case "SKU":
			d.Seen(&seen[0])
			d.String(&v.SKU)
		case "Qty":
			d.Seen(&seen[1])
			d.Int(&v.Qty)
		case "Price":
			d.Seen(&seen[2])
			d.Float64(&v.Price)
		default:
			d.Unknown("SKU", "Qty", "Price")
		}
	}
}

// fastOrder is the generated fast path: it reports whether body decoded
// into v (a zero order) without falling back.
func fastOrder(body []byte, v *order) bool {
	d := jsondecode.Start(body)
	decodeOrder(&d, v)
	return d.End()
}

// unmarshalOrder is what a generated Decode does: the fast path, and
// encoding/json for whatever it fails on.
func unmarshalOrder(body []byte, v *order) error {
	if fastOrder(body, v) {
		return nil
	}
	*v = order{}
	return json.Unmarshal(body, v)
}

const orderBody = `{
  "id": 48213,
  "customer": "Ada Lovelace",
  "items": [
    {"SKU": "BK-1843-NOTES", "Qty": 2, "Price": 12.5},
    {"SKU": "PEN-0007", "Qty": 1, "Price": 89.99},
    {"SKU": "INK-BLUE", "Qty": 3, "Price": 7.25}
  ],
  "note": "Leave it with the porter."
}`

func TestOrderAgainstUnmarshal(t *testing.T) {
	accepted := []string{
		orderBody,
		`{}`,
		`{"id":1}`,
		`{"items":[]}`,
		`{"items":null}`,
		`{"items":[null,{}]}`,
		`{"note":null}`,
		`{"note":""}`,
		`{"id":null,"customer":null}`,
		`{"extra":{"nested":[1,2,{"x":"y"}]},"id":2}`,
		`{"customer":"tab\tin \"quotes\" \u00e9"}`,
		`{"items":[{"SKU":"a","Qty":-0,"Price":-1e-3,"other":true}]}`,
		` { "id" : 9223372036854775807 } `,
	}
	fallback := []string{
		`{"ID":1}`,                            // case-insensitive match
		`{"Items":[]}`,                        // likewise
		`{"id":1,"id":2}`,                     // repeated key
		`{"items":[{"sku":"a"}]}`,             // case-insensitive, one level down
		`{"\u0069d":1}`,                       // a key with an escape
		`{"é":1}`,                             // a key beyond ASCII
		"{\"customer\":\"\xff\"}",             // not UTF-8
		`{"id":1.5}`,                          // type error
		`{"id":"1"}`,                          // type error
		`{"id":9223372036854775808}`,          // out of range
		`{"items":{}}`,                        // type error
		`{"items":[1]}`,                       // type error
		`{"note":5}`,                          // type error
		`null`,                                // not an object
		`{"id":1,}`,                           // syntax error
		`{"id":1} x`,                          // trailing garbage
		`{"id":01}`,                           // syntax error
		`{"extra":[1,]}`,                      // syntax error in a skipped value
		`{"items":[{"SKU":"a"},{"Qty":1e2}]}`, // type error
	}
	check := func(body string, wantFast bool) {
		t.Helper()
		var fast order
		ok := fastOrder([]byte(body), &fast)
		var want order
		err := json.Unmarshal([]byte(body), &want)
		if ok != wantFast {
			t.Errorf("%q: fast path %v, want %v", body, ok, wantFast)
		}
		if ok && err != nil {
			t.Errorf("%q: fast path accepted, json.Unmarshal fails: %v", body, err)
		}
		if ok && !reflect.DeepEqual(fast, want) {
			t.Errorf("%q: fast path %+v, json.Unmarshal %+v", body, fast, want)
		}
		var got order
		gotErr := unmarshalOrder([]byte(body), &got)
		if (gotErr != nil) != (err != nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: unmarshalOrder %+v, %v; json.Unmarshal %+v, %v", body, got, gotErr, want, err)
		}
	}
	for _, body := range accepted {
		check(body, true)
	}
	for _, body := range fallback {
		check(body, false)
	}

	// The empty and the null slice must stay apart, as in encoding/json.
	var empty order
	if !fastOrder([]byte(`{"items":[]}`), &empty) || empty.Items == nil {
		t.Errorf(`{"items":[]}: Items %#v, want an empty slice`, empty.Items)
	}
}

// TestOrderMutations compares the generated-style decoder with
// json.Unmarshal on many variations of the order body.
func TestOrderMutations(t *testing.T) {
	body := []byte(orderBody)
	var accepted, total int
	// Each variation changes one byte, deletes one, or cuts the body short.
	try := func(b []byte) {
		total++
		var fast, want order
		ok := fastOrder(b, &fast)
		err := json.Unmarshal(b, &want)
		if ok {
			accepted++
			if err != nil || !reflect.DeepEqual(fast, want) {
				t.Errorf("%q: fast %+v, json.Unmarshal %+v, %v", b, fast, want, err)
			}
		}
	}
	const replacements = "{}[],:\"\\ 0-.e1tnx\xff"
	for i := range body {
		for j := range len(replacements) {
			b := append([]byte{}, body...)
			b[i] = replacements[j]
			try(b)
		}
		try(append(append([]byte{}, body[:i]...), body[i+1:]...))
		try(body[:i])
	}
	if accepted == 0 || accepted == total {
		t.Errorf("%d of %d variations accepted", accepted, total)
	}
}

// orderAllocs is what decoding orderBody must allocate: the value's own
// strings (longer than one byte: the runtime has the others), the note's
// pointer, and the growth of the items slice appended to one by one.
func orderAllocs(v *order) int {
	n := 0
	str := func(s string) {
		if len(s) > 1 {
			n++
		}
	}
	str(v.Customer)
	if v.Note != nil {
		n++
		str(*v.Note)
	}
	var s []item
	for range v.Items {
		if len(s) == cap(s) {
			n++
		}
		s = append(s, item{})
	}
	for _, it := range v.Items {
		str(it.SKU)
	}
	return n
}

// The fast path decodes the order body as encoding/json does
// (BenchmarkOrderAllocation counts what it allocates).
func TestOrderFastPath(t *testing.T) {
	body := []byte(orderBody)
	var got, want order
	if !fastOrder(body, &got) {
		t.Fatal("the fast path failed on the order body")
	}
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fast path %+v\nencoding/json %+v", got, want)
	}
}

// BenchmarkOrderAllocation: decoding the order allocates what its value
// holds and nothing more (orderAllocs, reported as needed-allocs/op; make
// bench checks allocs/op against it).
func BenchmarkOrderAllocation(b *testing.B) {
	body := []byte(orderBody)
	var v order
	if !fastOrder(body, &v) {
		b.Fatal("the fast path failed on the order body")
	}
	needed := orderAllocs(&v)
	b.ReportAllocs()
	for b.Loop() {
		v = order{}
		if !fastOrder(body, &v) {
			b.Fatal("the fast path failed")
		}
	}
	b.ReportMetric(float64(needed), "needed-allocs/op")
}

func BenchmarkOrder(b *testing.B) {
	body := []byte(orderBody)
	b.Run("jsondecode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var v order
			if err := unmarshalOrder(body, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var v order
			if err := json.Unmarshal(body, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
