package zeromq_test

import (
	"context"
	"os/exec"
	"testing"

	"github.com/streamgen/streamgen/internal/testsupport/foreigncodec"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// A producer in Python pushes, with pyzmq (libzmq), a protocol buffer
// message in protobuf and in its JSON mapping, and a struct in
// MessagePack and in CBOR, as Python's own libraries encode them, each
// with its content-type header: the Go handlers decode each, and a
// corrupt CBOR body is parked with its reason.
func TestForeignProducerOfEachCodec(t *testing.T) {
	testkit.NoLeaks(t)
	foreigncodec.RequirePython(t, "zmq")
	codecsEP, deadEP := freeEndpoint(t), freeEndpoint(t)
	var got foreigncodec.Received
	var dead foreigncodec.Parked
	app := runtime.NewApp("codecs")
	zq := zeromq.New(zeromq.Queue("codecs", zeromq.Bind(codecsEP)), zeromq.Queue("codecs.dead", zeromq.Bind(deadEP)))
	app.Mount(zq,
		&runtime.Subscription{Name: "codecs", Handlers: foreigncodec.Handlers(&got, "codecs.dead")},
		&runtime.Subscription{Name: "codecs.dead", Handlers: []runtime.Handler{dead.Handler()}})
	streamtest.RunApp(t, app)
	script := foreigncodec.Script(`
import zmq
ctx = zmq.Context()
push = ctx.socket(zmq.PUSH)
push.connect(sys.argv[2])
for typ, content_type, message_id, body in messages(sys.argv[1]):
    headers = "type: %s\ncontent-type: %s\nmessage-id: %s" % (typ, content_type, message_id)
    push.send_multipart([b"codecs", headers.encode(), body])
push.close(linger=5000)
ctx.term()
`)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if out, err := exec.CommandContext(ctx, foreigncodec.Python, "-c", script, foreigncodec.Descriptors(t), codecsEP).CombinedOutput(); err != nil {
		t.Fatalf("the python producer failed: %v\n%s", err, out)
	}
	testkit.Eventually(t, "the messages were handled and the corrupt one parked", func() bool { return got.Len() == foreigncodec.Sent-1 && dead.Len() == 1 })
	got.Check(t)
	dead.Check(t)
}
