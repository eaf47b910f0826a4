package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/vmihailenco/msgpack/v5"
	"google.golang.org/protobuf/proto"

	"github.com/streamgen/streamgen/internal/testsupport/testpb"
	"github.com/streamgen/streamgen/runtime"
)

// tagged is a message whose wire names come from its json tags.
type tagged struct {
	OrderID   uint64    `json:"order_id"`
	Note      string    `json:"note,omitempty"`
	Internal  string    `json:"-"`
	PlacedAt  time.Time `json:"placed_at"`
	Lines     []string  `json:"lines"`
	Untouched int
}

func sampleOrder() *testpb.Order {
	return &testpb.Order{
		Id: 42, Customer: "ACME", Status: testpb.Status_STATUS_PLACED,
		Items:   []*testpb.OrderItem{{Sku: "SKU-1", Qty: 2, Price: 9.5}},
		Payment: &testpb.Order_Card{Card: "4111"},
		Labels:  map[string]string{"region": "eu"},
	}
}

// Every codec takes back what it wrote.
func TestCodecsRoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 30, 0, 123456789, time.UTC)
	in := tagged{OrderID: 7, Note: "n", Internal: "secret", PlacedAt: at, Lines: []string{"a", "b"}, Untouched: 3}
	for _, c := range []runtime.Codec{runtime.JSON{}, runtime.MsgPack{}, runtime.CBOR{}} {
		t.Run(c.ContentType(), func(t *testing.T) {
			body, err := c.Encode(in)
			if err != nil {
				t.Fatal(err)
			}
			var out tagged
			if err := c.Decode(body, &out); err != nil {
				t.Fatal(err)
			}
			want := in
			want.Internal = "" // json:"-"
			if !out.PlacedAt.Equal(want.PlacedAt) {
				t.Errorf("placed_at %v, want %v", out.PlacedAt, want.PlacedAt)
			}
			out.PlacedAt, want.PlacedAt = time.Time{}, time.Time{}
			if out.OrderID != want.OrderID || out.Note != want.Note || out.Internal != "" || strings.Join(out.Lines, ",") != "a,b" || out.Untouched != 3 {
				t.Errorf("decoded %+v, want %+v", out, want)
			}
		})
	}
	for _, c := range []runtime.Codec{runtime.Protobuf{}, runtime.JSON{}} {
		t.Run("proto as "+c.ContentType(), func(t *testing.T) {
			body, err := c.Encode(sampleOrder())
			if err != nil {
				t.Fatal(err)
			}
			out := &testpb.Order{}
			if err := c.Decode(body, out); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(out, sampleOrder()) {
				t.Errorf("decoded %v, want %v", out, sampleOrder())
			}
		})
	}
}

// MessagePack and CBOR key a struct by its json names, as the JSON of the
// same message does, so that producers in other languages use one name
// for a field whatever the codec; msgpack and cbor tags come first.
func TestMsgPackAndCBORUseTheJSONNames(t *testing.T) {
	in := tagged{OrderID: 7}
	body, err := runtime.MsgPack{}.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := msgpack.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["order_id"]; !ok || m["Untouched"] == nil || m["Internal"] != nil || m["note"] != nil {
		t.Errorf("msgpack keys %v, want order_id, Untouched, no note (omitempty), no Internal (json:\"-\")", m)
	}
	body, err = runtime.CBOR{}.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	m = nil
	if err := cbor.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["order_id"]; !ok || m["Internal"] != nil || m["note"] != nil {
		t.Errorf("cbor keys %v, want order_id, no note, no Internal", m)
	}
	type own struct {
		ID uint64 `json:"id" msgpack:"ident" cbor:"ident"`
	}
	for _, c := range []runtime.Codec{runtime.MsgPack{}, runtime.CBOR{}} {
		body, err := c.Encode(own{ID: 1})
		if err != nil || !bytes.Contains(body, []byte("ident")) {
			t.Errorf("%s: %x, %v: want the key its own tag names", c.ContentType(), body, err)
		}
	}
}

