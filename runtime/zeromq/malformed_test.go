package zeromq_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// badInput is one message a careless or hostile sender may send.
type badInput struct {
	name   string
	frames []string
	// log is the settle line it must cause, reason a part of its reason.
	log, reason string
}

func badInputs(deadLetter bool) []badInput {
	poison := "message rejected without requeue"
	if deadLetter {
		poison = "message parked"
	}
	return []badInput{
		{"wrong frame count", []string{"jobs", `{"id":1}`}, "message dropped", "2 frames, want 3"},
		{"four frames", []string{"jobs", "type: job", `{"id":1}`, "extra"}, "message dropped", "4 frames, want 3"},
		{"headers that do not parse", []string{"jobs", "type job", `{"id":1}`}, "message dropped", "has no colon"},
		{"a header given twice", []string{"jobs", "type: job\nTYPE: job", `{"id":1}`}, "message dropped", "appears twice"},
		{"a non-numeric count", []string{"jobs", "type: job\nx-retry-count: two", `{"id":1}`}, poison, `retry count "two"`},
		{"a negative count", []string{"jobs", "type: job\nx-retry-count: -1", `{"id":1}`}, poison, `retry count "-1"`},
		{"another subscription's name", []string{"orders", "type: job", `{"id":1}`}, "message dropped", `addressed to subscription "orders"`},
		{"a body over the payload limit", []string{"jobs", "type: job\nmessage-id: big", `{"id":1,"note":"` + strings.Repeat("x", 100) + `"}`}, poison, "exceeds max_payload_bytes=64"},
		{"a body that does not decode", []string{"jobs", "type: job\nmessage-id: garbled", `{"id":`}, poison, "does not decode"},
		{"an unknown message type", []string{"jobs", "type: refund\nmessage-id: refund", `{"id":1}`}, poison, `no handler for message type "refund"`},
	}
}

// TestBadInputIsDroppedAndTheWorkerGoesOn sends each bad message with a raw
// zmq4 PUSH, then a good one: the bad one is settled with a warning naming
// the subscription and the reason, and the good one is served.
func TestBadInputIsDroppedAndTheWorkerGoesOn(t *testing.T) {
	testkit.NoLeaks(t)
	for _, withDL := range []bool{false, true} {
		t.Run(fmt.Sprintf("dead_letter=%v", withDL), func(t *testing.T) {
			ep := freeEndpoint(t)
			deadEP := freeEndpoint(t)
			var deadLetters func() [][]byte
			policy := runtime.Policy{}
			if withDL {
				deadLetters = rawPull(t, deadEP)
				policy.DeadLetter = "jobs.dead"
			}
			rec := newRecorder()
			logs := streamtest.NewLogRecorder(nil)
			app := runtime.NewApp("bad-input", runtime.WithLogger(logs.Logger()))
			app.Mount(zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep)), zeromq.Queue("jobs.dead", zeromq.Bind(deadEP))),
				&runtime.Subscription{Name: "jobs", MaxPayloadBytes: 64, Handlers: []runtime.Handler{jobHandler(rec, policy, nil)}})
			streamtest.RunApp(t, app)
			push := rawPush(t, ep)

			for i, bad := range badInputs(withDL) {
				before := len(logs.Containing(bad.log))
				send(t, push, bad.frames...)
				send(t, push, "jobs", fmt.Sprintf("type: job\nmessage-id: good-%d", i), fmt.Sprintf(`{"id":%d}`, i))
				got := rec.waitFor(t, "jobs", i+1)
				if g := got[len(got)-1]; g.MD.MessageID != fmt.Sprint("good-", i) {
					t.Fatalf("%s: handled %+v, want only the good message", bad.name, g)
				}
				// A dead letter is settled once written, which may come
				// after the good message is handled.
				testkit.Eventually(t, fmt.Sprintf("%s: a %q line", bad.name, bad.log), func() bool { return len(logs.Containing(bad.log)) > before })
				lines := logs.Containing(bad.log)
				if len(lines) != before+1 {
					t.Fatalf("%s: want one more %q line; logs:\n%s", bad.name, bad.log, logs)
				}
				line := lines[len(lines)-1]
				if line.Level.String() != "WARN" || line.Attrs["subscription"] != "jobs" || !strings.Contains(line.Attrs["reason"], bad.reason) {
					t.Fatalf("%s: line %s, want a warning naming jobs and %q", bad.name, line, bad.reason)
				}
				if line.Attrs["poison"] != "true" && bad.log != "message dropped" {
					t.Fatalf("%s: not marked poison: %s", bad.name, line)
				}
				if bad.log == "message parked" {
					dl := deadLetters()
					if string(dl[0]) != "jobs.dead" || string(dl[2]) != bad.frames[2] ||
						!strings.Contains(string(dl[1]), "x-streamgen-poison: true") || !strings.Contains(string(dl[1]), "x-streamgen-source: jobs") {
						t.Fatalf("%s: dead letter %q", bad.name, dl)
					}
				}
			}
			s := app.Stats()[0]
			n := int64(len(badInputs(withDL)))
			if s.Delivered != 2*n || s.Acked != n || s.Dropped+s.Parked+s.Rejected != n {
				t.Fatalf("metrics = %+v", s)
			}
		})
	}
}

