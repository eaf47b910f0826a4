package zeromq_test

import (
	"context"
	"encoding/binary"
	"errors"
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

// zmtpGreeting is a ZMTP 3.0 greeting for the NULL mechanism.
func zmtpGreeting() []byte {
	g := make([]byte, 64)
	g[0], g[9], g[10], g[11] = 0xff, 0x7f, 3, 0
	copy(g[12:], "NULL")
	return g
}

// TestHandshakeRefusesAHugeFrame: a peer that announces a gigantic frame in
// the handshake is disconnected before anything is allocated for it, and the
// queue goes on serving.
func TestHandshakeRefusesAHugeFrame(t *testing.T) {
	testkit.NoLeaks(t)
	ep := freeEndpoint(t)
	logs := streamtest.NewLogRecorder(nil)
	rec := newRecorder()
	app := runtime.NewApp("guard", runtime.WithLogger(logs.Logger()))
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep)))
	app.Mount(zq, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{jobHandler(rec, runtime.Policy{}, nil)}})
	streamtest.RunApp(t, app)

	raw, err := net.Dial("tcp", strings.TrimPrefix(ep, "tcp://"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	huge := append(zmtpGreeting(), 0x06) // a long command frame
	huge = binary.BigEndian.AppendUint64(huge, 1<<50)
	if _, err := raw.Write(huge); err != nil {
		t.Fatal(err)
	}
	// The runtime answers with its greeting and READY, then hangs up.
	_ = raw.SetReadDeadline(time.Now().Add(waitLimit))
	_, err = io.Copy(io.Discard, raw)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the connection stayed open")
	}
	testkit.Eventually(t, "the handshake failure logged", func() bool { return len(logs.Containing("failed the ZMTP handshake")) == 1 })
	if e := logs.Containing("failed the ZMTP handshake")[0]; !strings.Contains(e.Attrs["err"], "size limit") {
		t.Fatalf("line = %s", e)
	}

	publishJob(t, zq, "jobs", Job{ID: 1})
	rec.waitFor(t, "jobs", 1)
}

// TestHandshakeWithAnIncompatibleSocketFails: a PUSH cannot talk to a
// ventilator (another PUSH); the ventilator logs the refusal and keeps no
// peer.
func TestHandshakeWithAnIncompatibleSocketFails(t *testing.T) {
	testkit.NoLeaks(t)
	ep := freeEndpoint(t)
	logs := streamtest.NewLogRecorder(nil)
	vent := zeromq.New(zeromq.Queue("work", zeromq.Ventilator(ep)), zeromq.WithLogger(logs.Logger()))
	defer shutdown(t, vent)
	if err := vent.Listen(); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	push := zmq4.NewPush(ctx)
	defer push.Close()
	if err := push.Dial(ep); err == nil || !strings.Contains(err.Error(), "not compatible") {
		t.Fatalf("a PUSH dialled the ventilator: %v", err)
	}
	testkit.Eventually(t, "the refusal logged", func() bool { return len(logs.Containing("failed the ZMTP handshake")) == 1 })
	if e := logs.Containing("failed the ZMTP handshake")[0]; !strings.Contains(e.Attrs["err"], "not compatible") {
		t.Fatalf("line = %s", e)
	}
	if n := vent.Connections("work"); n != 0 {
		t.Fatalf("%d workers connected, want 0", n)
	}
}

// TestProbesAreWarnedOnceAMinuteAndCounted: fifty connections that do not
// speak ZMTP (a port scanner, an HTTP probe) make one warning; the others
// are logged at debug level with the count so far. A minute later on the
// clock, the next one warns again, saying how many were not warned about.
func TestProbesAreWarnedOnceAMinuteAndCounted(t *testing.T) {
	testkit.NoLeaks(t)
	const probes = 50
	ep := freeEndpoint(t)
	clock := newClock()
	logs := streamtest.NewLogRecorder(nil)
	app := runtime.NewApp("probes", runtime.WithLogger(logs.Logger()), runtime.WithClock(clock))
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep)))
	app.Mount(zq, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{jobHandler(newRecorder(), runtime.Policy{}, nil)}})
	streamtest.RunApp(t, app)

	probe := func() {
		t.Helper()
		raw, err := net.Dial("tcp", strings.TrimPrefix(ep, "tcp://"))
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		if _, err := raw.Write([]byte("GET / HTTP/1.1\r\nHost: jobs\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		// The runtime hangs up once it sees this is not ZMTP, without
		// waiting for the rest of a greeting.
		_ = raw.SetReadDeadline(time.Now().Add(waitLimit))
		_, _ = io.Copy(io.Discard, raw)
	}
	failures := func() []streamtest.LogRecord { return logs.Containing("failed the ZMTP handshake") }
	for i := 1; i <= probes; i++ {
		probe()
		testkit.Eventually(t, fmt.Sprintf("probe %d logged", i), func() bool { return len(failures()) == i })
	}
	lines := failures()
	if lines[0].Level != slog.LevelWarn || lines[0].Attrs["subscription"] != "jobs" || lines[0].Attrs["peer"] == "" {
		t.Fatalf("first line = %s", lines[0])
	}
	if e := lines[0].Attrs["err"]; len(e) > 120 || strings.Count(e, "zmq4:") > 0 || !strings.Contains(e, "not a ZMTP greeting") {
		t.Errorf("err = %q: want the cause in a few words, not zmq4's whole chain", e)
	}
	for i, l := range lines[1:] {
		if l.Level != slog.LevelDebug || l.Attrs["failed_handshakes"] != fmt.Sprint(i+2) {
			t.Fatalf("line %d = %s, want debug level and failed_handshakes=%d", i+2, l, i+2)
		}
	}

	clock.Advance(time.Minute)
	probe()
	testkit.Eventually(t, "the probe after a minute logged", func() bool { return len(failures()) == probes+1 })
	if l := failures()[probes]; l.Level != slog.LevelWarn || l.Attrs["failed_handshakes"] != fmt.Sprint(probes+1) || l.Attrs["not_warned"] != fmt.Sprint(probes-1) {
		t.Fatalf("line after a minute = %s, want a warning with failed_handshakes=%d not_warned=%d", l, probes+1, probes-1)
	}
}
