package adapter_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/streamgen/streamgen/internal/testsupport/testpb"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

// Each delivery is read with the codec its content type names among those
// its handler reads, so that one queue takes protobuf and JSON at once
// while its producers move from one to the other; a content type none of
// them reads, or a body that does not decode, is poison with a reason
// that says which.
func TestTheContentTypePicksTheCodec(t *testing.T) {
	order := &testpb.Order{Id: 42, Customer: "ACME", Payment: &testpb.Order_Invoice{Invoice: "INV-1"}}
	pbBody, err := proto.Marshal(order)
	if err != nil {
		t.Fatal(err)
	}
	jsonBody, err := runtime.JSON{}.Encode(order)
	if err != nil {
		t.Fatal(err)
	}
	mpBody, err := runtime.MsgPack{}.Encode(job{ID: 7})
	if err != nil {
		t.Fatal(err)
	}
	cborBody, err := runtime.CBOR{}.Encode(job{ID: 7})
	if err != nil {
		t.Fatal(err)
	}
	var orders []*testpb.Order
	var jobs []job
	sub := &runtime.Subscription{Name: "mixed", Handlers: []runtime.Handler{
		runtime.HandleJSON[testpb.Order]("Order", runtime.Policy{DeadLetter: "mixed.dead"}, nil, func(_ context.Context, o *testpb.Order) error {
			orders = append(orders, o)
			return nil
		}),
		runtime.HandleJSON[job]("Job", runtime.Policy{DeadLetter: "mixed.dead"}, nil, func(_ context.Context, j job) error {
			jobs = append(jobs, j)
			return nil
		}).WithCodec(runtime.MsgPack{}),
	}}
	c, _ := newConsumer(sub, runtime.RabbitMQ)
	for _, tc := range []struct {
		name, typ, contentType string
		body                   []byte
		reason                 string // "" for a delivery that is handled
	}{
		{"protobuf", "Order", "application/protobuf", pbBody, ""},
		{"protobuf JSON", "Order", "application/json", jsonBody, ""},
		{"no content type, protobuf", "Order", "", pbBody, ""},
		{"an alias of protobuf", "Order", "application/x-protobuf", pbBody, ""},
		{"msgpack for Order", "Order", "application/msgpack", mpBody,
			`content type "application/msgpack" cannot be read by the codecs of message type "Order", which read application/protobuf or application/json`},
		{"corrupt protobuf", "Order", "application/protobuf", []byte{0x0a, 0x09, 'A'},
			"body does not decode into Order: runtime: decode: proto:"}, // protobuf-go writes a space or a no-break space after "proto:", at random
		{"corrupt protobuf JSON", "Order", "application/json", []byte(`{"id": {}}`),
			"body does not decode into Order: runtime: decode: protobuf JSON: "},
		{"msgpack", "Job", "application/msgpack", mpBody, ""},
		{"no content type, msgpack", "Job", "", mpBody, ""},
		{"JSON beside msgpack", "Job", "application/json", []byte(`{"id":7}`), ""},
		{"cbor for Job", "Job", "application/cbor", cborBody,
			`content type "application/cbor" cannot be read by the codecs of message type "Job", which read application/msgpack or application/json`},
		{"an unreadable content type", "Job", "application/", mpBody,
			`content type "application/" cannot be read by the codecs of message type "Job", which read application/msgpack or application/json`},
		{"corrupt msgpack", "Job", "application/msgpack", []byte{0x81, 0xa2, 'i'},
			"body does not decode into Job: runtime: decode: msgpack: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(orders) + len(jobs)
			d := &adapter.Delivery{MessageID: "m-" + tc.name, Type: tc.typ, ContentType: tc.contentType, Body: tc.body, Headers: map[string]string{}}
			v, _ := c.Handle(t.Context(), d)
			handled := len(orders) + len(jobs) - before
			if tc.reason == "" {
				if v.Kind != adapter.VerdictAck || handled != 1 {
					t.Fatalf("verdict %+v, %d calls: want it handled", v, handled)
				}
				return
			}
			if !v.Poison || v.Kind != adapter.VerdictPark || v.Queue != "mixed.dead" || !strings.HasPrefix(v.Reason, tc.reason) || handled != 0 {
				t.Errorf("verdict %+v, %d calls: want poison parked on mixed.dead with %q", v, handled, tc.reason)
			}
		})
	}
	for _, o := range orders {
		if !proto.Equal(o, order) {
			t.Errorf("an order decoded as %v, want %v", o, order)
		}
	}
	for _, j := range jobs {
		if j != (job{ID: 7}) {
			t.Errorf("a job decoded as %+v", j)
		}
	}
}

