//go:build goexperiment.jsonv2

package jsondecode

import "testing"

// The other tests hold the Decoder to encoding/json v1. Under jsonv2 it
// decodes nothing: Start fails on every body, the simplest one included,
// and every method is then a no-op.
func TestStartFailsUnderJSONv2(t *testing.T) {
	d := Start([]byte(`{"n":1}`))
	var n int
	if d.Object() {
		t.Fatal("Object of a failed Decoder reported an object")
	}
	d.Int(&n)
	if d.End() || n != 0 {
		t.Fatalf("a failed Decoder ended with %d", n)
	}
}
