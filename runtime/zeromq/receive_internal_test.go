package zeromq

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"testing"

	"github.com/go-zeromq/zmq4"
	"github.com/streamgen/streamgen/internal/testsupport/benchpair"
	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/clock"
	"github.com/streamgen/streamgen/runtime/zeromq/internal/zmtp"
)

// loopConn is a net.Conn whose reads return one message's wire form over
// and over, so that a benchmark of the receive path reads no socket.
type loopConn struct {
	net.Conn
	wire []byte
	off  int
}

func (c *loopConn) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		k := copy(p[n:], c.wire[c.off:])
		n += k
		c.off = (c.off + k) % len(c.wire)
	}
	return n, nil
}

func (c *loopConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5555} }

// receiveFrames are the frames of a message BenchmarkReceive reads.
func receiveFrames(size int) [][]byte {
	return [][]byte{[]byte("jobs"), []byte("type: Order\ncontent-type: application/json\nmessage-id: m-1\nx-tenant: acme"), benchpair.OrderJSON(size)}
}

// BenchmarkReceive measures the receive path of one message without the
// socket and the handler: reading its frames from a connection and
// parsing them into the Delivery the Consumer gets. Its allocs/op are the
// allocations per message.
func BenchmarkReceive(b *testing.B) {
	for _, size := range []int{benchpair.Small, benchpair.Large} {
		b.Run("payload="+benchpair.SizeName(size), func(b *testing.B) {
			frames := receiveFrames(size)
			wire := bytes.Repeat(zmtp.Encode(frames), 8)
			c := zmtp.NewConn(&loopConn{wire: wire})
			s := &subscriber{name: "jobs"}
			b.SetBytes(int64(len(wire) / 8))
			b.ReportAllocs()
			for b.Loop() {
				fr, err := c.ReadMessage(DefaultMaxMessageBytes, FrameCount+1)
				if err != nil {
					b.Fatal(err)
				}
				d, err := s.delivery(inbound{frames: fr, peer: c.Peer()})
				if err != nil {
					b.Fatal(err)
				}
				if len(d.Body) != len(frames[2]) || d.Headers["x-tenant"] != "acme" {
					b.Fatalf("delivery %+v", d)
				}
			}
		})
	}
}

// deliveryFrames are a message of a few headers.
func deliveryFrames() [][]byte {
	return [][]byte{[]byte("jobs"), []byte("type: Order\ncontent-type: application/json\nmessage-id: m-1"), []byte(`{"id":1}`)}
}

// checkDelivery says what is wrong with the Delivery of deliveryFrames.
func checkDelivery(d *adapter.Delivery, err error) string {
	if err != nil || d.Type != "Order" || d.MessageID != "m-1" || string(d.Body) != `{"id":1}` {
		return fmt.Sprintf("delivery %+v, %v", d, err)
	}
	if env := d.Raw.(*Envelope); env.Subscription != "jobs" || len(env.Headers) != 3 {
		return fmt.Sprintf("envelope %+v", env)
	}
	return ""
}

// A message of a few headers is parsed into its Delivery and Envelope
// (BenchmarkDeliveryAllocation counts what it allocates).
func TestDeliveryOfAFewHeaders(t *testing.T) {
	s := &subscriber{name: "jobs"}
	if bad := checkDelivery(s.delivery(inbound{frames: deliveryFrames(), peer: "p"})); bad != "" {
		t.Error(bad)
	}
}

// BenchmarkDeliveryAllocation: parsing a message of a few headers into its
// Delivery allocates twice: the Delivery with its Envelope and headers,
// and the header frame's text. The subscription name is the
// subscription's own string. make bench checks the allocs/op.
func BenchmarkDeliveryAllocation(b *testing.B) {
	s := &subscriber{name: "jobs"}
	frames := deliveryFrames()
	b.ReportAllocs()
	for b.Loop() {
		if bad := checkDelivery(s.delivery(inbound{frames: frames, peer: "p"})); bad != "" {
			b.Fatal(bad)
		}
	}
}

// unbatched hides a sender's sendBatch, so that an outbox sends its copies
// one at a time.
type unbatched struct{ sender }

// BenchmarkOutboxPush measures an outbox writing copies of 256 B through a
// Pusher to a PULL peer over loopback TCP, the copies waiting in the
// outbox written together (batch=on) or one write each (batch=off).
func BenchmarkOutboxPush(b *testing.B) {
	for _, batched := range []bool{true, false} {
		name := "batch=on"
		if !batched {
			name = "batch=off"
		}
		b.Run(name, func(b *testing.B) {
			srv, err := zmtp.Listen("tcp", "127.0.0.1:0", zmtp.ServerConfig{Type: zmq4.Pull, Clock: clock.System{}, Log: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			srv.Serve(func(c *zmtp.Conn) {
				for {
					if _, err := c.ReadMessage(DefaultMaxMessageBytes, FrameCount+1); err != nil {
						return
					}
				}
			})
			a := srv.Addr()
			var s sender = pushSender{zmtp.NewPusher("jobs", func() (string, string, error) { return a.Network(), a.String(), nil }, clock.System{}, slog.New(slog.DiscardHandler))}
			if !batched {
				s = unbatched{s}
			}
			o := newOutbox("jobs", s, 1024, slog.New(slog.DiscardHandler))
			frames := receiveFrames(benchpair.Small)
			var done sync.WaitGroup
			settle := func(err error) {
				if err != nil {
					b.Error(err)
				}
				done.Done()
			}
			b.ReportAllocs()
			for b.Loop() {
				done.Add(1)
				o.put(context.Background(), copyItem{frames: frames, done: settle}, true)
			}
			done.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
			if lost := o.flush(context.Background()); lost != 0 {
				b.Fatalf("lost %d", lost)
			}
			_ = s.close(context.Background())
			srv.Close()
		})
	}
}
