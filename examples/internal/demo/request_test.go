package demo

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// A request through a prefixed broker reaches the prefixed queue and gets
// its reply; a broker that sends no requests says so.
func TestPrefixedRequest(t *testing.T) {
	clock := streamtest.NewClock(time.Time{})
	inner := streamtest.NewBroker(runtime.RabbitMQ, clock)
	b := Prefix(inner, "t2.")
	app := runtime.NewApp("prefix-test", runtime.WithClock(clock))
	var seen string
	app.Mount(b, &runtime.Subscription{Name: "echo", Handlers: []runtime.Handler{
		runtime.HandleReply[note, note]("Note", "Note", runtime.Policy{}, nil, func(_ context.Context, n note, md runtime.Metadata) (note, error) {
			seen = md.Subscription
			return note{Text: strings.ToUpper(n.Text)}, nil
		}),
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	<-app.Ready()
	got, err := runtime.Request[note](ctx, b, runtime.Queue("echo"), "Note", note{"hi"})
	cancel()
	if rerr := <-done; rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil || got.Text != "HI" || seen != "t2.echo" {
		t.Fatalf("reply %+v, %v from %q; want HI from t2.echo", got, err, seen)
	}

	plain := Prefix(publisherOnly{inner}, "t3.")
	if _, err := plain.Request(context.Background(), "echo", runtime.Message{}); err == nil || !strings.Contains(err.Error(), "sends no requests") {
		t.Fatalf("Request on a broker without requests = %v", err)
	}
}

// publisherOnly is a Broker that sends no requests.
type publisherOnly struct{ Broker }
