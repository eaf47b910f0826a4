package rabbitmq

import (
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
)

// The message properties a publisher sets reach the handler's metadata,
// and the retry copy and the dead letter keep them, all but the
// expiration: in the wait queue it would expire the copy before its retry.
func TestMessagePropertiesSurviveRetriesAndDeadLetters(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("props")
	ts := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC) // AMQP timestamps are whole seconds
	var c calls
	b := newTestBroker()
	runApp(t, b, sub(q, 50*time.Millisecond, handler("Job", runtime.Policy{MaxAttempts: 2, DeadLetter: q + ".dl"}, &c, alwaysFail)))
	publishJob(t, b, q, "Job", job{ID: 3},
		runtime.WithProperties(runtime.Properties{CorrelationID: "corr-1", ReplyTo: "replies", Priority: 7,
			Timestamp: ts, AppID: "checkout", Expiration: time.Minute}))
	testkit.Eventually(t, "the message is parked", func() bool { return adm.ready(q+".dl") == 1 })

	mds := c.metadata()
	if len(mds) != 2 {
		t.Fatalf("%d deliveries, want 2", len(mds))
	}
	for i, md := range mds {
		if md.CorrelationID != "corr-1" || md.ReplyTo != "replies" || md.Priority != 7 || !md.Timestamp.Equal(ts) || md.AppID != "checkout" {
			t.Errorf("delivery %d: correlation %q reply-to %q priority %d timestamp %v app %q", i+1, md.CorrelationID, md.ReplyTo, md.Priority, md.Timestamp, md.AppID)
		}
	}
	if mds[0].Expiration != time.Minute || mds[1].Expiration != 0 {
		t.Errorf("expirations %v and %v, want 1m on the first delivery and none on the retry copy", mds[0].Expiration, mds[1].Expiration)
	}
	d, ok := adm.get(q + ".dl")
	if !ok {
		t.Fatal("no dead letter")
	}
	if d.CorrelationId != "corr-1" || d.ReplyTo != "replies" || d.Priority != 7 || !d.Timestamp.Equal(ts) || d.AppId != "checkout" || d.Expiration != "" {
		t.Errorf("dead letter: correlation %q reply-to %q priority %d timestamp %v app %q expiration %q; want the properties without expiration",
			d.CorrelationId, d.ReplyTo, d.Priority, d.Timestamp, d.AppId, d.Expiration)
	}
}

// The expiration is a TTL in milliseconds on the wire, at least 1.
func TestExpirationText(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{{0, ""}, {-time.Second, ""}, {time.Microsecond, "1"}, {1500 * time.Millisecond, "1500"}, {time.Minute, "60000"}} {
		if got := expirationText(tc.d); got != tc.want {
			t.Errorf("expirationText(%v) = %q, want %q", tc.d, got, tc.want)
		}
		if tc.want != "" {
			if back := expirationOf(tc.want); back != max(tc.d, time.Millisecond).Truncate(time.Millisecond) {
				t.Errorf("expirationOf(%q) = %v", tc.want, back)
			}
		}
	}
	for _, bad := range []string{"", "soon", "-5", "0", "99999999999999999999"} {
		if got := expirationOf(bad); got != 0 {
			t.Errorf("expirationOf(%q) = %v, want 0", bad, got)
		}
	}
}