// The handler of every message type takes every message no other handler
// of its subscription takes, of any type or none and in any content type,
// undecoded, with its Metadata naming the type it has; its failures are
// retried and parked as any handler's, naming that type.
func TestTheHandlerOfEveryType(t *testing.T) {
	var seen []runtime.Delivery
	var fail bool
	sub := &runtime.Subscription{Name: "audit", Handlers: []runtime.Handler{
		okHandler("Job", runtime.Policy{}),
		runtime.HandleEvery(runtime.Policy{MaxAttempts: 2, DeadLetter: "audit.dead"}, func(_ context.Context, m *runtime.Delivery) error {
			seen = append(seen, *m)
			if fail {
				return errBoom
			}
			return nil
		}),
	}}
	c, _, tr := newRecorded(sub, runtime.RabbitMQ)
	handle := func(typ, contentType, body string, attempt int) adapter.Verdict {
		t.Helper()
		d := &adapter.Delivery{MessageID: "m-" + typ, Type: typ, ContentType: contentType, Body: []byte(body),
			Headers: retryCount(attempt - 1), Properties: runtime.Properties{CorrelationID: "corr"}}
		d.Headers["x-tenant"] = "acme"
		v, _ := c.Handle(t.Context(), d)
		return v
	}
	if v := handle("Job", "application/json", `{"id":1}`, 1); v.Kind != adapter.VerdictAck || len(seen) != 0 {
		t.Fatalf("a Job: %+v, the every-type handler saw %d: want the Job handler alone", v, len(seen))
	}
	if v := handle("OrderPlaced", "application/protobuf", "\x08\x01", 1); v.Kind != adapter.VerdictAck || v.MessageType != "OrderPlaced" {
		t.Errorf("an OrderPlaced: %+v", v)
	}
	if v := handle("", "text/plain", "no type", 1); v.Kind != adapter.VerdictAck || v.Poison {
		t.Errorf("a message without a type: %+v", v)
	}
	if len(seen) != 2 {
		t.Fatalf("the every-type handler saw %d messages, want 2", len(seen))
	}
	m := seen[0]
	if m.MessageType != "OrderPlaced" || m.ContentType != "application/protobuf" || string(m.Body) != "\x08\x01" || m.MessageID != "m-OrderPlaced" ||
		m.Headers["x-tenant"] != "acme" || m.CorrelationID != "corr" || m.Attempt != 1 || m.MaxAttempts != 2 || m.Subscription != "audit" {
		t.Errorf("the every-type handler got %+v", m)
	}
	if seen[1].MessageType != "" || string(seen[1].Body) != "no type" {
		t.Errorf("the message without a type reached it as %+v", seen[1])
	}
	var o testpb.Order
	if err := m.Decode(&o); err != nil || o.GetId() != 1 {
		t.Errorf("Decode of the protobuf body: %v, %v", &o, err)
	}

	fail = true
	v := handle("OrderCancelled", "application/json", `{}`, 1)
	if v.Kind != adapter.VerdictRetry || v.MessageType != "OrderCancelled" || v.Reason != "boom" {
		t.Errorf("a failure on attempt 1: %+v, want a retry of OrderCancelled", v)
	}
	v = handle("OrderCancelled", "application/json", `{}`, 2)
	if v.Kind != adapter.VerdictPark || v.Queue != "audit.dead" || v.MessageType != "OrderCancelled" || v.Reason != "failed on attempt 2 of 2: boom" {
		t.Errorf("a failure on attempt 2: %+v, want it parked on audit.dead", v)
	}
	if got := tr.actions(); !strings.Contains(got, "send audit.retry") || !strings.Contains(got, "send audit.dead") {
		t.Errorf("the transport did %q, want a retry copy and a dead letter", got)
	}
}
