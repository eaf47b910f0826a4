package zmtp

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/clock"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// listen binds a Server on loopback for the test; it is closed with it.
func listen(t *testing.T, cfg ServerConfig) *Server {
	t.Helper()
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Log == nil {
		cfg.Log = discard
	}
	s, err := Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestServerServesEachPeerUntilItCloses(t *testing.T) {
	testkit.NoLeaks(t)
	s := listen(t, ServerConfig{Type: zmq4.Pull})
	got := make(chan string, 2)
	s.Serve(func(c *Conn) {
		frames, err := c.ReadMessage(1<<20, 8)
		if err == nil {
			got <- string(frames[0])
		}
		_, _ = c.ReadMessage(1<<20, 8) // until the connection closes
	})
	for _, name := range []string{"a", "b"} {
		p := dialPeer(t, s.Addr(), zmq4.Push)
		if err := p.WriteMessage(background(t), [][]byte{[]byte(name)}); err != nil {
			t.Fatal(err)
		}
		if g := <-got; g != name {
			t.Fatalf("served %q, want %q", g, name)
		}
	}
	testkit.Eventually(t, "two peers connected", func() bool { return s.Connections() == 2 })
	s.Close() // the serving goroutines return: Close waits for them
	if n := s.Connections(); n != 0 {
		t.Fatalf("%d peers connected after Close", n)
	}
}

// TestServerRefusesConnectionsOverItsLimit: with room for two peers, a
// third is hung up on and a warning says why; once a peer leaves, a new
// one is served.
func TestServerRefusesConnectionsOverItsLimit(t *testing.T) {
	testkit.NoLeaks(t)
	logs := streamtest.NewLogRecorder(nil)
	s := listen(t, ServerConfig{Type: zmq4.Pull, MaxConnections: 2, Hint: "raise it with X", Log: logs.Logger()})
	s.Serve(func(c *Conn) { _, _ = c.ReadMessage(1<<20, 8) })
	first := dialPeer(t, s.Addr(), zmq4.Push)
	dialPeer(t, s.Addr(), zmq4.Push)
	testkit.Eventually(t, "two peers connected", func() bool { return s.Connections() == 2 })

	third, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	_ = third.SetReadDeadline(time.Now().Add(patience))
	if n, err := io.Copy(io.Discard, third); err != nil || n != 0 {
		t.Fatalf("the third connection read %d bytes, %v: want it closed at once", n, err)
	}
	lines := logs.Containing("connection refused")
	if len(lines) != 1 || lines[0].Attrs["max_connections"] != "2" || lines[0].Attrs["refused_connections"] != "1" || !strings.Contains(lines[0].Attrs["hint"], "raise it") {
		t.Fatalf("logs:\n%s", logs)
	}

	first.raw.Close()
	testkit.Eventually(t, "the first peer gone", func() bool { return s.Connections() == 1 })
	dialPeer(t, s.Addr(), zmq4.Push)
	testkit.Eventually(t, "a new peer served", func() bool { return s.Connections() == 2 })
}

func TestNoisyWarnsAtMostOnceAMinute(t *testing.T) {
	testkit.NoLeaks(t)
	clock := newClock()
	logs := streamtest.NewLogRecorder(nil)
	n := noisy{key: "events", clock: clock}
	for range 3 {
		n.log(logs.Logger(), "event")
	}
	clock.Advance(warnEvery - time.Second)
	n.log(logs.Logger(), "event")
	clock.Advance(time.Second)
	n.log(logs.Logger(), "event")
	var levels []string
	for _, l := range logs.Records() {
		levels = append(levels, l.Level.String()+":"+l.Attrs["events"]+":"+l.Attrs["not_warned"])
	}
	want := "WARN:1: DEBUG:2: DEBUG:3: DEBUG:4: WARN:5:3"
	if got := strings.Join(levels, " "); got != want {
		t.Fatalf("lines %s, want %s", got, want)
	}
	if n.total() != 5 {
		t.Fatalf("total = %d, want 5", n.total())
	}
}
