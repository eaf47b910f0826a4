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
