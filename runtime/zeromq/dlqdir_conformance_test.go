package zeromq_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/deadletter/storetest"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// A keeper's directory passes the store conformance suite: its letters
// come from a Keeper, pushed to it as a service pushes a dead letter, and
// its replays go to PULL sockets bound at an address of their own.
func TestDeadLetterDirConformance(t *testing.T) {
	testkit.NoLeaks(t)
	storetest.Run(t, storetest.Fixture{New: dirInstance})
}

// dirInstance is a fresh directory with a Keeper running on it, and two
// targets: the letters' source queue at one address, the queue
// orders.retry at another.
func dirInstance(t testing.TB) storetest.Instance {
	dir, err := zeromq.OpenDeadLetterDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	k := &zeromq.Keeper{Bind: "tcp://127.0.0.1:0", Dir: dir}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	select {
	case <-k.Ready():
	case err := <-done:
		stop()
		t.Fatalf("the keeper did not start: %v", err)
	}
	out, err := zeromq.DialOutlet(k.Addr())
	if err != nil {
		stop()
		<-done
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = out.Close(cctx)
		stop()
		if err := <-done; err != nil {
			t.Errorf("keeper: %v", err)
		}
	})
	source, retry := bindReplayTarget(t), bindReplayTarget(t)
	return storetest.Instance{
		Store: dir,
		Park: func(ctx context.Context, letters ...*deadletter.Letter) error {
			before, err := dir.Len(ctx)
			if err != nil {
				return err
			}
			for _, l := range letters {
				env, err := zeromq.LetterEnvelope("orders.dead", l)
				if err != nil {
					return err
				}
				if err := out.Send(ctx, env); err != nil {
					return err
				}
			}
			for {
				n, err := dir.Len(ctx)
				if err != nil || n == before+len(letters) {
					return err
				}
				if err := deadletter.Sleep(ctx, 50*time.Millisecond); err != nil {
					return fmt.Errorf("the keeper kept %d of %d letters: %w", n-before, len(letters), err)
				}
			}
		},
		Text: true,
		Targets: []storetest.Target{
			{To: deadletter.Target{Address: source.addr}, Queue: "orders", Arrived: source.arrived},
			{To: deadletter.Target{Address: retry.addr, Queue: "orders.retry"}, Queue: "orders.retry", Arrived: retry.arrived},
		},
	}
}

// replayTarget is a PULL socket (zmq4's, not this package's) bound at addr,
// reading what a replay pushes.
type replayTarget struct {
	addr string

	mu   sync.Mutex
	got  []storetest.Arrival
	errs []error
}

// bindReplayTarget binds a PULL socket at a free address until t ends.
func bindReplayTarget(t testing.TB) *replayTarget {
	p := &replayTarget{addr: freeEndpoint(t)}
	ctx, cancel := context.WithCancel(context.Background())
	s := zmq4.NewPull(ctx)
	if err := s.Listen(p.addr); err != nil {
		cancel()
		t.Fatalf("bind a PULL at %s: %v", p.addr, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			msg, err := s.Recv()
			if err != nil {
				return // closed
			}
			env, err := zeromq.ParseEnvelope(msg.Frames)
			p.mu.Lock()
			if err != nil {
				p.errs = append(p.errs, err)
			} else {
				p.got = append(p.got, storetest.Arrival{Queue: env.Subscription, Message: envelopeLetter(env)})
			}
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		_ = s.Close()
		<-done
	})
	return p
}

// arrived is what p received so far; it fails once p received a message
// that is not in streamgen's framing.
func (p *replayTarget) arrived(context.Context) ([]storetest.Arrival, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.got), errors.Join(p.errs...)
}

// envelopeLetter reads a message pushed in streamgen's framing as a
// subscription does: the property headers as its properties, the others
// as its headers.
func envelopeLetter(env *zeromq.Envelope) *deadletter.Letter {
	l := &deadletter.Letter{Body: env.Body, Headers: map[string]any{}}
	p := &l.Properties
	for _, h := range env.Headers {
		switch h.Name {
		case zeromq.HeaderType:
			p.Type = h.Value
		case zeromq.HeaderContentType:
			p.ContentType = h.Value
		case zeromq.HeaderMessageID:
			p.MessageID = h.Value
		case zeromq.HeaderCorrelationID:
			p.CorrelationID = h.Value
		case zeromq.HeaderReplyTo:
			p.ReplyTo = h.Value
		case zeromq.HeaderAppID:
			p.AppID = h.Value
		case zeromq.HeaderPriority:
			n, _ := strconv.Atoi(h.Value)
			p.Priority = uint8(n)
		case zeromq.HeaderTimestamp:
			p.Timestamp, _ = time.Parse(time.RFC3339Nano, h.Value)
		default:
			l.Headers[h.Name] = h.Value
		}
	}
	return l
}
