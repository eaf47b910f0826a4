package adapter_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/streamgen/streamgen/runtime"
)

// A message without an id never reaches a handler that takes a *sql.Tx,
// on either broker: its inbox records messages by id, so the message is
// poison, parked with the reason; a message with an id does reach it
// (and, on a Consumer made without an App, fails for want of a database).
func TestTransactionalHandlerNeedsAMessageID(t *testing.T) {
	for _, kind := range []runtime.BrokerKind{runtime.RabbitMQ, runtime.ZeroMQ} {
		t.Run(string(kind), func(t *testing.T) {
			calls := 0
			sub := &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
				runtime.HandleJSON[job]("Job", runtime.Policy{DeadLetter: "dl"}, nil, func(context.Context, *sql.Tx, job) error {
					calls++
					return nil
				}),
			}}
			c, logs, tr := newRecorded(sub, kind)
			d := delivery(1)
			d.MessageID = ""
			v, _ := c.Handle(t.Context(), d)
			if !v.Poison || v.Reason != runtime.ErrNoMessageID.Error() || v.Queue != "dl" {
				t.Errorf("verdict %+v, want poison parked on dl for its missing id", v)
			}
			tr.mu.Lock()
			cs := tr.copies
			tr.mu.Unlock()
			if len(cs) != 1 || cs[0].queue != "dl" {
				t.Errorf("copies %+v, want the dead letter", cs)
			}
			if lines := logs.find("message parked"); len(lines) != 1 || lines[0].attrs["reason"] != runtime.ErrNoMessageID.Error() {
				t.Errorf("log lines %v, want the parking with its reason", lines)
			}
			v, _ = c.Handle(t.Context(), delivery(1))
			if v.Poison || v.Reason == runtime.ErrNoMessageID.Error() {
				t.Errorf("a message with an id: %+v, want it to reach the handler's call", v)
			}
			if calls != 0 {
				t.Errorf("the handler ran %d times without a transaction", calls)
			}
		})
	}
}
