package runtime_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime"
)

// Every handler shape that takes a *sql.Tx makes a transactional Handler,
// and none other does.
func TestTransactionalHandlers(t *testing.T) {
	p := runtime.Policy{}
	tx := []runtime.Handler{
		runtime.HandleJSON[job]("Job", p, nil, func(context.Context, *sql.Tx, job) error { return nil }),
		runtime.HandleJSON[job]("Job", p, nil, func(context.Context, *sql.Tx, *job) error { return nil }),
		runtime.HandleJSON[job]("Job", p, nil, func(context.Context, *sql.Tx, job, runtime.Metadata) error { return nil }),
		runtime.HandleJSON[job]("Job", p, nil, func(context.Context, *sql.Tx, *job, runtime.Metadata) error { return nil }),
		runtime.HandleJSON[job]("Job", p, nil, func(context.Context, *sql.Tx, job) runtime.Outcome { return runtime.Ack() }),
		runtime.HandleJSON[job]("Job", p, nil, func(context.Context, *sql.Tx, *job) runtime.Outcome { return runtime.Ack() }),
		runtime.HandleJSON[job]("Job", p, nil, func(context.Context, *sql.Tx, job, runtime.Metadata) runtime.Outcome { return runtime.Ack() }),
		runtime.HandleJSON[job]("Job", p, nil, func(context.Context, *sql.Tx, *job, runtime.Metadata) runtime.Outcome { return runtime.Ack() }),
	}
	for i, h := range tx {
		if !h.Transactional() {
			t.Errorf("tx shape %d: not transactional", i+1)
		}
	}
	plain := []runtime.Handler{
		runtime.HandleJSON[job]("Job", p, nil, func(context.Context, job) error { return nil }),
		runtime.HandleJSON[job]("Job", p, nil, func(context.Context, *job, runtime.Metadata) runtime.Outcome { return runtime.Ack() }),
		runtime.HandleBatch[job]("Job", p, nil, func(context.Context, []job) error { return nil }),
	}
	for i, h := range plain {
		if h.Transactional() {
			t.Errorf("plain shape %d: transactional", i+1)
		}
	}
}

// A nil handler that takes a *sql.Tx is refused when the Handler is
// made, as any nil handler is.
func TestNilTransactionalHandlerPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "nil handler function") {
			t.Errorf("recovered %v, want the nil handler refused", r)
		}
	}()
	var fn func(context.Context, *sql.Tx, job) error
	runtime.HandleJSON[job]("Job", runtime.Policy{}, nil, fn)
}

// A *sql.Tx handler called outside an App that gave it a database fails
// with a reason that names the option it needs, and never calls the
// handler with a nil transaction.
func TestTransactionalHandlerWithoutADatabaseFails(t *testing.T) {
	called := false
	h := runtime.HandleJSON[job]("Job", runtime.Policy{}, nil, func(context.Context, *sql.Tx, job) error {
		called = true
		return nil
	})
	out := h.Call(context.Background(), &job{ID: 1}, runtime.Metadata{Subscription: "jobs", MessageID: "m-1"})
	if called {
		t.Error("the handler was called without a transaction")
	}
	if out.Action() != runtime.ActionRetry || out.Err() == nil || !strings.Contains(out.Err().Error(), "outbox.Option") {
		t.Errorf("outcome %v, want a failure naming outbox.Option", out)
	}
}

// Run refuses an App with a *sql.Tx handler and no Transactor, naming the
// subscription, the message type and the option to give; and a nil
// Transactor given to WithTransactor. It starts no broker.
func TestAppRefusesTransactionalHandlersWithoutATransactor(t *testing.T) {
	ev := &events{}
	txSub := &runtime.Subscription{Name: "orders", Handlers: []runtime.Handler{
		runtime.HandleJSON[job]("Job", runtime.Policy{}, nil, func(context.Context, *sql.Tx, job) error { return nil }),
	}}
	for _, tc := range []struct {
		name string
		opts []runtime.Option
		want string
	}{
		{"no transactor", nil, `runtime: subscription "orders": the handler of "Job" takes a *sql.Tx, and the App has no database to begin its transactions on: give NewApp the outbox's option, runtime.NewApp(name, ob.Option(broker)) (package runtime/outbox), or runtime.WithTransactor`},
		{"a nil transactor", []runtime.Option{runtime.WithTransactor(nil)}, "runtime: WithTransactor was given a nil Transactor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := runtime.NewApp("orders", tc.opts...)
			app.Mount(&fakeBroker{name: "r", kind: runtime.RabbitMQ, events: ev}, txSub)
			err := result(t, run(context.Background(), app))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run: %v\nwant it to say %q", err, tc.want)
			}
		})
	}
	if got := ev.list(); len(got) != 0 {
		t.Errorf("brokers were started for apps that cannot run: %v", got)
	}
}

// On RabbitMQ, ack=auto and a *sql.Tx handler do not go together: the
// message would be lost when its transaction does not commit.
func TestAutoAckRefusesTransactionalHandlers(t *testing.T) {
	s := &runtime.Subscription{Name: "orders", AutoAck: true, Handlers: []runtime.Handler{
		runtime.HandleJSON[job]("Job", runtime.Policy{}, nil, func(context.Context, *sql.Tx, job) error { return nil }),
	}}
	err := s.Validate(runtime.RabbitMQ)
	if err == nil || !strings.Contains(err.Error(), "ack=auto loses a message whose transaction has not committed") {
		t.Fatalf("Validate: %v, want ack=auto refused", err)
	}
	s.AutoAck = false
	if err := s.Validate(runtime.RabbitMQ); err != nil {
		t.Errorf("Validate without ack=auto: %v", err)
	}
}
