// Package foreigncodec is a producer in another language for the codec
// tests of the broker adapters: a Python program that encodes one
// message in each codec streamgen reads, with the libraries a Python
// service would use (Debian's python3-protobuf, python3-msgpack and
// python3-cbor2), for the RabbitMQ test to publish with pika and the
// ZeroMQ test with pyzmq. The protocol buffer message is built from the
// file descriptor of package testpb, so the program needs no code
// generated for Python. Handlers returns the Go handlers of those
// messages and Received what they decoded, which Check compares with
// what the program sent; Parked reads the dead-letter queue, where the
// program's corrupt body must be.
package foreigncodec

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/streamgen/streamgen/internal/testsupport/testpb"
	"github.com/streamgen/streamgen/runtime"
)

// Python is Debian's interpreter, where apt installs the libraries.
const Python = "/usr/bin/python3"

// RequirePython fails t, saying what to install, unless Python imports
// the codec libraries and modules (pika, zmq).
func RequirePython(t testing.TB, modules ...string) {
	t.Helper()
	imports := append([]string{"google.protobuf", "msgpack", "cbor2"}, modules...)
	out, err := exec.Command(Python, "-c", "import "+strings.Join(imports, ", ")).CombinedOutput()
	if err != nil {
		pkgs := []string{"python3-protobuf", "python3-msgpack", "python3-cbor2"}
		for _, m := range modules {
			pkgs = append(pkgs, "python3-"+m)
		}
		t.Fatalf("the foreign producer needs %s with %s: %v\n%s\ninstall them with: apt-get install -y %s",
			Python, strings.Join(imports, ", "), err, out, strings.Join(pkgs, " "))
	}
}

// Descriptors writes the file descriptor set of package testpb into a
// file of t's temporary directory and returns its path, for the program
// to build its protocol buffer message from.
func Descriptors(t testing.TB) string {
	t.Helper()
	set := &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{protodesc.ToFileDescriptorProto(testpb.File_internal_testsupport_testpb_testpb_proto)}}
	b, err := proto.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "testpb.binpb")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// encode is the part of the program that encodes the messages:
// messages(path) returns (message type, content type, message id, body)
// for each, path being the file Descriptors wrote.
const encode = `
import datetime, json, sys
import cbor2, msgpack
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

def message_class(path, name):
    fds = descriptor_pb2.FileDescriptorSet.FromString(open(path, "rb").read())
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)
    desc = pool.FindMessageTypeByName(name)
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(desc)
    return message_factory.MessageFactory(pool).GetPrototype(desc)

def messages(path):
    Order = message_class(path, "streamgen.testpb.Order")
    order = Order(id=7, customer="Python", invoice="INV-7", status=2)
    item = order.items.add()
    item.sku, item.qty, item.price = "SKU-1", 2, 9.5
    order.labels["from"] = "python"
    at = datetime.datetime(2026, 3, 1, 12, 30, 15, 250000, tzinfo=datetime.timezone.utc)
    reading = {"meter": "m-1", "value": 1.5, "at": at, "tags": ["a", "b"]}
    return [
        ("Order", "application/protobuf", "py-protobuf", order.SerializeToString()),
        ("Order", "application/json", "py-protojson", json_format.MessageToJson(order).encode()),
        ("MsgPackReading", "application/msgpack", "py-msgpack", msgpack.packb(reading, datetime=True)),
        ("CBORReading", "application/cbor", "py-cbor", cbor2.dumps(reading)),
        ("CBORReading", "application/cbor", "py-cbor-corrupt", cbor2.dumps(reading)[:-3]),
    ]
`

// Script returns the program: encode, then publish, Python code that
// sends each of messages(path) (see encode) with the argument it is
// given.
func Script(publish string) string { return encode + publish }

// Reading is the struct the MessagePack and CBOR messages decode into.
type Reading struct {
	Meter string    `json:"meter"`
	Value float64   `json:"value"`
	At    time.Time `json:"at"`
	Tags  []string  `json:"tags"`
}

// Sent is the number of messages the program sends: four that decode and
// a corrupt one, parked as poison.
const Sent = 5

