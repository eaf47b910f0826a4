package zeromq_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/go-zeromq/zmq4"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// TestPublishWritesTheDocumentedFrames reads what Publish sends with zmq4's
// own PULL socket: three frames, as doc.go describes them.
func TestPublishWritesTheDocumentedFrames(t *testing.T) {
	testkit.NoLeaks(t)
	ep := freeEndpoint(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pull := zmq4.NewPull(ctx)
	defer pull.Close()
	if err := pull.Listen(ep); err != nil {
		t.Fatal(err)
	}

	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep)))
	defer shutdown(t, zq)
	err := zq.Publish(ctx, "jobs", runtime.Message{
		ID: "m-1", Type: "job", ContentType: "application/json",
		Headers: map[string]string{"X-Tenant": "acme", "x-a": "1"},
		Body:    []byte(`{"id":1}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := pull.Recv()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]byte{
		[]byte("jobs"),
		[]byte("type: job\ncontent-type: application/json\nmessage-id: m-1\nx-a: 1\nx-tenant: acme"),
		[]byte(`{"id":1}`),
	}
	if !reflect.DeepEqual(msg.Frames, want) {
		t.Fatalf("frames on the wire:\n got %q\nwant %q", msg.Frames, want)
	}
}

// TestFramingRoundTripThroughABoundQueue publishes with one broker and
// handles with another, over a socket.
func TestFramingRoundTripThroughABoundQueue(t *testing.T) {
	testkit.NoLeaks(t)
	ep := freeEndpoint(t)
	rec := newRecorder()
	app := runtime.NewApp("framing")
	worker := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep)))
	app.Mount(worker, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{jobHandler(rec, runtime.Policy{}, nil)}})
	streamtest.RunApp(t, app)

	producer := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep)))
	defer shutdown(t, producer)
	publishJob(t, producer, "jobs", Job{ID: 42}, runtime.WithMessageID("m-42"), runtime.WithHeader("X-Tenant", "acme"))

	got := rec.waitFor(t, "jobs", 1)[0]
	md := got.MD
	if got.Body != "42" || md.MessageID != "m-42" || md.MessageType != "job" || md.Attempt != 1 {
		t.Fatalf("delivery = %+v", got)
	}
	if md.Headers["x-tenant"] != "acme" {
		t.Fatalf("headers = %v, want x-tenant=acme", md.Headers)
	}
	env, ok := md.Raw.(*zeromq.Envelope)
	if !ok {
		t.Fatalf("Raw = %T, want *zeromq.Envelope", md.Raw)
	}
	wantHeaders := []zeromq.Header{{"type", "job"}, {"content-type", "application/json"}, {"message-id", "m-42"}, {"x-tenant", "acme"}}
	if env.Subscription != "jobs" || !reflect.DeepEqual(env.Headers, wantHeaders) || string(env.Body) != `{"id":42}` {
		t.Fatalf("envelope = %+v", env)
	}
}

// TestBoundQueueRefusesAnotherSubscriptionsName sends a message framed for
// another subscription with a raw zmq4 PUSH: it is dropped with a warning,
// and the next message is served.
func TestBoundQueueRefusesAnotherSubscriptionsName(t *testing.T) {
	testkit.NoLeaks(t)
	ep := freeEndpoint(t)
	rec := newRecorder()
	logs := streamtest.NewLogRecorder(nil)
	app := runtime.NewApp("framing", runtime.WithLogger(logs.Logger()))
	app.Mount(zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep))),
		&runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{jobHandler(rec, runtime.Policy{}, nil)}})
	streamtest.RunApp(t, app)

	push := rawPush(t, ep)
	send(t, push, "invoices", "type: job\nmessage-id: wrong-name", `{"id":1}`)
	send(t, push, "jobs", "type: job\nmessage-id: right-name", `{"id":2}`)

	got := rec.waitFor(t, "jobs", 1)
	if len(got) != 1 || got[0].MD.MessageID != "right-name" {
		t.Fatalf("handled %+v, want only right-name", got)
	}
	drops := logs.Containing("message dropped")
	if len(drops) != 1 {
		t.Fatalf("want one drop, logs:\n%s", logs)
	}
	d := drops[0]
	if d.Attrs["subscription"] != "jobs" || d.Attrs["message_id"] != "wrong-name" ||
		!strings.Contains(d.Attrs["reason"], `"invoices"`) || !strings.Contains(d.Attrs["reason"], "takes only") {
		t.Fatalf("drop line = %s", d)
	}
}

// rawPush returns a zmq4 PUSH socket dialled to ep, closed with the test.
func rawPush(t *testing.T, ep string) zmq4.Socket {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	push := zmq4.NewPush(ctx, zmq4.WithDialerRetry(50e6))
	if err := push.Dial(ep); err != nil {
		cancel()
		t.Fatalf("dial %s: %v", ep, err)
	}
	t.Cleanup(func() {
		push.Close()
		cancel()
	})
	return push
}

// send sends frames (name, headers, body) with a raw socket.
func send(t *testing.T, s zmq4.Socket, frames ...string) {
	t.Helper()
	if err := s.Send(zmq4.NewMsgFromString(frames)); err != nil {
		t.Fatalf("send %.200q: %v", frames, err)
	}
}

// sendToBeRefused sends a message the receiver hangs up on: the send may
// fail when the hang-up comes while it writes.
func sendToBeRefused(s zmq4.Socket, frames ...string) {
	_ = s.Send(zmq4.NewMsgFromString(frames))
}
