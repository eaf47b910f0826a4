package zeromq

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/streamgen/streamgen/runtime/clock"
	"github.com/streamgen/streamgen/runtime/zeromq/internal/zmtp"
)

// inbox is a bound PULL socket that hands each message it receives to a
// function, one at a time: a connection's next message is not read before
// the function returned for the one before, and no two calls overlap. The
// Keeper reads the dead_letter address of services with it. It only moves bytes: the function gets the
// frames as they arrived (ParseEnvelope reads them).
type inbox struct {
	p  *zmtp.Puller
	mu sync.Mutex // one call of fn at a time
}

// listenInbox binds addr (tcp://host:port, port 0 for one the system picks, or
// ipc:///path) as a PULL socket and calls fn with the frames of each
// message received, up to DefaultMaxMessageBytes (a larger one closes its
// connection and is logged). fn returning false closes the connection the
// message came on. Close stops it.
func listenInbox(addr string, fn func(ctx context.Context, frames [][]byte) bool, log *slog.Logger) (*inbox, error) {
	network, address, err := parseAddr(addr, true)
	if err != nil {
		return nil, fmt.Errorf("zeromq: inbox: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	box := &inbox{}
	p, err := zmtp.StartPuller(zmtp.PullConfig{
		Network: network, Address: address, Endpoint: addr,
		Limit: DefaultMaxMessageBytes, Keep: FrameCount + 1, Lead: maxLeadingBytes,
		MaxConnections: DefaultMaxConnections, Hint: "too many services push to this address",
		Clock: clock.System{}, Log: log,
		Deliver: func(ctx context.Context, frames [][]byte, _ string, _ int64) bool {
			box.mu.Lock()
			defer box.mu.Unlock()
			return fn(ctx, frames)
		},
		TooLarge: func(peer string, err error) {
			log.Error("zeromq: inbox: a message is too large; its connection is closed", "endpoint", addr, "peer", peer, "err", err)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("zeromq: inbox: bind %s: %w", addr, err)
	}
	box.p = p
	return box, nil
}

// Addr is the endpoint the inbox is bound at, with the port the system
// picked for port 0.
func (in *inbox) Addr() string { return zmtp.Endpoint(in.p.Addr()) }

// Close stops receiving and returns once fn is no longer called.
func (in *inbox) Close() { in.p.Stop() }

// outlet is a PUSH socket that dials one address and sends envelopes to
// it, as a service sends to a queue declared with Bind.
type outlet struct {
	p    *zmtp.Pusher
	addr string
}

// dialOutlet returns an outlet to addr (tcp://host:port or ipc:///path).
// It dials on the first Send.
func dialOutlet(addr string, log *slog.Logger) (*outlet, error) {
	network, address, err := parseAddr(addr, false)
	if err != nil {
		return nil, fmt.Errorf("zeromq: outlet: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	target := func() (string, string, error) { return network, address, nil }
	return &outlet{p: zmtp.NewPusher(addr, target, clock.System{}, log), addr: addr}, nil
}

// Send frames env and writes it; it returns once the message is in the
// kernel's send buffer, waiting (redialling) until the peer can be reached
// or ctx ends.
func (o *outlet) Send(ctx context.Context, env *Envelope) error {
	frames, err := env.Frames()
	if err != nil {
		return fmt.Errorf("zeromq: send to %s: %w", o.addr, err)
	}
	if err := o.p.Send(ctx, frames); err != nil {
		return fmt.Errorf("zeromq: send to %s: %w", o.addr, err)
	}
	return nil
}

// Close closes the connection, waiting until ctx ends for what is written
// to leave.
func (o *outlet) Close(ctx context.Context) error { return prefixed(o.p.Close(ctx)) }
