package runtime_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime"
)

type item struct {
	N int    `json:"n"`
	S string `json:"s"`
}

// upperCodec decodes JSON and then puts S in upper case, so that a test
// can tell which decoder ran.
type upperCodec struct{ runtime.JSON }

func (upperCodec) Decode(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return err
	}
	it := v.(*item)
	it.S = strings.ToUpper(it.S)
	return nil
}

func handleJSON(decode func([]byte, *item) bool) runtime.Handler {
	return runtime.HandleJSON("Item", runtime.Policy{}, decode, func(context.Context, *item, runtime.Metadata) runtime.Outcome { return runtime.Ack() })
}

// HandleJSON decodes with the generated decoder under the JSON codec; when
// that reports false, what it filled in is thrown away and encoding/json
// decodes a new value, errors included.
func TestHandleJSONUsesTheDecoderUnderJSON(t *testing.T) {
	calls := 0
	fast := handleJSON(func(body []byte, v *item) bool {
		calls++
		v.N, v.S = 1, "fast"
		return true
	})
	v, err := fast.Decode(runtime.JSON{}, []byte(`{"n":2,"s":"std"}`))
	if err != nil || *v.(*item) != (item{1, "fast"}) || calls != 1 {
		t.Fatalf("Decode = %+v, %v after %d calls; want the generated decoder's value", v, err, calls)
	}

	declines := handleJSON(func(body []byte, v *item) bool {
		v.N, v.S = 99, "partial"
		return false
	})
	v, err = declines.Decode(runtime.JSON{}, []byte(`{"s":"std"}`))
	if err != nil || *v.(*item) != (item{0, "std"}) {
		t.Fatalf("Decode = %+v, %v; want encoding/json's value into a new item", v, err)
	}
	_, err = declines.Decode(runtime.JSON{}, []byte(`{"n":"x"}`))
	plain := handle()
	_, want := plain.Decode(runtime.JSON{}, []byte(`{"n":"x"}`))
	if err == nil || want == nil || err.Error() != want.Error() {
		t.Errorf("error = %v, want Handle's %v", err, want)
	}
	_, err = declines.Decode(runtime.JSON{}, []byte(`null`))
	if err == nil || !strings.Contains(err.Error(), "the body is null") {
		t.Errorf("a null body: error = %v, want it refused", err)
	}
}

// Under another codec the generated decoder is never called.
func TestHandleJSONLeavesOtherCodecsAlone(t *testing.T) {
	h := handleJSON(func([]byte, *item) bool {
		t.Error("the generated JSON decoder ran under another codec")
		return true
	})
	v, err := h.Decode(upperCodec{}, []byte(`{"n":3,"s":"abc"}`))
	if err != nil || *v.(*item) != (item{3, "ABC"}) {
		t.Fatalf("Decode = %+v, %v; want the codec's value", v, err)
	}
	none := handleJSON(nil)
	if v, err := none.Decode(runtime.JSON{}, []byte(`{"n":4}`)); err != nil || v.(*item).N != 4 {
		t.Errorf("without a decoder: %+v, %v", v, err)
	}
}

func handle() runtime.Handler {
	return runtime.Handle("Item", runtime.Policy{}, func(context.Context, *item, runtime.Metadata) runtime.Outcome { return runtime.Ack() })
}
