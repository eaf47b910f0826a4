package zmtp

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
)

// connOf returns a Conn that reads r.
func connOf(r io.Reader) *Conn {
	return &Conn{r: bufio.NewReader(r), peer: "test"}
}

func TestReadMessageReadsWhatEncodeWrites(t *testing.T) {
	testkit.NoLeaks(t)
	for _, frames := range [][][]byte{
		{[]byte("jobs"), nil, []byte("{}")},
		{bytes.Repeat([]byte("a"), 255), bytes.Repeat([]byte("b"), 256)},
		{bytes.Repeat([]byte("c"), 300_000)},
	} {
		// One byte at a time: every frame's buffer grows as bytes arrive.
		got, err := connOf(iotest.OneByteReader(bytes.NewReader(Encode(frames)))).ReadMessage(1<<20, 8)
		if err != nil {
			t.Fatal(err)
		}
		for i := range frames {
			if !bytes.Equal(got[i], frames[i]) {
				t.Fatalf("frame %d: %d bytes, want %d", i, len(got[i]), len(frames[i]))
			}
		}
		if len(got) != len(frames) {
			t.Fatalf("%d frames, want %d", len(got), len(frames))
		}
	}
}

func TestReadMessageKeepsAtMostKeepFrames(t *testing.T) {
	testkit.NoLeaks(t)
	frames := [][]byte{[]byte("1"), []byte("2"), []byte("3"), []byte("4"), []byte("5")}
	wire := append(Encode(frames), Encode([][]byte{[]byte("next")})...)
	c := connOf(bytes.NewReader(wire))
	got, err := c.ReadMessage(1<<20, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]byte{[]byte("1"), []byte("2"), nil, nil, nil}; !reflect.DeepEqual(got, want) {
		t.Fatalf("frames = %q, want %q", got, want)
	}
	if next, err := c.ReadMessage(1<<20, 2); err != nil || string(next[0]) != "next" {
		t.Fatalf("the message after = %q, %v: the stream is out of step", next, err)
	}
}

func TestReadMessageSkipsCommands(t *testing.T) {
	testkit.NoLeaks(t)
	wire := []byte{flagCommand, 4, 'P', 'I', 'N', 'G'}
	wire = append(wire, Encode([][]byte{[]byte("after")})...)
	got, err := connOf(bytes.NewReader(wire)).ReadMessage(1<<20, 8)
	if err != nil || len(got) != 1 || string(got[0]) != "after" {
		t.Fatalf("ReadMessage = %q, %v", got, err)
	}
}

func TestReadMessageRefusesWhatIsOverItsLimit(t *testing.T) {
	testkit.NoLeaks(t)
	long := func(size uint64) []byte {
		return binary.BigEndian.AppendUint64([]byte{flagLong}, size)
	}
	for name, wire := range map[string][]byte{
		"one frame over":       Encode([][]byte{make([]byte, 101)}),
		"frames adding up":     Encode([][]byte{make([]byte, 60), make([]byte, 60)}),
		"an announced 2^63":    long(1 << 63),
		"an announced 2^64-1":  long(^uint64(0)),
		"a command over 64KiB": binary.BigEndian.AppendUint64([]byte{flagCommand | flagLong}, MaxHandshakeFrame+1),
	} {
		_, err := connOf(bytes.NewReader(wire)).ReadMessage(100, 8)
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: ReadMessage = %v, want ErrTooLarge", name, err)
		}
	}
	if _, err := connOf(bytes.NewReader(Encode([][]byte{make([]byte, 100)}))).ReadMessage(100, 8); err != nil {
		t.Errorf("a message of exactly the limit: %v", err)
	}
}

func TestReadMessageFailsOnACutMessage(t *testing.T) {
	testkit.NoLeaks(t)
	wire := Encode([][]byte{[]byte("name"), bytes.Repeat([]byte("x"), 1000)})
	_, err := connOf(bytes.NewReader(wire[:len(wire)-10])).ReadMessage(1<<20, 8)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("ReadMessage of a cut message = %v, want io.ErrUnexpectedEOF", err)
	}
}

// stallingReader hands out its bytes, then blocks until released, as a
// peer that announced a large frame and sent little of it.
type stallingReader struct {
	data    []byte
	stalled chan struct{} // closed when the bytes ran out
	release chan struct{}
	once    sync.Once
}

func (r *stallingReader) Read(p []byte) (int, error) {
	if len(r.data) > 0 {
		n := copy(p, r.data)
		r.data = r.data[n:]
		return n, nil
	}
	r.once.Do(func() { close(r.stalled) })
	<-r.release
	return 0, net.ErrClosed
}

