package zeromq_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/streamtest"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// The message properties travel as the documented headers, reach the
// handler's metadata (and not its Headers), and a retry copy keeps them.
func TestMessagePropertiesAreHeaders(t *testing.T) {
	testkit.NoLeaks(t)
	ep := freeEndpoint(t)
	rec := newRecorder()
	app := runtime.NewApp("props", runtime.WithLogger(streamtest.NewLogRecorder(nil).Logger()))
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep)))
	app.Mount(zq, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		jobHandler(rec, runtime.Policy{MaxAttempts: 2, OutRetry: "jobs"}, func(*Job, runtime.Metadata) error {
			return errors.New("once more")
		}),
	}})
	streamtest.RunApp(t, app)
	ts := time.Date(2026, 12, 1, 10, 0, 0, 500_000_000, time.UTC)
	publishJob(t, zq, "jobs", Job{ID: 1}, runtime.WithMessageID("m-1"), runtime.WithProperties(runtime.Properties{CorrelationID: "corr-1",
		ReplyTo: "replies", Priority: 7, Timestamp: ts, AppID: "checkout"}),
		runtime.WithHeader("x-tenant", "acme"))
	got := rec.waitFor(t, "jobs", 2)
	want := []zeromq.Header{
		{Name: "type", Value: "job"}, {Name: "content-type", Value: "application/json"}, {Name: "message-id", Value: "m-1"},
		{Name: "correlation-id", Value: "corr-1"}, {Name: "reply-to", Value: "replies"}, {Name: "app-id", Value: "checkout"},
		{Name: "priority", Value: "7"}, {Name: "timestamp", Value: "2026-12-01T10:00:00.5Z"}, {Name: "x-tenant", Value: "acme"},
	}
	if env := got[0].MD.Raw.(*zeromq.Envelope); !reflect.DeepEqual(env.Headers, want) {
		t.Errorf("headers on the wire:\n got %v\nwant %v", env.Headers, want)
	}
	for i, g := range got {
		md := g.MD
		if md.CorrelationID != "corr-1" || md.ReplyTo != "replies" || md.Priority != 7 || !md.Timestamp.Equal(ts) || md.AppID != "checkout" {
			t.Errorf("delivery %d: correlation %q reply-to %q priority %d timestamp %v app %q", i+1, md.CorrelationID, md.ReplyTo, md.Priority, md.Timestamp, md.AppID)
		}
		if _, ok := md.Headers["correlation-id"]; ok || md.Headers["x-tenant"] != "acme" {
			t.Errorf("delivery %d: headers %v, want the application headers only", i+1, md.Headers)
		}
	}
}

// ZeroMQ has no expiration, and a header may not stand in for a property.
func TestPublishRefusesExpirationAndPropertyHeaders(t *testing.T) {
	testkit.NoLeaks(t)
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Dial(freeEndpoint(t))))
	defer shutdown(t, zq)
	ctx := context.Background()
	err := runtime.Publish(ctx, zq, runtime.Queue("jobs"), "job", Job{ID: 1}, runtime.WithProperties(runtime.Properties{Expiration: time.Second}))
	if err == nil || !strings.Contains(err.Error(), "expiration is for rabbitmq") {
		t.Errorf("publish with an expiration: %v", err)
	}
	err = runtime.Publish(ctx, zq, runtime.Queue("jobs"), "job", Job{ID: 1}, runtime.WithHeader("Correlation-ID", "x"))
	if err == nil || !strings.Contains(err.Error(), "set from the message's own field") {
		t.Errorf("publish with a correlation-id header: %v", err)
	}
}

// Every header ZeroMQ carries a message's own field in is one the runtime
// refuses as an application header.
func TestFieldHeadersAreReserved(t *testing.T) {
	for _, name := range []string{zeromq.HeaderType, zeromq.HeaderContentType, zeromq.HeaderMessageID, zeromq.HeaderCorrelationID,
		zeromq.HeaderReplyTo, zeromq.HeaderPriority, zeromq.HeaderTimestamp, zeromq.HeaderAppID} {
		if !adapter.IsZeroMQFieldHeader(name) {
			t.Errorf("header %q carries a field but is not reserved", name)
		}
	}
	if adapter.IsZeroMQFieldHeader("x-tenant") {
		t.Error("an application header is reserved")
	}
}