// Received is what the handlers Handlers made decoded, by message id.
type Received struct {
	mu       sync.Mutex
	orders   map[string]*testpb.Order
	readings map[string]Reading
}

// Len returns how many messages the handlers took.
func (r *Received) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.orders) + len(r.readings)
}

// Handlers returns the handlers of the program's messages, which record
// what they decode in r: Order, a protocol buffer message, in protobuf
// or its JSON mapping; MsgPackReading and CBORReading, a Reading in
// MessagePack and in CBOR. Poison goes to deadLetter.
func Handlers(r *Received, deadLetter string) []runtime.Handler {
	r.mu.Lock()
	r.orders, r.readings = map[string]*testpb.Order{}, map[string]Reading{}
	r.mu.Unlock()
	reading := func(_ context.Context, v Reading, md runtime.Metadata) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.readings[md.MessageID] = v
		return nil
	}
	p := runtime.Policy{DeadLetter: deadLetter}
	return []runtime.Handler{
		runtime.HandleJSON[testpb.Order]("Order", p, nil, func(_ context.Context, o *testpb.Order, md runtime.Metadata) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.orders[md.MessageID] = o
			return nil
		}),
		runtime.HandleJSON[Reading]("MsgPackReading", p, nil, reading).WithCodec(runtime.MsgPack{}),
		runtime.HandleJSON[Reading]("CBORReading", p, nil, reading).WithCodec(runtime.CBOR{}),
	}
}

// Check compares what the handlers decoded with what the program sent.
func (r *Received) Check(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	want := &testpb.Order{Id: 7, Customer: "Python", Payment: &testpb.Order_Invoice{Invoice: "INV-7"}, Status: testpb.Status_STATUS_SHIPPED,
		Items: []*testpb.OrderItem{{Sku: "SKU-1", Qty: 2, Price: 9.5}}, Labels: map[string]string{"from": "python"}}
	for _, id := range []string{"py-protobuf", "py-protojson"} {
		if got := r.orders[id]; !proto.Equal(got, want) {
			t.Errorf("%s decoded to %v, want %v", id, got, want)
		}
	}
	at := time.Date(2026, 3, 1, 12, 30, 15, 250_000_000, time.UTC)
	for _, id := range []string{"py-msgpack", "py-cbor"} {
		got, ok := r.readings[id]
		if !ok || got.Meter != "m-1" || got.Value != 1.5 || !got.At.Equal(at) || !slices.Equal(got.Tags, []string{"a", "b"}) {
			t.Errorf("%s decoded to %+v (found: %v), want meter m-1, value 1.5, at %v, tags [a b]", id, got, ok, at)
		}
	}
	if _, ok := r.readings["py-cbor-corrupt"]; ok || len(r.orders)+len(r.readings) != Sent-1 {
		t.Errorf("the handlers took %d orders and %d readings, want the 4 that decode", len(r.orders), len(r.readings))
	}
}

// Parked records what the handler of the dead-letter queue takes (a
// handler of every message type, whatever its bodies), so that
// CheckParked can read the poison the program sent.
type Parked struct {
	mu sync.Mutex
	ms []runtime.Delivery
}

// Handler returns the handler of the dead-letter queue.
func (p *Parked) Handler() runtime.Handler {
	return runtime.HandleEvery(runtime.Policy{}, func(_ context.Context, m runtime.Delivery) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.ms = append(p.ms, m)
		return nil
	})
}

// Len returns how many letters the handler took.
func (p *Parked) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ms)
}

// Check fails t unless the one letter parked is the program's corrupt
// CBOR body, parked with the decoder's error as its reason.
func (p *Parked) Check(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.ms) != 1 {
		t.Fatalf("%d letters parked, want the corrupt one", len(p.ms))
	}
	d := p.ms[0]
	if d.MessageID != "py-cbor-corrupt" || d.ContentType != "application/cbor" ||
		!strings.HasPrefix(d.Headers[runtime.HeaderDeadLetterReason], "body does not decode into CBORReading: runtime: decode: cbor: ") {
		t.Errorf("parked %s (%s) with headers %v, want py-cbor-corrupt, with the CBOR error", d.MessageID, d.ContentType, d.Headers)
	}
}
