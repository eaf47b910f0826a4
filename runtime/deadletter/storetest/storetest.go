package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime/deadletter"
)

// Fixture describes a kind of store to the suite.
type Fixture struct {
	// New returns a fresh, empty store and the means to park letters in
	// it and to read what its replays send. It registers with t.Cleanup
	// whatever must be undone after the case (queues to delete, sockets
	// and connections to close); the suite closes the Store itself. It is
	// called once per case.
	New func(t testing.TB) Instance
	// Timeout bounds each operation and each wait of a case (for a
	// replayed message to arrive, for a store to count its letters).
	// Default one minute.
	Timeout time.Duration
}

// Instance is one store made by Fixture.New.
type Instance struct {
	// Store is the store under test, empty.
	Store deadletter.Store
	// Park puts letters into the store, in their order, as its broker
	// parks a message: a RabbitMQ store publishes each into its
	// dead-letter queue with the letter's body, headers and properties; a
	// directory's keeper receives each from a service. It returns once
	// the store holds them all.
	Park func(ctx context.Context, letters ...*deadletter.Letter) error
	// Text says the broker carries a message as text: header values are
	// strings and header names lower case (ZeroMQ). The suite then parks
	// letters with text headers only, without line breaks or surrounding
	// white space in a value, and with the properties such a broker
	// carries: type, content type, message id, correlation id, reply-to,
	// app id, priority and timestamp. Otherwise (RabbitMQ) it also parks
	// header values of every type a Letter holds, and the content
	// encoding and delivery mode.
	Text bool
	// Targets are where the store's Replay can send, one of each kind it
	// takes (deadletter.TargetKinds) and none of another: at least one
	// that sends each letter to its source queue.
	Targets []Target
}

// Target is a place a replay sends to, and the means to read what
// arrived there. Each Target of an Instance is a place of its own: what
// is sent to one never arrives at another.
type Target struct {
	// To is the target given to Replay. When it names neither a queue nor
	// an exchange, it sends each letter to its source queue (with an
	// Address, to the source queue at that address): the suite parks
	// letters for it with Queue as their source.
	To deadletter.Target
	// Queue is the queue the messages replayed to To arrive at.
	Queue string
	// Arrived returns every message that arrived at To so far, oldest
	// first, each time it is called: as letters (body, headers,
	// properties; no explanation), with the queue each was sent to (the
	// queue read, or the queue its framing names).
	Arrived func(ctx context.Context) ([]Arrival, error)
}

// Arrival is a message a replay sent, as it arrived at a Target.
type Arrival struct {
	// Queue is the queue the message was sent to.
	Queue string
	// Message is the message: its body, headers and properties.
	Message *deadletter.Letter
}

// sourced reports whether t sends each letter to its source queue.
func (t Target) sourced() bool { return t.To.Queue == "" && t.To.Exchange == "" }

// String names t in a failure.
func (t Target) String() string { return fmt.Sprintf("%s (arriving at %s)", t.To, t.Queue) }

// Run runs every case of the suite against f, each as a subtest.
func Run(t *testing.T, f Fixture) {
	t.Helper()
	if f.New == nil {
		t.Fatal("storetest: Fixture.New is nil")
	}
	if f.Timeout <= 0 {
		f.Timeout = time.Minute
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, f) })
	}
}

// testCase is one case of the suite. It takes a testing.TB so that the
// suite's own tests can run it against a broken store and see it fail.
type testCase struct {
	name string
	run  func(t testing.TB, f Fixture)
}
