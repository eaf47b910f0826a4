package rabbitmq

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/streamgen/streamgen/internal/testsupport/foreigncodec"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
)

// A producer in Python publishes, with pika, a protocol buffer message in
// protobuf and in its JSON mapping, and a struct in MessagePack and in
// CBOR, as Python's own libraries encode them: the Go handlers decode each
// by its content type, and a corrupt CBOR body is parked with its reason.
func TestForeignProducerOfEachCodec(t *testing.T) {
	testkit.NoLeaks(t)
	foreigncodec.RequirePython(t, "pika")
	adm := newAdmin(t)
	q := adm.queue("codecs")
	dl := q + ".dl"
	var got foreigncodec.Received
	var dead dlCalls
	runApp(t, newTestBroker(),
		&runtime.Subscription{Name: q, Broker: runtime.RabbitMQ, Handlers: foreigncodec.Handlers(&got, dl)},
		&runtime.Subscription{Name: dl, Broker: runtime.RabbitMQ, Handlers: []runtime.Handler{dead.handler()}})
	script := foreigncodec.Script(`
import pika
conn = pika.BlockingConnection(pika.URLParameters(sys.argv[2]))
ch = conn.channel()
ch.confirm_delivery()
for typ, content_type, message_id, body in messages(sys.argv[1]):
    ch.basic_publish(exchange="", routing_key=sys.argv[3], body=body, mandatory=True,
        properties=pika.BasicProperties(type=typ, content_type=content_type, message_id=message_id, delivery_mode=2))
conn.close()
`)
	if out, err := exec.Command(foreigncodec.Python, "-c", script, foreigncodec.Descriptors(t), brokerURL(), q).CombinedOutput(); err != nil {
		t.Fatalf("the python producer failed: %v\n%s", err, out)
	}
	testkit.Eventually(t, "the messages were handled and the corrupt one parked", func() bool { return got.Len() == foreigncodec.Sent-1 && dead.len() == 1 })
	got.Check(t)
	d := dead.all()[0]
	if d.MessageID != "py-cbor-corrupt" || d.ContentType != "application/cbor" ||
		!strings.HasPrefix(d.Headers[runtime.HeaderDeadLetterReason], "body does not decode into CBORReading: runtime: decode: cbor: ") {
		t.Errorf("parked %s (%s) with headers %v, want py-cbor-corrupt, with the CBOR error", d.MessageID, d.ContentType, d.Headers)
	}
}

// dlCalls records what a handler of every message type takes: how a test
// reads a dead-letter queue whatever its bodies.
type dlCalls struct {
	mu sync.Mutex
	ms []runtime.Delivery
}

func (c *dlCalls) handler() runtime.Handler {
	return runtime.HandleEvery(runtime.Policy{}, func(_ context.Context, m runtime.Delivery) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.ms = append(c.ms, m)
		return nil
	})
}

func (c *dlCalls) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ms)
}

func (c *dlCalls) all() []runtime.Delivery {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.ms)
}
