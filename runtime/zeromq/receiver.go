package zeromq

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/streamgen/streamgen/runtime/clock"
	"github.com/streamgen/streamgen/runtime/zeromq/internal/zmtp"
)

// inbound is one message read from a connection, not yet parsed, and
// the bytes it holds of the subscription's in-flight bound, which the
// worker gives back once it is handled (receiver.release).
type inbound struct {
	frames  [][]byte
	peer    string
	charged int64
}

// receiver is the PULL side of a subscription: it binds (Bind) or dials a
// ventilator (Dial), reads messages from every connection and puts them on
// out. stop closes every connection and returns once nothing more will be
// put on out.
type receiver struct {
	sub string
	q   *queueConfig
	out chan<- inbound
	log *slog.Logger
	cfg zmtp.PullConfig
	p   *zmtp.Puller // once started
	// budget bounds the bytes of the messages read from every connection
	// and not yet handled (MaxInFlightBytes).
	budget *zmtp.Budget
}

// newReceiver returns the receiver of subscription sub on queue q: messages
// up to limit bytes go to out, larger ones to tooLarge (their connection is
// then closed). The messages read and not yet released hold at most
// inFlight bytes together.
func newReceiver(sub string, q *queueConfig, limit, inFlight int64, out chan<- inbound, clock clock.Clock, log *slog.Logger, tooLarge func(string, error)) *receiver {
	r := &receiver{sub: sub, q: q, out: out, log: log, budget: zmtp.NewBudget(inFlight)}
	r.cfg = zmtp.PullConfig{
		Network: q.network, Address: q.address, Endpoint: q.ep.addr, Dial: q.ep.role == roleDial,
		Limit: limit, Keep: FrameCount + 1, Budget: r.budget, Lead: maxLeadingBytes,
		MaxConnections: q.connectionLimit(), Hint: "raise it with zeromq.MaxConnections",
		Clock: clock, Log: log,
		Deliver:  r.deliver,
		TooLarge: tooLarge,
	}
	return r
}

// deliver puts a message on out, waiting for room until ctx ends.
func (r *receiver) deliver(ctx context.Context, frames [][]byte, peer string, charged int64) bool {
	select {
	case r.out <- inbound{frames: frames, peer: peer, charged: charged}:
		return true
	case <-ctx.Done():
		return false
	}
}

// start binds the queue's endpoint, or starts dialling the ventilator.
func (r *receiver) start() error {
	p, err := zmtp.StartPuller(r.cfg)
	if err != nil {
		return fmt.Errorf("zeromq: subscription %q: bind %s: %w", r.sub, r.q.ep.addr, err)
	}
	r.p = p
	if a := p.Addr(); a != nil {
		r.log.Info("zeromq: queue bound", "endpoint", zmtp.Endpoint(a))
	}
	return nil
}

// connections returns how many peers are connected (handshake done).
func (r *receiver) connections() int {
	if r.p == nil {
		return 0
	}
	return r.p.Connections()
}

// addr is the bound address, or nil for a dialing receiver.
func (r *receiver) addr() net.Addr {
	if r.p == nil {
		return nil
	}
	return r.p.Addr()
}

// release gives back the bytes a message held of the in-flight bound,
// once it is handled: a connection waiting for room may read on.
func (r *receiver) release(in inbound) { r.budget.Release(in.charged) }

// stop stops receiving: it closes the listener and every connection, and
// returns once no goroutine of the receiver runs.
func (r *receiver) stop() {
	if r.p != nil {
		r.p.Stop()
	}
}