// A body that is not of its codec does not decode, with an error that
// names the codec; a null body, and bytes after the value, are refused.
func TestCodecsRefuseCorruptBodies(t *testing.T) {
	for _, tc := range []struct {
		codec runtime.Codec
		body  []byte
		v     any
		want  string
	}{
		{runtime.JSON{}, []byte(`{"order_id":`), &tagged{}, "runtime: decode: unexpected end of JSON input"},
		{runtime.JSON{}, []byte(`{"order_id":"x"}`), &tagged{}, "runtime: decode: json: "},
		{runtime.JSON{}, []byte(`{"id":"x"}`), &testpb.Order{}, "runtime: decode: protobuf JSON: proto"},
		{runtime.JSON{}, []byte(`null`), &testpb.Order{}, "the body is null"},
		{runtime.Protobuf{}, []byte{0x0a, 0x05, 'a'}, &testpb.Order{}, "runtime: decode: proto"},
		{runtime.Protobuf{}, []byte{0x0a}, &testpb.Order{}, "runtime: decode: proto"},
		{runtime.Protobuf{}, []byte{0x08, 0x01}, &tagged{}, "is not a protocol buffer message"},
		{runtime.MsgPack{}, []byte{0x81, 0xa8}, &tagged{}, "runtime: decode: msgpack: "},
		{runtime.MsgPack{}, []byte{0xc0}, &tagged{}, "the body is nil"},
		{runtime.MsgPack{}, []byte{0x80, 0x80}, &tagged{}, "runtime: decode: msgpack: 1 bytes follow the value"},
		{runtime.MsgPack{}, []byte{0x81, 0xa8, 'o', 'r', 'd', 'e', 'r', '_', 'i', 'd', 0xa1, 'x'}, &tagged{}, "runtime: decode: msgpack: invalid code"},
		{runtime.CBOR{}, []byte{0xa1, 0x68}, &tagged{}, "runtime: decode: cbor: "},
		{runtime.CBOR{}, []byte{0xf6}, &tagged{}, "the body is null"},
		{runtime.CBOR{}, []byte{0xa0, 0xa0}, &tagged{}, "runtime: decode: cbor: 1 bytes of extraneous data"},
	} {
		err := tc.codec.Decode(tc.body, tc.v)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s Decode(%x) = %v, want an error with %q", tc.codec.ContentType(), tc.body, err, tc.want)
		}
	}
	if _, err := (runtime.Protobuf{}).Encode(tagged{}); err == nil || !strings.Contains(err.Error(), "is not a protocol buffer message") {
		t.Errorf("Protobuf.Encode of a struct: %v", err)
	}
}

// JSON reads a protocol buffer message in the protobuf JSON mapping,
// skipping fields it does not know as encoding/json does, and writes it in
// that mapping (lowerCamelCase names, enums by name).
func TestJSONOfAProtocolBufferMessage(t *testing.T) {
	body, err := runtime.JSON{}.Encode(sampleOrder())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(body, []byte(`"status":"STATUS_PLACED"`)) || !bytes.Contains(body, []byte(`"id":"42"`)) {
		t.Errorf("JSON of an order: %s, want the protobuf JSON mapping", body)
	}
	var o testpb.Order
	if err := (runtime.JSON{}).Decode([]byte(`{"id": 3, "customer": "c", "unknownField": true, "items": [{"sku": "s"}]}`), &o); err != nil {
		t.Fatal(err)
	}
	if o.GetId() != 3 || o.GetCustomer() != "c" || o.GetItems()[0].GetSku() != "s" {
		t.Errorf("decoded %v", &o)
	}
}

// Each codec reads its own content type and its common aliases, with any
// parameters and in any case; CodecFor picks the first that does, and the
// first of all for a body without a content type.
func TestCodecFor(t *testing.T) {
	all := []runtime.Codec{runtime.Protobuf{}, runtime.JSON{}, runtime.MsgPack{}, runtime.CBOR{}}
	for ct, want := range map[string]string{
		"":                                "application/protobuf",
		"application/protobuf":            "application/protobuf",
		"application/x-protobuf":          "application/protobuf",
		"application/vnd.google.protobuf": "application/protobuf",
		"Application/JSON; charset=utf-8": "application/json",
		"application/vnd.acme+json":       "application/json",
		"application/x-msgpack":           "application/msgpack",
		"application/vnd.msgpack":         "application/msgpack",
		"application/cbor":                "application/cbor",
		"application/msgpack; version=5":  "application/msgpack",
		"text/xml":                        "",
		"application/":                    "",
		"application/protobuf; =x":        "",
	} {
		got := ""
		if c := runtime.CodecFor(all, ct); c != nil {
			got = c.ContentType()
		}
		if got != want {
			t.Errorf("CodecFor(%q) = %q, want %q", ct, got, want)
		}
	}
	if runtime.CodecFor(nil, "") != nil {
		t.Error("CodecFor of no codecs is not nil")
	}
	if got := runtime.ContentTypes(all[:2]); got != "application/protobuf or application/json" {
		t.Errorf("ContentTypes = %q", got)
	}
}