// TestIncompleteFramesHoldLittleMemory: thirty connections that each
// announce a frame of 63 MiB and send 9 bytes of it. The whole announced
// size was allocated at once, and the heap grew by 1.9 GB; a frame's
// buffer now grows as its bytes arrive.
func TestIncompleteFramesHoldLittleMemory(t *testing.T) {
	testkit.NoLeaks(t)
	const conns, announced, limit = 30, 63 << 20, 64 << 20
	release := make(chan struct{})
	var readers []*stallingReader
	for range conns {
		wire := binary.BigEndian.AppendUint64([]byte{flagLong}, announced)
		readers = append(readers, &stallingReader{data: append(wire, "123456789"...), stalled: make(chan struct{}), release: release})
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	for _, r := range readers {
		wg.Go(func() {
			if _, err := connOf(r).ReadMessage(limit, 8); !errors.Is(err, net.ErrClosed) {
				t.Errorf("ReadMessage = %v, want the reader's error", err)
			}
		})
	}
	for _, r := range readers {
		<-r.stalled // every reader waits for bytes that do not come
	}
	runtime.ReadMemStats(&after)
	close(release)
	wg.Wait()
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("the heap grew by %.1f MiB for %d connections each announcing %d MiB", float64(growth)/(1<<20), conns, announced>>20)
	if bound := int64(conns * 2 * (firstChunk + 4096)); growth > bound {
		t.Fatalf("the heap grew by %d bytes, want at most %d (%d connections, each a first chunk and a read buffer)", growth, bound, conns)
	}
}

func TestCauseIsTheInnermostErrorWithoutZmq4sPrefix(t *testing.T) {
	testkit.NoLeaks(t)
	inner := errors.New(`zmq4: peer="PUSH" not compatible with "PUSH"`)
	for err, want := range map[error]string{
		wrapf("zmq4: could not initialize ZMTP connection: %w", wrapf("zmq4: could not read: %w", inner)): `peer="PUSH" not compatible with "PUSH"`,
		&notZMTPError{at: 0, got: 'G', want: 0xff}:                                                        "not a ZMTP greeting: byte 0 is 0x47, want 0xff",
		errors.New("i/o timeout"): "i/o timeout",
	} {
		if got := Cause(err); got != want {
			t.Errorf("Cause(%v) = %q, want %q", err, got, want)
		}
	}
	if e := (&HandshakeError{Peer: "1.2.3.4:5", Err: inner}); !strings.HasPrefix(e.Error(), "handshake with 1.2.3.4:5: peer=") || !errors.Is(e, inner) {
		t.Errorf("HandshakeError = %q", e)
	}
}

// A message already in the read buffer is read whole, and its frames do
// not overlap: appending to one leaves the next as it was
// (BenchmarkReadMessageAllocation counts what a read allocates). Messages in the buffer around
// a command, over keep frames, and partly buffered read as they do one byte
// at a time.
func TestReadMessageOfABufferedMessage(t *testing.T) {
	testkit.NoLeaks(t)
	msgs := [][][]byte{
		{[]byte("jobs"), []byte("type: Order"), []byte(`{"id":1}`)},
		{[]byte("jobs"), nil, bytes.Repeat([]byte("x"), 300)},
		{[]byte("1"), []byte("2"), []byte("3"), []byte("4"), []byte("5")},
		{[]byte("jobs"), []byte("h: v"), bytes.Repeat([]byte("y"), 10_000)},
	}
	var wire []byte
	for i, m := range msgs {
		wire = append(wire, Encode(m)...)
		if i == 0 {
			wire = append(wire, flagCommand, 4, 'p', 'i', 'n', 'g')
		}
	}
	read := func(r io.Reader) [][][]byte {
		c := connOf(r)
		var got [][][]byte
		for range msgs {
			m, err := c.ReadMessage(1<<20, 4)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, m)
		}
		return got
	}
	whole, bytewise := read(bytes.NewReader(wire)), read(iotest.OneByteReader(bytes.NewReader(wire)))
	if !reflect.DeepEqual(whole, bytewise) {
		t.Fatalf("read whole: %q\nread a byte at a time: %q", whole, bytewise)
	}
	if len(whole[2]) != 5 || whole[2][4] != nil || string(whole[2][3]) != "4" {
		t.Fatalf("5 frames, keep 4: %q", whole[2])
	}
	first := whole[0]
	_ = append(first[0], "XXXX"...)
	if string(first[1]) != "type: Order" {
		t.Fatalf("appending to frame 0 changed frame 1: %q", first[1])
	}

	// A message that comes alone, in one read, after the connection was
	// idle, reads as it was sent.
	one := Encode(msgs[0])
	if m, err := connOf(&oneByOne{msg: one}).ReadMessage(1<<20, 4); err != nil || !reflect.DeepEqual(m, msgs[0]) {
		t.Fatalf("a message that came alone: %q, %v", m, err)
	}
	// Over the limit, even when buffered: refused.
	if _, err := connOf(bytes.NewReader(one)).ReadMessage(10, 4); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a buffered message of %d bytes with limit 10: %v", len(one), err)
	}
}

// BenchmarkReadMessageAllocation: a message of 3 frames is read with two
// allocations, its frame list and one buffer for its bodies, whether it is
// already in the read buffer or comes alone, in one read, after the
// connection was idle. make bench checks the allocs/op.
func BenchmarkReadMessageAllocation(b *testing.B) {
	one := Encode([][]byte{[]byte("jobs"), []byte("type: Order"), []byte(`{"id":1}`)})
	for _, tc := range []struct {
		name string
		r    io.Reader
	}{
		{"buffered", &repeated{msg: one}},
		{"alone", &oneByOne{msg: one}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := connOf(tc.r)
			b.ReportAllocs()
			for b.Loop() {
				if m, err := c.ReadMessage(1<<20, 4); err != nil || len(m) != 3 {
					b.Fatal(m, err)
				}
			}
		})
	}
}

// repeated reads as msg over and over, filling each Read: a connection
// whose reads find many messages at once.
type repeated struct {
	msg []byte
	off int
}

func (r *repeated) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.msg[r.off:])
		n += c
		r.off = (r.off + c) % len(r.msg)
	}
	return n, nil
}

// oneByOne returns msg whole from each Read, as a socket does with a
// message that comes alone.
type oneByOne struct{ msg []byte }

func (r *oneByOne) Read(p []byte) (int, error) { return copy(p, r.msg), nil }
