package benchorder

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/streamgen/streamgen/generator"
	"github.com/streamgen/streamgen/internal/testsupport/benchpair"
)

// TestDecodeDecodesTheBenchmarkBodies: the benchmarks' bodies are decoded
// by the generated decoder itself, to what json.Unmarshal gives.
func TestDecodeDecodesTheBenchmarkBodies(t *testing.T) {
	for _, size := range []int{benchpair.Small, benchpair.Large} {
		body := benchpair.OrderJSON(size)
		var got, want benchpair.Order
		if !Decode(body, &got) {
			t.Fatalf("%d B: left to json.Unmarshal", size)
		}
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%d B: decoded %+v, json.Unmarshal %+v", size, got, want)
		}
	}
}

// TestDecodeTheRequestReplyBodies: the request/reply benchmark's request
// and reply bodies are decoded by the generated decoders themselves, to
// what json.Unmarshal gives.
func TestDecodeTheRequestReplyBodies(t *testing.T) {
	q := benchpair.Quote{SKU: "sku-42", Quantity: 42}
	p := benchpair.PriceOf(q)
	for _, c := range []struct {
		name   string
		v      any
		decode func(body []byte) (any, bool)
	}{
		{"Quote", q, func(body []byte) (any, bool) { var v benchpair.Quote; ok := DecodeQuote(body, &v); return v, ok }},
		{"Price", p, func(body []byte) (any, bool) { var v benchpair.Price; ok := DecodePrice(body, &v); return v, ok }},
	} {
		body, err := json.Marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := c.decode(body)
		if !ok {
			t.Fatalf("%s %s: left to json.Unmarshal", c.name, body)
		}
		if got != c.v {
			t.Errorf("%s %s: decoded %+v, want %+v", c.name, body, got, c.v)
		}
	}
}

// TestGeneratedFileIsCurrent: the decoder is the one streamgen writes
// today.
func TestGeneratedFileIsCurrent(t *testing.T) {
	pkgs, err := generator.Generate(t.Context(), generator.Config{Dir: "."}, ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 1 || len(pkgs[0].Diagnostics) > 0 || !pkgs[0].Current() {
		t.Fatalf("streamgen_gen.go is stale or the package has problems (run go generate ./internal/testsupport/benchpair/benchorder): %+v", pkgs)
	}
}
