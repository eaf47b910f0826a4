package zeromq

import (
	"context"
	"errors"
	"fmt"

	"github.com/streamgen/streamgen/runtime/zeromq/internal/zmtp"
)

// sender sends messages to one queue: a PUSH that dials the queue's bound
// reader, or this service's ventilator of the queue.
type sender interface {
	// send hands frames to the queue's socket, waiting while it cannot
	// take them until ctx ends. Once send returns nil, done (unless nil)
	// is called once: with nil when the message is written, or with the
	// error that lost it.
	send(ctx context.Context, frames [][]byte, done func(error)) error
	// connections returns how many peers are connected.
	connections() int
	// close flushes what the sender accepted while ctx lasts, then closes
	// its connections and waits for its goroutines. It returns an error
	// when it lost something.
	close(ctx context.Context) error
}

// errClosed is returned by a sender or Publish after Shutdown.
var errClosed = errors.New("zeromq: the broker is shut down")

// errReaderStopped is what sending to a queue bound in this service fails
// with once its subscription stopped receiving.
var errReaderStopped = errors.New("the queue's reader in this service has stopped receiving")

// pushSender sends to a bound queue: Send returns once the message is
// written, so it keeps nothing in memory.
type pushSender struct{ p *zmtp.Pusher }

func (s pushSender) send(ctx context.Context, frames [][]byte, done func(error)) error {
	if err := s.p.Send(ctx, frames); err != nil {
		return prefixed(err)
	}
	if done != nil {
		done(nil)
	}
	return nil
}

// sendBatch writes msgs in order with as few writes as it can, and returns
// how many of them, from the first, are written.
func (s pushSender) sendBatch(ctx context.Context, msgs [][][]byte) (int, error) {
	n, err := s.p.SendBatch(ctx, msgs)
	return n, prefixed(err)
}

func (s pushSender) connections() int                { return s.p.Connections() }
func (s pushSender) close(ctx context.Context) error { return prefixed(s.p.Close(ctx)) }

// batchSender is a sender that writes several messages at once.
type batchSender interface {
	// sendBatch writes msgs in order, and returns how many of them, from
	// the first, are written; an error says why the others are not.
	sendBatch(ctx context.Context, msgs [][][]byte) (int, error)
}

// ventSender sends through this service's ventilator of a queue.
type ventSender struct{ v *zmtp.Ventilator }

func (s ventSender) send(ctx context.Context, frames [][]byte, done func(error)) error {
	return prefixed(s.v.Send(ctx, frames, done))
}

func (s ventSender) connections() int                { return s.v.Connections() }
func (s ventSender) close(ctx context.Context) error { return prefixed(s.v.Close(ctx)) }

// prefixed gives an error of the transport this package's prefix.
func prefixed(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("zeromq: %w", err)
}
