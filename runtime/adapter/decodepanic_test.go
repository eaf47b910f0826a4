package adapter_test

import (
	"context"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

// embP is reached through an embedded pointer field with a JSON name:
// encoding/json panics setting it ("reflect.Value.Set using value obtained
// using unexported field").
type embP struct{ P int }

type withEmbP struct {
	*embP `json:"embp"`
	Z     int `json:"z"`
}

// bomb's own UnmarshalJSON panics.
type bomb struct{}

func (*bomb) UnmarshalJSON([]byte) error { panic("bomb went off") }

// A panic while decoding, in encoding/json or in a type's own UnmarshalJSON,
// or in a fast decoder, is poison: parked on the handler's dead-letter queue
// with a reason naming the panic, logged with its stack, and the next
// message is handled as usual.
func TestProcessDecodePanicIsPoison(t *testing.T) {
	handled := 0
	ack := func(context.Context, *job, runtime.Metadata) runtime.Outcome { handled++; return runtime.Ack() }
	policy := runtime.Policy{MaxAttempts: 3, DeadLetter: "jobs.dead"}
	sub := &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		runtime.Handle("Job", policy, ack),
		runtime.Handle("EmbP", policy, func(context.Context, *withEmbP, runtime.Metadata) runtime.Outcome { return runtime.Ack() }),
		runtime.Handle("Bomb", policy, func(context.Context, *bomb, runtime.Metadata) runtime.Outcome { return runtime.Ack() }),
		runtime.HandleJSON("Fast", policy, func([]byte, *job) bool { panic("fast decoder panicked") }, ack),
	}}
	c, logs := newConsumer(sub, runtime.RabbitMQ)
	for _, tc := range []struct{ typ, body, panic string }{
		{"EmbP", `{"embp":{"P":1},"z":2,"z":3}`, "reflect.Value.Set using value obtained using unexported field"},
		{"Bomb", `{}`, "bomb went off"},
		{"Fast", `{"id":1}`, "fast decoder panicked"},
	} {
		v, _ := c.Handle(t.Context(), &adapter.Delivery{MessageID: "m-" + tc.typ, Type: tc.typ, ContentType: "application/json", Body: []byte(tc.body)})
		want := "body does not decode into " + tc.typ + ": decoding panicked: "
		if !v.Poison || v.Kind != adapter.VerdictPark || v.Queue != "jobs.dead" || !strings.HasPrefix(v.Reason, want) || !strings.Contains(v.Reason, tc.panic) {
			t.Errorf("%s: verdict %+v, want poison parked on jobs.dead, reason %q... naming %q", tc.typ, v, want, tc.panic)
		}
		found := false
		for _, r := range logs.find("decoding panicked") {
			found = found || r.attrs["message_id"] == "m-"+tc.typ && strings.Contains(r.attrs["panic"], tc.panic) && strings.Contains(r.attrs["stack"], "goroutine")
		}
		if !found {
			t.Errorf("%s: no log of the panic with its stack in %v", tc.typ, logs.all())
		}
		if v, _ := c.Handle(t.Context(), delivery(1)); v.Kind != adapter.VerdictAck {
			t.Fatalf("after the panic of %s, a good message: verdict %+v, want ack", tc.typ, v)
		}
	}
	if handled != 3 {
		t.Errorf("the handler of good messages ran %d times, want 3", handled)
	}
}
