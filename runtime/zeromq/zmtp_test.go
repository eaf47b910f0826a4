package zeromq_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/streamgen/streamgen/internal/testkit"
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
