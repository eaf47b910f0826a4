package generator

import (
	"fmt"
	"go/types"

	"github.com/streamgen/streamgen/runtime"
)

// The import path of protoreflect, whose Message a generated protocol
// buffer message's ProtoReflect method returns.
const protoreflectPath = "google.golang.org/protobuf/reflect/protoreflect"

// codecSpec is a value of the codec key: the runtime codec it names and
// the identifier of its type in package runtime.
type codecSpec struct {
	name  string
	ident string
	codec runtime.Codec
}

// codecSpecs are the values of codec=, json first: the default.
var codecSpecs = []codecSpec{
	{"json", "JSON", runtime.JSON{}},
	{"protobuf", "Protobuf", runtime.Protobuf{}},
	{"msgpack", "MsgPack", runtime.MsgPack{}},
	{"cbor", "CBOR", runtime.CBOR{}},
}

// codecNames lists the values of codec=.
func codecNames() []string {
	names := make([]string, len(codecSpecs))
	for i, c := range codecSpecs {
		names[i] = c.name
	}
	return names
}

// parseCodec returns the codec codec=value names, or a message that says
// which values there are.
func parseCodec(value string) (runtime.Codec, string) {
	for _, c := range codecSpecs {
		if c.name == value {
			return c.codec, ""
		}
	}
	return nil, fmt.Sprintf("codec=%s is not a codec streamgen knows: use codec=json (the default), protobuf (for a protocol buffer message), msgpack or cbor", value)
}

// specOf returns the spec of a codec of codecSpecs, by its content type.
func specOf(c runtime.Codec) (codecSpec, bool) {
	for _, s := range codecSpecs {
		if c != nil && s.codec.ContentType() == c.ContentType() {
			return s, true
		}
	}
	return codecSpec{}, false
}

// IsProtoMessage reports whether *t is a protocol buffer message that
// protoc-gen-go generated: a proto.Message, whose method ProtoReflect
// returns a protoreflect.Message.
func IsProtoMessage(t *types.Named) bool {
	if t == nil {
		return false
	}
	sel := types.NewMethodSet(types.NewPointer(t)).Lookup(t.Obj().Pkg(), "ProtoReflect")
	if sel == nil {
		return false
	}
	sig, ok := sel.Type().(*types.Signature)
	return ok && sig.Params().Len() == 0 && sig.Results().Len() == 1 && isNamed(sig.Results().At(0).Type(), protoreflectPath, "Message")
}

// isDelivery reports whether t is runtime.Delivery: a handler that takes
// it takes every message type of its subscription.
func isDelivery(t *types.Named) bool {
	return t != nil && isNamed(t, runtimePath, "Delivery")
}

// every reports whether h takes every message type of its subscription:
// its message is a runtime.Delivery.
func (h *handler) every() bool { return h.shape.msg != nil && isDelivery(h.shape.msg) }

// codec returns the codec h's messages are written in: its codec=, else
// Protobuf for a protocol buffer message, else nil (the App's codec).
func (h *handler) codec() runtime.Codec {
	if c := h.ann.fields.handler.Codec; c != nil {
		return c
	}
	if IsProtoMessage(h.shape.msg) {
		return runtime.Protobuf{}
	}
	return nil
}

// codecCall returns the codec that Mount's literal gives h's runtime.Handler
// with WithCodec, or nil: its codec=, unless runtime.HandleJSON (or
// HandleBatch, HandleReply) sets the same by itself (Protobuf, for a
// protocol buffer message).
func (h *handler) codecCall() runtime.Codec {
	c := h.ann.fields.handler.Codec
	if c == nil || (IsProtoMessage(h.shape.msg) && c.ContentType() == (runtime.Protobuf{}).ContentType()) {
		return nil
	}
	return c
}

// jsonDecoded reports whether h's message type gets a JSON decoder: not
// a protocol buffer message (JSON reads it with protojson) nor a
// runtime.Delivery (whose body is not decoded).
func (h *handler) jsonDecoded() bool {
	return !h.every() && !IsProtoMessage(h.shape.msg)
}

// checkMessageKinds checks what a handler's kind of message asks of its
// annotation: a handler of runtime.Delivery, which takes every message
// type, has no type=, no codec= and takes one message at a time; codec=
// names a codec the message type can use: protobuf a protocol buffer
// message, msgpack and cbor any other type. It gives a handler of
// runtime.Delivery the wire type runtime.EveryMessageType. Each problem is
// reported at the key at fault.
func (m *model) checkMessageKinds(ds *diagnostics) {
	for _, h := range m.handlers {
		if !h.ok || h.shape.msg == nil {
			continue
		}
		codecArg := h.ann.arg("codec")
		if h.every() {
			h.wire = runtime.EveryMessageType
			if a := h.ann.arg("type"); a != nil {
				ds.add(a.pos, "%s takes a runtime.Delivery, which is every message type of subscription %q: remove type=, or take the message type it names", h.name(), h.ann.name)
			}
			if codecArg != nil {
				ds.add(codecArg.pos, "%s takes a runtime.Delivery, whose body is not decoded (its Decode method reads it by its content type): remove codec=", h.name())
			}
			if h.shape.batch {
				ds.add(h.fn.Name.Pos(), "%s takes a batch of runtime.Delivery: a handler of every message type takes one message at a time; take m runtime.Delivery", h.name())
			}
			continue
		}
		if codecArg == nil {
			continue
		}
		if msg := codecProblem(h.ann.fields.handler.Codec, h.shape.msg, qualifier(m.pkg)); msg != "" {
			ds.add(codecArg.pos, "%s", msg)
		}
	}
}

// codecProblem says why the codec c cannot write and read the message
// type t, or "".
func codecProblem(c runtime.Codec, t *types.Named, qual types.Qualifier) string {
	spec, _ := specOf(c)
	name := types.TypeString(t, qual)
	switch proto := IsProtoMessage(t); {
	case spec.name == "protobuf" && !proto:
		return fmt.Sprintf("codec=protobuf needs a protocol buffer message, generated by protoc-gen-go from a .proto file, and %s is not one: generate it from a message of a .proto file, or use codec=json, msgpack or cbor", name)
	case proto && (spec.name == "msgpack" || spec.name == "cbor"):
		return fmt.Sprintf("codec=%s cannot carry the protocol buffer message %s (its oneofs and the fields it does not know would not survive): use codec=protobuf, its default, or codec=json (the protobuf JSON mapping)", spec.name, name)
	}
	return ""
}

// codecText names the codec of a handler in Mount's doc comment: ", msgpack",
// or "" for the App's.
func codecText(c runtime.Codec) string {
	if spec, ok := specOf(c); ok {
		return ", " + spec.name
	}
	return ""
}

// messageText writes what h takes, for Mount's doc comment: its type, as
// the wire type when that differs, and its codec; "every message type"
// for a handler of runtime.Delivery.
func (e *emitter) messageText(h *handler) string {
	if h.every() {
		return "every other message type"
	}
	t := e.typeString(h)
	if h.wire != h.shape.msg.Obj().Name() {
		t += fmt.Sprintf(" as %q", h.wire)
	}
	return t + codecText(h.codec())
}

// codecExpr writes the value of c as the generated file names it:
// runtime.MsgPack{}; "" for nil.
func (e *emitter) codecExpr(c runtime.Codec) string {
	spec, ok := specOf(c)
	if !ok {
		return ""
	}
	return e.qual(runtimePath) + "." + spec.ident + "{}"
}
