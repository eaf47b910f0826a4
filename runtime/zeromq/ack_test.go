package zeromq_test

import (
	"errors"
	"testing"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// TestAckAndNackUnsupportedLoggedOncePerSubscription: many acks and many
// rejects give one "cannot acknowledge" and one "cannot reject" line per
// subscription. That acks do nothing is documented behaviour, said at
// info; that a rejected message is dropped loses it, a warning.
func TestAckAndNackUnsupportedLoggedOncePerSubscription(t *testing.T) {
	testkit.NoLeaks(t)
	logs := streamtest.NewLogRecorder(nil)
	rec := newRecorder()
	app := runtime.NewApp("acks", runtime.WithLogger(logs.Logger()))
	zq := zeromq.New(zeromq.Queue("a", zeromq.Bind(freeEndpoint(t))), zeromq.Queue("b", zeromq.Bind(freeEndpoint(t))))
	reject := func(j *Job, _ runtime.Metadata) error {
		if j.ID%2 == 0 {
			return runtime.DeadLetter(errors.New("poison")) // no dead-letter queue: rejected
		}
		return nil
	}
	app.Mount(zq,
		&runtime.Subscription{Name: "a", Handlers: []runtime.Handler{jobHandler(rec, runtime.Policy{}, reject)}},
		&runtime.Subscription{Name: "b", Handlers: []runtime.Handler{jobHandler(rec, runtime.Policy{}, reject)}},
	)
	streamtest.RunApp(t, app)
	const each = 30
	for i := range each {
		publishJob(t, zq, "a", Job{ID: i})
		publishJob(t, zq, "b", Job{ID: i})
	}
	rec.waitFor(t, "a", each)
	rec.waitFor(t, "b", each)
	testkit.Eventually(t, "all settled", func() bool {
		n := int64(0)
		for _, s := range app.Stats() {
			n += s.Acked + s.Rejected
		}
		return n == 2*each
	})

	for _, c := range []struct{ msg, level string }{{"ZeroMQ cannot acknowledge", "INFO"}, {"ZeroMQ cannot hand a message back", "WARN"}} {
		lines := logs.Containing(c.msg)
		if len(lines) != 2 {
			t.Fatalf("%d %q lines for %d messages on 2 subscriptions, want 2:\n%s", len(lines), c.msg, 2*each, logs)
		}
		subs := map[string]bool{}
		for _, l := range lines {
			subs[l.Attrs["subscription"]] = true
			if l.Level.String() != c.level {
				t.Fatalf("line at %s, want %s: %s", l.Level, c.level, l)
			}
		}
		if !subs["a"] || !subs["b"] {
			t.Fatalf("%q lines name %v, want a and b", c.msg, subs)
		}
	}
}
