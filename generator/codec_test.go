package generator

import (
	"go/ast"
	"go/token"
	"go/types"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime"
)

// Every codec= value names a runtime codec that Mount's literal writes:
// the field the key sets reaches the runtime.Handler, and a handler of
// runtime.Delivery is runtime.HandleEvery.
func TestHandleWritesTheCodec(t *testing.T) {
	pkg := types.NewPackage("example.com/p", "p")
	reading := types.NewNamed(types.NewTypeName(token.NoPos, pkg, "Reading", nil), types.NewStruct(nil, nil), nil)
	rt := types.NewPackage(runtimePath, "runtime")
	delivery := types.NewNamed(types.NewTypeName(token.NoPos, rt, "Delivery", nil), types.NewStruct(nil, nil), nil)
	e := &emitter{m: &model{pkg: pkg}, json: newJSONDecoders(pkg)}
	handlerOf := func(msg *types.Named, codec string) *handler {
		h := &handler{fn: &ast.FuncDecl{Name: ast.NewIdent("Record")}, ann: &annotation{}, shape: handlerShape{msg: msg}}
		if codec != "" {
			if msg := h.ann.fields.set("codec", codec); msg != "" {
				t.Fatal(msg)
			}
		}
		return h
	}
	for _, tc := range []struct{ codec, want string }{
		{"", `runtime.HandleJSON[p.Reading]("Reading", runtime.Policy{}, nil, Record)`},
		{"json", `runtime.HandleJSON[p.Reading]("Reading", runtime.Policy{}, nil, Record).WithCodec(runtime.JSON{})`},
		{"msgpack", `runtime.HandleJSON[p.Reading]("Reading", runtime.Policy{}, nil, Record).WithCodec(runtime.MsgPack{})`},
		{"cbor", `runtime.HandleJSON[p.Reading]("Reading", runtime.Policy{}, nil, Record).WithCodec(runtime.CBOR{})`},
	} {
		h := handlerOf(reading, tc.codec)
		if got := render(e.handle(h, runtime.Handler{MessageType: "Reading"})); got != tc.want {
			t.Errorf("codec=%s: Mount writes\n%s\nwant\n%s", tc.codec, got, tc.want)
		}
	}
	h := handlerOf(delivery, "")
	if got := render(e.handle(h, runtime.Handler{Policy: runtime.Policy{MaxAttempts: 2}})); got != `runtime.HandleEvery(runtime.Policy{MaxAttempts: 2}, Record)` {
		t.Errorf("a handler of runtime.Delivery: Mount writes %s", got)
	}
	if !h.every() || handlerOf(reading, "").every() {
		t.Error("every() does not tell runtime.Delivery from another type")
	}
	if IsProtoMessage(reading) || IsProtoMessage(nil) {
		t.Error("a struct is taken for a protocol buffer message")
	}
	for _, name := range codecNames() {
		c, msg := parseCodec(name)
		spec, ok := specOf(c)
		if msg != "" || !ok || spec.name != name || !strings.HasPrefix(c.ContentType(), "application/") {
			t.Errorf("codec=%s: %v, %q", name, c, msg)
		}
	}
}