// A handler reads its own codec, then the App's: a protocol buffer
// message protobuf (which Handle, HandleJSON, HandleBatch and HandleReply
// set) and the App's JSON; a message of a
// codec= its annotation names, that codec and the App's; any other, the
// App's alone.
func TestHandlerCodecs(t *testing.T) {
	noop := func(context.Context, *tagged, runtime.Metadata) runtime.Outcome { return runtime.Ack() }
	pb := runtime.HandleJSON[testpb.Order]("Order", runtime.Policy{}, nil, func(context.Context, *testpb.Order) error { return nil })
	plain := runtime.Handle("T", runtime.Policy{}, noop)
	for _, tc := range []struct {
		name string
		h    runtime.Handler
		app  runtime.Codec
		want string
	}{
		{"protobuf", pb, runtime.JSON{}, "application/protobuf or application/json"},
		{"protobuf on an App of text", pb, textCodec{}, "application/protobuf or text/plain"},
		{"plain", plain, runtime.JSON{}, "application/json"},
		{"plain on an App of text", plain, textCodec{}, "text/plain"},
		{"msgpack", plain.WithCodec(runtime.MsgPack{}), runtime.JSON{}, "application/msgpack or application/json"},
		{"json", plain.WithCodec(runtime.JSON{}), runtime.JSON{}, "application/json"},
		{"batch of protobuf", runtime.HandleBatch[testpb.Order]("Order", runtime.Policy{}, nil, func(context.Context, []*testpb.Order) error { return nil }), runtime.JSON{}, "application/protobuf or application/json"},
		{"request of protobuf", runtime.HandleReply[testpb.Order, testpb.OrderItem]("Order", "OrderItem", runtime.Policy{}, nil, func(context.Context, *testpb.Order) (*testpb.OrderItem, error) { return nil, nil }), runtime.JSON{}, "application/protobuf or application/json"},
		{"request of msgpack", runtime.HandleReply[tagged, tagged]("T", "T", runtime.Policy{}, nil, func(context.Context, tagged) (tagged, error) { return tagged{}, nil }).WithCodec(runtime.MsgPack{}), runtime.JSON{}, "application/msgpack or application/json"},
	} {
		if got := runtime.ContentTypes(tc.h.Codecs(tc.app)); got != tc.want {
			t.Errorf("%s: the handler reads %s, want %s", tc.name, got, tc.want)
		}
	}
}

// recordingPublisher keeps what it is asked to publish, and encodes with
// a codec of its own.
type recordingPublisher struct {
	codec runtime.Codec
	msgs  []runtime.Message
}

func (p *recordingPublisher) Codec() runtime.Codec { return p.codec }
func (p *recordingPublisher) Publish(_ context.Context, _ string, m runtime.Message) error {
	p.msgs = append(p.msgs, m)
	return nil
}

