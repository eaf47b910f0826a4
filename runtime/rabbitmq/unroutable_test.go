package rabbitmq

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
)

// An unroutable publish says where it went and why nothing took it: to an
// exchange, that no queue is bound to that exchange for that routing key;
// to a queue by name, that there is no queue of that name. Neither says
// the other's reason.
func TestUnroutablePublishSaysWhereItWent(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	x := adm.exchange("unroutable")
	q := adm.queue("unroutable")
	missing := adm.queue("missing")
	var c calls
	b := newTestBroker()
	runApp(t, b, boundSub(q, x, "", []string{"order.*"}, handler("Job", runtime.Policy{}, &c, alwaysAck)))
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()

	err := runtime.Publish(ctx, b, runtime.Exchange(x, "invoice.sent"), "Job", job{ID: 1})
	if !errors.Is(err, ErrUnroutable) {
		t.Fatalf("publish to %s: %v, want ErrUnroutable", x, err)
	}
	for _, want := range []string{
		`rabbitmq: publish Job to exchange "` + x + `" with routing key "invoice.sent": `,
		`no queue is bound to exchange "` + x + `" for routing key "invoice.sent"`,
		"(312 NO_ROUTE)",
		"runtime.AllowUnroutable()",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("publish to %s: %v\nwant it to say %q", x, err, want)
		}
	}
	if strings.Contains(err.Error(), "of that name") {
		t.Errorf("publish to %s: %v\nsays a queue name is at fault", x, err)
	}

	for _, publish := range []func() error{
		func() error { return runtime.Publish(ctx, b, runtime.Queue(missing), "Job", job{ID: 2}) },
		func() error {
			var perr error
			done := make(chan struct{})
			b.PublishAsync(ctx, missing, runtime.Message{Type: "Job", Body: []byte(`{"id":3}`)}, func(err error) { perr = err; close(done) })
			<-done
			return perr
		},
	} {
		err := publish()
		if !errors.Is(err, ErrUnroutable) || !strings.Contains(err.Error(), `rabbitmq: publish Job to "`+missing+`": `) ||
			!strings.Contains(err.Error(), `there is no queue "`+missing+`"`) || strings.Contains(err.Error(), "bound") {
			t.Errorf("publish to the queue %s: %v, want ErrUnroutable saying there is no such queue", missing, err)
		}
	}
}
