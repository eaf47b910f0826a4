package zmtp

import (
	"context"
	"sync"
)

// Budget bounds the bytes of the messages a socket has read from all its
// connections and not yet released. A connection takes a message's bytes
// from it before it reads them (ReadMessageWithin), and waits while they do
// not fit: it stops reading, and TCP holds its peer back. Whoever is done
// with the message gives the bytes back with Release. Waiters are served in
// the order they came, so a large message is not passed over for ever by
// small ones.
//
// A connection waits only while it holds nothing of the Budget, so
// connections cannot wait for each other: every byte taken belongs to a
// message being read whose peer is sending it, or to a message read and
// not yet released.
type Budget struct {
	size int64

	mu      sync.Mutex
	used    int64
	peak    int64
	waiters []*budgetWaiter // first come first
}

// budgetWaiter is a connection waiting for n bytes; ready is closed once
// they are its.
type budgetWaiter struct {
	n     int64
	ready chan struct{}
}

// NewBudget returns a Budget of size bytes, more than 0.
func NewBudget(size int64) *Budget { return &Budget{size: size} }

// Size returns the bound.
func (b *Budget) Size() int64 { return b.size }

// Acquire takes n bytes, waiting while they do not fit until ctx ends. A
// request of more than the whole Budget takes the whole Budget: it waits
// until nothing else is held.
func (b *Budget) Acquire(ctx context.Context, n int64) error {
	n = min(n, b.size)
	b.mu.Lock()
	if len(b.waiters) == 0 && b.used+n <= b.size {
		b.take(n)
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready: // granted meanwhile: give it back
		b.used -= n
	default:
		for i, o := range b.waiters {
			if o == w {
				b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
				break
			}
		}
	}
	b.grant() // those behind it may fit now
	return ctx.Err()
}

// Release gives back n bytes taken with Acquire (the same n).
func (b *Budget) Release(n int64) {
	if n <= 0 {
		return
	}
	n = min(n, b.size)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	b.grant()
}

// take counts n bytes as used. b.mu must be held.
func (b *Budget) take(n int64) {
	b.used += n
	b.peak = max(b.peak, b.used)
}

// grant hands bytes to the waiters in order, while the first fits. b.mu
// must be held.
func (b *Budget) grant() {
	for len(b.waiters) > 0 && b.used+b.waiters[0].n <= b.size {
		w := b.waiters[0]
		b.waiters[0] = nil
		b.waiters = b.waiters[1:]
		b.take(w.n)
		close(w.ready)
	}
}

// InUse returns the bytes held now.
func (b *Budget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Peak returns the most bytes held at once so far.
func (b *Budget) Peak() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}

// Waiting returns how many connections wait for bytes now.
func (b *Budget) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiters)
}
