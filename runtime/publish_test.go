package runtime_test

import (
	"context"
	"encoding/hex"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime"
)

// publisher records what it is asked to publish.
type publisher struct {
	queue string
	msg   runtime.Message
	err   error
	codec runtime.Codec
}

func (p *publisher) Publish(_ context.Context, queue string, msg runtime.Message) error {
	p.queue, p.msg = queue, msg
	return p.err
}

type codecPublisher struct{ *publisher }

func (p codecPublisher) Codec() runtime.Codec { return p.codec }

type textCodec struct{}

func (textCodec) ContentType() string             { return "text/plain" }
func (textCodec) Encode(v any) ([]byte, error)    { return []byte(strings.ToUpper(v.(string))), nil }
func (textCodec) Decode(body []byte, v any) error { *v.(*string) = string(body); return nil }

func TestPublishEncodesAndNamesTheMessage(t *testing.T) {
	p := &publisher{}
	if err := runtime.Publish(t.Context(), p, runtime.Queue("jobs"), "Job", job{ID: 7}); err != nil {
		t.Fatal(err)
	}
	m := p.msg
	if p.queue != "jobs" || m.Type != "Job" || m.ContentType != "application/json" || string(m.Body) != `{"id":7}` || m.Headers != nil {
		t.Errorf("published to %q: %+v", p.queue, m)
	}
	if b, err := hex.DecodeString(m.ID); err != nil || len(b) != 16 {
		t.Errorf("message id %q is not 32 hex digits", m.ID)
	}
	first := m.ID
	if err := runtime.Publish(t.Context(), p, runtime.Queue("jobs"), "Job", job{ID: 7}); err != nil {
		t.Fatal(err)
	}
	if p.msg.ID == first {
		t.Error("two publishes got the same message id")
	}
}

func TestPublishOptions(t *testing.T) {
	p := &publisher{}
	err := runtime.Publish(t.Context(), p, runtime.Queue("jobs"), "Job", job{ID: 1},
		runtime.WithMessageID("fixed"),
		runtime.WithHeader("a", "1"), runtime.WithHeader("b", "2"),
		runtime.WithHeader("b", "3"),
		runtime.WithHeader("c", "4"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if p.msg.ID != "fixed" || !maps.Equal(p.msg.Headers, map[string]string{"a": "1", "b": "3", "c": "4"}) {
		t.Errorf("message %+v", p.msg)
	}
}

func TestPublishUsesThePublishersCodec(t *testing.T) {
	p := codecPublisher{&publisher{codec: textCodec{}}}
	if err := runtime.Publish(t.Context(), p, runtime.Queue("notes"), "Note", "hello"); err != nil {
		t.Fatal(err)
	}
	if p.msg.ContentType != "text/plain" || string(p.msg.Body) != "HELLO" {
		t.Errorf("message %+v, want the publisher's codec", p.msg)
	}
	// A provider without a codec falls back to JSON.
	q := codecPublisher{&publisher{}}
	if err := runtime.Publish(t.Context(), q, runtime.Queue("jobs"), "Job", job{ID: 2}); err != nil || q.msg.ContentType != "application/json" {
		t.Errorf("publish: %v, %+v", err, q.msg)
	}
}

func TestPublishErrors(t *testing.T) {
	p := &publisher{}
	err := runtime.Publish(t.Context(), p, runtime.Queue("jobs"), "Job", make(chan int))
	if err == nil || !strings.HasPrefix(err.Error(), `runtime: publish Job to "jobs": runtime: encode: json:`) {
		t.Errorf("encode error: %v", err)
	}
	if p.queue != "" {
		t.Error("a message that did not encode was published")
	}
	errDown := errors.New("broker down")
	p.err = errDown
	if err := runtime.Publish(t.Context(), p, runtime.Queue("jobs"), "Job", job{}); !errors.Is(err, errDown) {
		t.Errorf("publisher error: %v, want it returned", err)
	}
}

func TestPublishToADestination(t *testing.T) {
	p := &publisher{}
	err := runtime.Publish(context.Background(), p, runtime.Exchange("orders", "order.placed"), "OrderPlaced", job{ID: 1},
		runtime.WithMessageID("m-1"), runtime.WithRoutingKey("order.cancelled"), runtime.AllowUnroutable())
	if err != nil {
		t.Fatal(err)
	}
	if p.queue != "order.placed" || p.msg.Exchange != "orders" || p.msg.RoutingKey != "order.cancelled" || !p.msg.AllowUnroutable ||
		p.msg.ID != "m-1" || p.msg.Type != "OrderPlaced" || string(p.msg.Body) != `{"id":1}` {
		t.Errorf("published to %q: %+v", p.queue, p.msg)
	}
	if err := runtime.Publish(context.Background(), p, runtime.Queue("jobs"), "Job", job{ID: 2}); err != nil || p.queue != "jobs" || p.msg.Exchange != "" {
		t.Errorf("Publish to a queue: %v, %q %+v", err, p.queue, p.msg)
	}
	err = runtime.Publish(context.Background(), p, runtime.Exchange("orders", "order.placed"), "Bad", func() {})
	if err == nil || !strings.HasPrefix(err.Error(), `runtime: publish Bad to exchange "orders" with routing key "order.placed": `) {
		t.Errorf("an unencodable value: %v", err)
	}
	if s := runtime.Queue("jobs").String(); s != `"jobs"` {
		t.Errorf("Queue.String() = %s", s)
	}
}
