package zmtp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"runtime"
	"testing"
)

// FuzzReadMessage: whatever the bytes, ReadMessage allocates in proportion
// to them and returns a message within its limit, or an error (ErrTooLarge
// for one over it); a message read is read again the same once encoded.
// Seeds: testdata/fuzz/FuzzReadMessage, among them a frame that announces
// 63 MiB and brings 9 bytes, which once cost an allocation of the whole
// announced size.
func FuzzReadMessage(f *testing.F) {
	f.Add(Encode([][]byte{[]byte("jobs"), []byte("type: job"), []byte("{}")}), uint32(1<<20), uint8(4))
	f.Add(append(binary.BigEndian.AppendUint64([]byte{flagLong}, 63<<20), "123456789"...), uint32(64<<20), uint8(4))
	f.Add([]byte{flagCommand, 4, 'P', 'I', 'N', 'G', 0, 0}, uint32(100), uint8(1))
	f.Fuzz(func(t *testing.T, wire []byte, limit uint32, keep uint8) {
		if limit == 0 {
			limit = 1
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		frames, err := connOf(bytes.NewReader(wire)).ReadMessage(int64(limit), int(keep))
		runtime.ReadMemStats(&after)
		// Memory follows the bytes that came, not the sizes announced.
		if allocated, bound := after.TotalAlloc-before.TotalAlloc, uint64(3*len(wire)+256<<10); allocated > bound {
			t.Fatalf("reading %d bytes allocated %d, want at most %d", len(wire), allocated, bound)
		}
		if err != nil {
			if !errors.Is(err, ErrTooLarge) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("ReadMessage = %v", err)
			}
			return
		}
		total := 0
		for i, fr := range frames {
			if i >= int(keep) && fr != nil {
				t.Fatalf("frame %d kept, with keep %d", i, keep)
			}
			total += len(fr)
		}
		if len(frames) == 0 || total > int(limit) {
			t.Fatalf("%d frames of %d bytes, limit %d", len(frames), total, limit)
		}
		if len(frames) > int(keep) {
			return // frames were dropped: there is nothing to compare
		}
		again, err := connOf(bytes.NewReader(Encode(frames))).ReadMessage(int64(limit), int(keep))
		if err != nil || !reflect.DeepEqual(normal(again), normal(frames)) {
			t.Fatalf("ReadMessage(Encode(%q)) = %q, %v", frames, again, err)
		}
	})
}

// normal makes empty frames nil, so that two reads compare equal.
func normal(frames [][]byte) [][]byte {
	out := make([][]byte, len(frames))
	for i, f := range frames {
		if len(f) > 0 {
			out[i] = f
		}
	}
	return out
}

// FuzzHandshakeGuard: the guard refuses a handshake stream exactly when a
// simple reading of it finds a signature byte that is not ZMTP's or a
// frame over MaxHandshakeFrame, and gives the same answer however the
// stream is cut into reads. Seeds: testdata/fuzz/FuzzHandshakeGuard.
func FuzzHandshakeGuard(f *testing.F) {
	huge := binary.BigEndian.AppendUint64(append(greeting(), flagCommand|flagLong), 1<<50)
	f.Add(huge, uint16(65))
	f.Add([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), uint16(3))
	f.Add(append(greeting(), flagCommand, 2, 'o', 'k'), uint16(0))
	f.Fuzz(func(t *testing.T, stream []byte, cut uint16) {
		want := refuses(stream)
		at := int(cut) % (len(stream) + 1)
		var g handshakeGuard
		err := g.follow(stream[:at])
		if err == nil {
			err = g.follow(stream[at:])
		}
		if (err != nil) != want {
			t.Fatalf("guard: %v; a simple reading refuses: %v", err, want)
		}
	})
}

// refuses reads a handshake stream the simple way and tells whether the
// guard must refuse it.
func refuses(b []byte) bool {
	for _, fixed := range [][2]int{{signatureStart, signatureStartByte}, {signatureEnd, signatureEndByte}} {
		if fixed[0] < len(b) && int(b[fixed[0]]) != fixed[1] {
			return true
		}
	}
	if len(b) <= greetingSize {
		return false
	}
	b = b[greetingSize:]
	for len(b) > 0 {
		flags := b[0]
		b = b[1:]
		var size uint64
		if flags&flagLong != 0 {
			if len(b) < 8 {
				return false
			}
			size = binary.BigEndian.Uint64(b[:8])
			b = b[8:]
			if size > MaxHandshakeFrame {
				return true
			}
		} else {
			if len(b) < 1 {
				return false
			}
			size = uint64(b[0])
			b = b[1:]
		}
		if uint64(len(b)) < size {
			return false
		}
		b = b[size:]
	}
	return false
}