// TestMessageOverTheSocketLimitClosesTheConnection: a message larger than
// MaxMessageBytes is not read into memory: its connection is closed, a
// warning says why, and other senders are still served.
func TestMessageOverTheSocketLimitClosesTheConnection(t *testing.T) {
	testkit.NoLeaks(t)
	ep := freeEndpoint(t)
	rec := newRecorder()
	logs := streamtest.NewLogRecorder(nil)
	app := runtime.NewApp("limits", runtime.WithLogger(logs.Logger()))
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep), zeromq.MaxMessageBytes(1024)))
	app.Mount(zq, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{jobHandler(rec, runtime.Policy{}, nil)}})
	streamtest.RunApp(t, app)

	hog := rawPush(t, ep)
	testkit.Eventually(t, "the sender connected", func() bool { return zq.Connections("jobs") == 1 })
	sendToBeRefused(hog, "jobs", "type: job", `{"id":1,"note":"`+strings.Repeat("x", 5000)+`"}`)
	testkit.Eventually(t, "the sender disconnected", func() bool { return zq.Connections("jobs") == 0 })
	lines := logs.Containing("message dropped")
	if len(lines) != 1 || lines[0].Attrs["subscription"] != "jobs" || !strings.Contains(lines[0].Attrs["reason"], "message too large") {
		t.Fatalf("logs:\n%s", logs)
	}

	publishJob(t, zq, "jobs", Job{ID: 2})
	if got := rec.waitFor(t, "jobs", 1); got[0].Body != "2" {
		t.Fatalf("handled %+v", got)
	}
}

// TestDefaultSocketLimitFollowsMaxPayloadBytes: without MaxMessageBytes a
// subscription with max_payload_bytes reads up to that plus 1 MiB.
func TestDefaultSocketLimitFollowsMaxPayloadBytes(t *testing.T) {
	testkit.NoLeaks(t)
	ep := freeEndpoint(t)
	logs := streamtest.NewLogRecorder(nil)
	app := runtime.NewApp("limits", runtime.WithLogger(logs.Logger()))
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep)))
	app.Mount(zq, &runtime.Subscription{Name: "jobs", MaxPayloadBytes: 10, Handlers: []runtime.Handler{jobHandler(newRecorder(), runtime.Policy{}, nil)}})
	streamtest.RunApp(t, app)
	hog := rawPush(t, ep)
	sendToBeRefused(hog, "jobs", "type: job", strings.Repeat("x", 1<<20+100))
	testkit.Eventually(t, "the oversize message dropped at the socket", func() bool { return len(logs.Containing("message dropped")) == 1 })
	if r := logs.Containing("message dropped")[0].Attrs["reason"]; !strings.Contains(r, fmt.Sprint(10+1<<20)) {
		t.Fatalf("reason = %q, want the limit %d", r, 10+1<<20)
	}
}

// rawPull binds a zmq4 PULL socket at ep for the test and returns a
// function that receives the next message's frames.
func rawPull(t *testing.T, ep string) func() [][]byte {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pull := zmq4.NewPull(ctx)
	if err := pull.Listen(ep); err != nil {
		cancel()
		t.Fatalf("listen %s: %v", ep, err)
	}
	t.Cleanup(func() {
		pull.Close()
		cancel()
	})
	return func() [][]byte {
		t.Helper()
		type result struct {
			msg zmq4.Msg
			err error
		}
		got := make(chan result, 1)
		go func() {
			m, err := pull.Recv()
			got <- result{m, err}
		}()
		select {
		case r := <-got:
			if r.err != nil {
				t.Fatalf("recv: %v", r.err)
			}
			return r.msg.Frames
		case <-time.After(waitLimit):
			pull.Close()
			<-got
			t.Fatal("no message on the raw PULL socket")
			return nil
		}
	}
}

// TestConnectionLimitOfABoundQueue: with room for two senders, a third
// is hung up on, with a warning naming the subscription and the limit; the
// two are still served.
func TestConnectionLimitOfABoundQueue(t *testing.T) {
	testkit.NoLeaks(t)
	ep := freeEndpoint(t)
	rec := newRecorder()
	logs := streamtest.NewLogRecorder(nil)
	app := runtime.NewApp("limits", runtime.WithLogger(logs.Logger()))
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep), zeromq.MaxConnections(2)))
	app.Mount(zq, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{jobHandler(rec, runtime.Policy{}, nil)}})
	streamtest.RunApp(t, app)

	first, second := rawPush(t, ep), rawPush(t, ep)
	testkit.Eventually(t, "two senders connected", func() bool { return zq.Connections("jobs") == 2 })
	raw, err := net.Dial("tcp", strings.TrimPrefix(ep, "tcp://"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	_ = raw.SetReadDeadline(time.Now().Add(waitLimit))
	if n, err := io.Copy(io.Discard, raw); n != 0 || err != nil {
		t.Fatalf("the third connection read %d bytes, %v: want it closed at once", n, err)
	}
	lines := logs.Containing("connection refused")
	if len(lines) != 1 || lines[0].Level != slog.LevelWarn || lines[0].Attrs["subscription"] != "jobs" || lines[0].Attrs["max_connections"] != "2" {
		t.Fatalf("logs:\n%s", logs)
	}
	send(t, first, "jobs", "type: job", `{"id":1}`)
	send(t, second, "jobs", "type: job", `{"id":2}`)
	rec.waitFor(t, "jobs", 2)
}
