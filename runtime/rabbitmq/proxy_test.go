package rabbitmq

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
)

// proxy forwards the connections it accepts at addr to target, until the
// test ends. With frames set, it reads what each client sends as AMQP
// 0-9-1 frames and counts them (see wireFrames).
type proxy struct {
	ln     net.Listener
	frames *wireFrames
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

// brokerAddr is the host:port of the test broker.
func brokerAddr() string {
	return strings.TrimSuffix(strings.SplitN(brokerURL(), "@", 2)[1], "/")
}

func startProxy(t *testing.T, addr, target string) *proxy {
	t.Helper()
	return listenProxy(t, addr, target, nil)
}

// startCountingProxy starts a proxy to the test broker on a free port of
// 127.0.0.1, which counts the frames its clients send, and returns it
// and the URL to reach the broker through it.
func startCountingProxy(t *testing.T) (*proxy, string) {
	t.Helper()
	p := listenProxy(t, "127.0.0.1:0", brokerAddr(), &wireFrames{methods: map[amqpMethod]int{}, acked: map[connChannel]*ackedTags{}})
	return p, "amqp://guest:guest@" + p.ln.Addr().String() + "/"
}

func listenProxy(t *testing.T, addr, target string, frames *wireFrames) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	p := &proxy{ln: ln, frames: frames}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			var toBroker io.Writer = up
			if frames != nil {
				toBroker = io.MultiWriter(up, frames.reader())
			}
			p.wg.Go(func() { _, _ = io.Copy(toBroker, c); up.Close() })
			p.wg.Go(func() { _, _ = io.Copy(c, up); c.Close() })
		}
	})
	t.Cleanup(p.close)
	return p
}

func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// amqpMethod is an AMQP 0-9-1 method: its class id and method id.
type amqpMethod struct{ class, method uint16 }

var (
	basicAck    = amqpMethod{60, 80}
	basicNack   = amqpMethod{60, 120}
	basicReject = amqpMethod{60, 90}
)

// wireFrames counts the method frames clients sent through a proxy, by
// method, and the delivery tags their basic.acks acknowledged, by
// channel.
type wireFrames struct {
	mu      sync.Mutex
	methods map[amqpMethod]int
	acked   map[connChannel]*ackedTags
	conns   int // connections seen
	// multipleAcks counts the basic.acks with multiple=true.
	multipleAcks int
	bad          string // what did not parse, if anything
}

// connChannel is a channel of one of the proxy's connections.
type connChannel struct {
	conn    int
	channel uint16
}

// ackedTags are the tags of a channel that basic.acks acknowledged: every
// tag up to multiple (the highest tag of an ack with multiple=true), and
// single ones.
type ackedTags struct {
	multiple uint64
	single   map[uint64]bool
}

// reader returns the frameReader of a new connection.
func (w *wireFrames) reader() *frameReader {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.conns++
	return &frameReader{frames: w, conn: w.conns}
}

// count returns how many frames of method m were sent.
func (w *wireFrames) count(m amqpMethod) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.methods[m]
}

// multiples returns how many basic.acks had multiple=true.
func (w *wireFrames) multiples() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.multipleAcks
}

// ackedCount returns how many deliveries, over all connections and
// channels, the basic.acks sent acknowledged. Delivery tags of a channel
// count from 1, so a multiple ack of tag n acknowledges n.
func (w *wireFrames) ackedCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, a := range w.acked {
		n += int(a.multiple)
		for tag := range a.single {
			if tag > a.multiple {
				n++
			}
		}
	}
	return n
}

// problem returns what the proxy could not parse, or "".
func (w *wireFrames) problem() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bad
}

func (w *wireFrames) method(ch connChannel, payload []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(payload) < 4 {
		w.bad = "a method frame shorter than its ids"
		return
	}
	m := amqpMethod{binary.BigEndian.Uint16(payload), binary.BigEndian.Uint16(payload[2:])}
	w.methods[m]++
	if m != basicAck {
		return
	}
	// basic.ack: delivery-tag u64, then a bit octet whose bit 0 is multiple.
	if len(payload) < 13 {
		w.bad = "a basic.ack shorter than its arguments"
		return
	}
	tag, multiple := binary.BigEndian.Uint64(payload[4:]), payload[12]&1 == 1
	a := w.acked[ch]
	if a == nil {
		a = &ackedTags{single: map[uint64]bool{}}
		w.acked[ch] = a
	}
	if multiple {
		w.multipleAcks++
		a.multiple = max(a.multiple, tag)
	} else {
		a.single[tag] = true
	}
}

// frameReader parses one connection's client-to-server bytes, written to
// it as they pass, into frames: after the protocol header ("AMQP" 0 0 9
// 1), each frame is type u8, channel u16, size u32, payload, 0xCE; a
// method frame (type 1) goes to frames.
type frameReader struct {
	frames *wireFrames
	conn   int  // the connection's number
	header bool // the protocol header was read
	broken bool // bytes came that are not frames: parse no more
	buf    []byte
}

func (r *frameReader) Write(p []byte) (int, error) {
	if r.broken {
		return len(p), nil
	}
	r.buf = append(r.buf, p...)
	for {
		if !r.header {
			if len(r.buf) < 8 {
				return len(p), nil
			}
			if string(r.buf[:4]) != "AMQP" {
				r.fail("the connection did not start with the AMQP protocol header")
				return len(p), nil
			}
			r.buf, r.header = r.buf[8:], true
		}
		if len(r.buf) < 7 {
			return len(p), nil
		}
		typ, channel, size := r.buf[0], binary.BigEndian.Uint16(r.buf[1:]), int(binary.BigEndian.Uint32(r.buf[3:]))
		if len(r.buf) < 7+size+1 {
			return len(p), nil
		}
		if r.buf[7+size] != 0xCE {
			r.fail("a frame did not end with 0xCE")
			return len(p), nil
		}
		if typ == 1 {
			r.frames.method(connChannel{r.conn, channel}, r.buf[7:7+size])
		}
		r.buf = r.buf[:copy(r.buf, r.buf[8+size:])]
	}
}

func (r *frameReader) fail(why string) {
	r.frames.mu.Lock()
	r.frames.bad = why
	r.frames.mu.Unlock()
	r.buf, r.broken = nil, true
}
