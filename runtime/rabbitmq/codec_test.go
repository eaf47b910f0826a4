package rabbitmq

import (
	"os/exec"
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
	var dead foreigncodec.Parked
	runApp(t, newTestBroker(),
		&runtime.Subscription{Name: q, Broker: runtime.RabbitMQ, Handlers: foreigncodec.Handlers(&got, dl)},
		&runtime.Subscription{Name: dl, Broker: runtime.RabbitMQ, Handlers: []runtime.Handler{dead.Handler()}})
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
	testkit.Eventually(t, "the messages were handled and the corrupt one parked", func() bool { return got.Len() == foreigncodec.Sent-1 && dead.Len() == 1 })
	got.Check(t)
	dead.Check(t)
}
