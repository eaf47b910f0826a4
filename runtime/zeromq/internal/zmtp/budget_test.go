package zmtp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"testing/iotest"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
)

// Waiters are served in the order they came: a large request is not
// passed over by a smaller one behind it that would fit.
func TestBudgetServesWaitersInTurn(t *testing.T) {
	testkit.NoLeaks(t)
	b := NewBudget(10)
	ctx := t.Context()
	if err := b.Acquire(ctx, 6); err != nil {
		t.Fatal(err)
	}
	order := make(chan int64, 2)
	go func() { _ = b.Acquire(ctx, 8); order <- 8 }()
	testkit.Eventually(t, "the large request waiting", func() bool { return b.Waiting() == 1 })
	go func() { _ = b.Acquire(ctx, 2); order <- 2 }() // fits now, but comes second
	testkit.Eventually(t, "the small request waiting behind it", func() bool { return b.Waiting() == 2 })
	b.Release(4) // room for the first: 2 + 8
	if first := <-order; first != 8 || b.Waiting() != 1 || b.InUse() != 10 {
		t.Fatalf("the request of %d was served first, %d waiting, %d in use; want the one of 8, which came first, and the other waiting", first, b.Waiting(), b.InUse())
	}
	b.Release(8)
	if second := <-order; second != 2 || b.InUse() != 4 || b.Peak() != 10 {
		t.Fatalf("then %d, with %d in use (peak %d), want 2, 4 in use, peak 10", second, b.InUse(), b.Peak())
	}
}

// A waiter whose context ends leaves the line, and those behind it that
// fit go on; a request of more than the whole budget takes all of it.
func TestBudgetWaiterGivesUp(t *testing.T) {
	testkit.NoLeaks(t)
	b := NewBudget(10)
	if err := b.Acquire(t.Context(), 4); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithCancel(t.Context())
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- b.Acquire(short, 100) }()
	testkit.Eventually(t, "the large request waiting", func() bool { return b.Waiting() == 1 })
	got := make(chan error, 1)
	go func() { got <- b.Acquire(t.Context(), 3) }()
	testkit.Eventually(t, "the small one behind it", func() bool { return b.Waiting() == 2 })
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled request: %v, want context.Canceled", err)
	}
	if err := <-got; err != nil || b.InUse() != 7 {
		t.Fatalf("the small request: %v with %d in use, want it served, 7 in use", err, b.InUse())
	}
	b.Release(7)
	if err := b.Acquire(t.Context(), 100); err != nil || b.InUse() != 10 {
		t.Fatalf("a request over the budget on an empty one: %v with %d in use, want the whole budget", err, b.InUse())
	}
	b.Release(100)
	if b.InUse() != 0 {
		t.Fatalf("%d in use after releasing it all", b.InUse())
	}
}

// ReadMessageWithin takes the bytes of the frames it keeps, whether the
// message was buffered whole or read frame by frame, and gives them back
// when the read fails.
func TestReadMessageWithinTakesTheKeptBytes(t *testing.T) {
	testkit.NoLeaks(t)
	small := [][]byte{[]byte("jobs"), []byte("type: a"), []byte("{}")}
	large := [][]byte{[]byte("jobs"), []byte("type: a"), bytes.Repeat([]byte("x"), 100_000)}
	for _, c := range []struct {
		name   string
		frames [][]byte
		keep   int
		want   int64
	}{
		{"buffered", small, 4, 4 + 7 + 2},
		{"frame by frame", large, 4, 4 + 7 + 100_000},
		{"the frames past keep are not kept", large, 2, 4 + 7},
	} {
		b := NewBudget(1 << 20)
		frames, charged, err := connOf(bytes.NewReader(Encode(c.frames))).ReadMessageWithin(t.Context(), b, 1<<20, 0, c.keep)
		if err != nil || len(frames) != 3 || charged != c.want || b.InUse() != c.want {
			t.Fatalf("%s: %d frames, %v; charged %d, %d in use, want %d", c.name, len(frames), err, charged, b.InUse(), c.want)
		}
	}
	b := NewBudget(1 << 20)
	cut := Encode(large)[:50_000] // the body ends early
	if _, _, err := connOf(bytes.NewReader(cut)).ReadMessageWithin(t.Context(), b, 1<<20, 0, 4); !errors.Is(err, io.ErrUnexpectedEOF) || b.InUse() != 0 {
		t.Fatalf("a cut message: %v, %d in use; want ErrUnexpectedEOF and nothing held", err, b.InUse())
	}
}

// A connection whose message does not fit reads nothing more until there
// is room, and holds nothing of the budget meanwhile; frames before the
// last over the lead bound make the message too large.
func TestReadMessageWithinWaitsForRoom(t *testing.T) {
	testkit.NoLeaks(t)
	frames := [][]byte{[]byte("jobs"), []byte("type: a"), bytes.Repeat([]byte("x"), 100_000)}
	b := NewBudget(150_000)
	if err := b.Acquire(t.Context(), 100_000); err != nil {
		t.Fatal(err)
	}
	r := &countingReader{r: iotest.HalfReader(bytes.NewReader(Encode(frames)))}
	read := make(chan error, 1)
	go func() {
		_, _, err := connOf(r).ReadMessageWithin(t.Context(), b, 1<<20, 1<<10, 4)
		read <- err
	}()
	testkit.Eventually(t, "the reader waiting for room", func() bool { return b.Waiting() == 1 })
	// It waits before the body: it has read no more than its buffer's
	// first fill.
	if n := r.n.Load(); n > 4096 || b.InUse() != 100_000 {
		t.Fatalf("read %d bytes of %d before room was made, %d in use; want at most one buffer's 4096, and only the other's 100000 in use", n, len(Encode(frames)), b.InUse())
	}
	b.Release(100_000)
	if err := <-read; err != nil || b.InUse() != 100_011 {
		t.Fatalf("after room was made: %v, %d in use; want the message, 100011 in use", err, b.InUse())
	}

	long := [][]byte{[]byte("jobs"), bytes.Repeat([]byte("h"), 2<<10), []byte("{}")}
	if _, _, err := connOf(iotest.OneByteReader(bytes.NewReader(Encode(long)))).ReadMessageWithin(t.Context(), NewBudget(1<<20), 1<<20, 1<<10, 4); !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrLeadTooLarge) {
		t.Fatalf("frames before the last over the lead bound: %v, want ErrTooLarge and ErrLeadTooLarge", err)
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
