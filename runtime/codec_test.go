package runtime_test

import (
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime"
)

func TestJSONCodec(t *testing.T) {
	var c runtime.Codec = runtime.JSON{}
	if c.ContentType() != "application/json" {
		t.Errorf("ContentType() = %q", c.ContentType())
	}
	body, err := c.Encode(job{ID: 3})
	if err != nil || string(body) != `{"id":3}` {
		t.Fatalf("Encode = %s, %v", body, err)
	}
	var j job
	if err := c.Decode(body, &j); err != nil || j.ID != 3 {
		t.Fatalf("Decode = %+v, %v", j, err)
	}
	if _, err := c.Encode(func() {}); err == nil || !strings.HasPrefix(err.Error(), "runtime: encode: json: ") {
		t.Errorf("Encode(func) error %v", err)
	}
	if err := c.Decode([]byte(`{"id":"x"}`), &j); err == nil || !strings.HasPrefix(err.Error(), "runtime: decode: json: ") {
		t.Errorf("Decode error %v", err)
	}
}
