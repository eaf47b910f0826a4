package brokertest

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
	"github.com/streamgen/streamgen/runtime/clock"
)

// Broker is what a transport under test provides: a runtime.Broker that is
// also a runtime.Publisher.
type Broker interface {
	runtime.Broker
	runtime.Publisher
}

// Transport describes a transport to the suite. See the package
// documentation for the contract each field carries.
type Transport struct {
	// Kind is the kind of broker; the suite writes its subscriptions for it
	// (runtime.RabbitMQ or runtime.ZeroMQ).
	Kind runtime.BrokerKind
	// New returns a fresh broker that has not been started, serving the
	// named queues (RabbitMQ) or subscriptions (ZeroMQ). It registers with
	// t.Cleanup whatever must be undone after the test (queues to delete,
	// connections to close). It is called once per case.
	New func(t testing.TB, queues []string) Instance
	// RetryDelay is the delay of every retry the suite asks for. Default
	// 100ms; keep it between 50 and 200 ms for a real broker.
	RetryDelay time.Duration
	// Timeout bounds, in real time, each wait for something to happen.
	// Default 30s.
	Timeout time.Duration
	// RetryCountHeader is the header in which the brokers New makes carry
	// the retry count (zeromq.WithRetryCountHeader, say); "" means
	// runtime.RetryCountHeader.
	RetryCountHeader string
	// Redeliver (RabbitMQ; required) puts msgs in the named queue of inst
	// as the messages a worker held when it died come back: redelivered,
	// and counted as returned once where the queue counts returns. The
	// suite calls it before it starts the App, for a queue whose
	// subscription has no dead-letter queue and no queue type, so a
	// queue that does not exist yet is declared durable, with no
	// arguments. It fails t when it cannot.
	Redeliver func(t testing.TB, inst Instance, queue string, msgs []runtime.Message)
	// DelayedRetry (RabbitMQ) says that the broker's quorum queues wait
	// out a retry themselves (RabbitMQ 4.3 and later, or the harness
	// emulating it: streamtest.RabbitMQVersion), so that a quorum
	// subscription retries through its queue rather than a wait queue.
	DelayedRetry bool
}

// retryCountHeader is the retry count header as a handler sees it.
func (tr Transport) retryCountHeader() string {
	return adapter.Rules{Kind: tr.Kind, RetryCountHeader: tr.RetryCountHeader}.RetryCountHeaderName()
}

// Instance is one broker made by Transport.New, and how time passes for it.
type Instance struct {
	// Broker is the broker under test.
	Broker Broker
	// Clock is the clock the suite's App runs with (runtime.WithClock). Nil
	// means the wall clock.
	Clock clock.Clock
	// Pass lets d pass for the broker: a fake clock advances by d (and
	// returns when the broker is idle again); nil means real time, which
	// passes by itself while the suite polls.
	Pass func(t testing.TB, d time.Duration)
}

// Run runs every case of the suite against tr, each as a subtest.
func Run(t *testing.T, tr Transport) {
	t.Helper()
	checkTransport(t, tr)
	tr = tr.withDefaults()
	all := slices.Concat(cases, batchCases)
	if tr.Kind == runtime.RabbitMQ {
		all = append(all, rabbitCases...)
	}
	for _, c := range all {
		t.Run(c.name, func(t *testing.T) { c.run(t, tr) })
	}
}

func checkTransport(t testing.TB, tr Transport) {
	t.Helper()
	if tr.New == nil {
		t.Fatal("brokertest: Transport.New is nil")
	}
	if tr.Kind != runtime.RabbitMQ && tr.Kind != runtime.ZeroMQ {
		t.Fatalf("brokertest: Transport.Kind is %q: use runtime.RabbitMQ or runtime.ZeroMQ", tr.Kind)
	}
	if tr.Kind == runtime.RabbitMQ && tr.Redeliver == nil {
		t.Fatal("brokertest: Transport.Redeliver is nil: a RabbitMQ transport must hand messages back as a worker that died leaves them, for the suite to check that each runs alone")
	}
}

func (tr Transport) withDefaults() Transport {
	if tr.RetryDelay <= 0 {
		tr.RetryDelay = 100 * time.Millisecond
	}
	if tr.Timeout <= 0 {
		tr.Timeout = 30 * time.Second
	}
	return tr
}

// uniqueName returns a queue name unique to this run: the prefix, the
// case's name and a random suffix.
func uniqueName(t testing.TB) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+).
	base := t.Name()
	if i := strings.LastIndex(base, "/"); i >= 0 {
		base = base[i+1:]
	}
	var s strings.Builder
	for _, r := range strings.ToLower(base) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			s.WriteRune(r)
		}
	}
	name := s.String()
	if len(name) > 24 {
		name = name[:24]
	}
	return "brokertest." + name + "." + hex.EncodeToString(b[:])
}