// PublishWith encodes with the codec it is given, whatever the
// publisher's, and says so in the content type; a nil codec is the
// publisher's, as Publish encodes.
func TestPublishWith(t *testing.T) {
	p := &recordingPublisher{codec: textCodec{}}
	ctx := context.Background()
	if err := runtime.PublishWith(ctx, p, runtime.Protobuf{}, runtime.Queue("q"), "Order", sampleOrder()); err != nil {
		t.Fatal(err)
	}
	if err := runtime.PublishAsyncWith(ctx, p, runtime.MsgPack{}, runtime.Queue("q"), "T", tagged{OrderID: 1}).Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := runtime.PublishWith(ctx, p, nil, runtime.Queue("q"), "T", "text"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range p.msgs {
		got = append(got, m.ContentType)
	}
	if strings.Join(got, " ") != "application/protobuf application/msgpack text/plain" {
		t.Errorf("content types %v", got)
	}
	var o testpb.Order
	if err := proto.Unmarshal(p.msgs[0].Body, &o); err != nil || o.GetId() != 42 {
		t.Errorf("the protobuf body decodes to %v, %v", &o, err)
	}
	err := runtime.PublishWith(ctx, p, runtime.Protobuf{}, runtime.Queue("q"), "T", tagged{})
	if err == nil || !strings.HasPrefix(err.Error(), `runtime: publish T to "q": runtime: encode: `) {
		t.Errorf("publishing a struct as protobuf: %v", err)
	}
}

// A Delivery decodes its body with the codec its content type names: the
// App's, or one of the package's; without a content type, the App's.
func TestDeliveryDecode(t *testing.T) {
	pbBody, _ := proto.Marshal(sampleOrder())
	mpBody, _ := runtime.MsgPack{}.Encode(tagged{OrderID: 9})
	var o testpb.Order
	if err := runtime.NewDelivery(pbBody, "application/protobuf", runtime.Metadata{}, nil).Decode(&o); err != nil || o.GetId() != 42 {
		t.Errorf("protobuf: %v, %v", &o, err)
	}
	var tg tagged
	if err := runtime.NewDelivery(mpBody, "application/msgpack", runtime.Metadata{}, runtime.JSON{}).Decode(&tg); err != nil || tg.OrderID != 9 {
		t.Errorf("msgpack: %+v, %v", tg, err)
	}
	if err := runtime.NewDelivery([]byte(`{"order_id":5}`), "", runtime.Metadata{}, nil).Decode(&tg); err != nil || tg.OrderID != 5 {
		t.Errorf("no content type: %+v, %v", tg, err)
	}
	err := runtime.NewDelivery([]byte(`<a/>`), "text/xml", runtime.Metadata{}, textCodec{}).Decode(&tg)
	if err == nil || !strings.Contains(err.Error(), `content type "text/xml" is none of text/plain, application/json, application/protobuf, application/msgpack or application/cbor`) {
		t.Errorf("xml: %v", err)
	}
}

// HandleEvery makes the one handler of every message type, called with
// a *Delivery; a handler of type "*" made otherwise is refused.
func TestHandleEvery(t *testing.T) {
	var got runtime.Delivery
	h := runtime.HandleEvery(runtime.Policy{MaxAttempts: 2}, func(_ context.Context, m runtime.Delivery) error {
		got = m
		return errors.New("boom")
	})
	if !h.Every() || h.MessageType != runtime.EveryMessageType {
		t.Fatalf("HandleEvery made %+v", h)
	}
	md := runtime.Metadata{MessageType: "Anything", MessageID: "m-1"}
	out := h.Call(context.Background(), runtime.NewDelivery([]byte("x"), "text/plain", md, nil), md)
	if out.Action() != runtime.ActionRetry || string(got.Body) != "x" || got.MessageType != "Anything" || got.ContentType != "text/plain" {
		t.Errorf("outcome %v, delivery %+v", out.Action(), got)
	}
	if _, err := h.Decode(runtime.JSON{}, []byte("{}")); err == nil {
		t.Error("the handler of every type decoded a body")
	}
	plain := runtime.Handle("*", runtime.Policy{}, func(context.Context, *tagged, runtime.Metadata) runtime.Outcome { return runtime.Ack() })
	if plain.Every() {
		t.Error("a Handle of type * is a handler of every type")
	}
	err := (&runtime.Subscription{Name: "audit", Handlers: []runtime.Handler{plain}}).Validate(runtime.RabbitMQ)
	if err == nil || !strings.Contains(err.Error(), "make its handler with runtime.HandleEvery") {
		t.Errorf("Validate: %v", err)
	}
	if err := (&runtime.Subscription{Name: "audit", Handlers: []runtime.Handler{h}}).Validate(runtime.RabbitMQ); err != nil {
		t.Errorf("Validate of a handler of every type: %v", err)
	}
	two := &runtime.Subscription{Name: "audit", Handlers: []runtime.Handler{h, h}}
	if err := two.Validate(runtime.RabbitMQ); err == nil || !strings.Contains(err.Error(), `message type "*" is handled twice`) {
		t.Errorf("Validate of two handlers of every type: %v", err)
	}
}
