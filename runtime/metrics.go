package runtime

import (
	"sort"
	"sync"
	"sync/atomic"
)

// SubscriptionMetrics counts what happened to one subscription's deliveries.
type SubscriptionMetrics struct {
	// Delivered counts deliveries received, poison included.
	Delivered atomic.Int64
	// Acked counts messages handled successfully.
	Acked atomic.Int64
	// Retried counts retry copies sent.
	Retried atomic.Int64
	// Parked counts messages published to a dead-letter queue.
	Parked atomic.Int64
	// Rejected counts messages handed back to the broker without requeue.
	Rejected atomic.Int64
	// Dropped counts messages acknowledged and forgotten.
	Dropped atomic.Int64
	// Failed counts verdicts the adapter could not carry out (the broker
	// then redelivers, or the message was nacked).
	Failed atomic.Int64
}

// SubscriptionStats is a snapshot of one subscription's counters.
type SubscriptionStats struct {
	Broker       BrokerKind
	Subscription string
	Delivered    int64
	Acked        int64
	Retried      int64
	Parked       int64
	Rejected     int64
	Dropped      int64
	Failed       int64
}

type metricsKey struct {
	broker BrokerKind
	name   string
}

// Metrics holds the counters of every subscription of an App, in process:
// Snapshot returns them, for a test, a demo or a log line. To export
// metrics, give the App an Observer: runtime/promstream serves Prometheus,
// runtime/otelstream OpenTelemetry.
type Metrics struct {
	mu   sync.Mutex
	subs map[metricsKey]*SubscriptionMetrics
}

// NewMetrics returns empty metrics.
func NewMetrics() *Metrics {
	return &Metrics{subs: map[metricsKey]*SubscriptionMetrics{}}
}

// Subscription returns the counters of a subscription, creating them.
func (m *Metrics) Subscription(broker BrokerKind, name string) *SubscriptionMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := metricsKey{broker, name}
	s := m.subs[k]
	if s == nil {
		s = &SubscriptionMetrics{}
		m.subs[k] = s
	}
	return s
}

// Snapshot returns every subscription's counters, sorted by broker and name.
func (m *Metrics) Snapshot() []SubscriptionStats {
	m.mu.Lock()
	out := make([]SubscriptionStats, 0, len(m.subs))
	for k, s := range m.subs {
		out = append(out, SubscriptionStats{
			Broker: k.broker, Subscription: k.name,
			Delivered: s.Delivered.Load(), Acked: s.Acked.Load(), Retried: s.Retried.Load(),
			Parked: s.Parked.Load(), Rejected: s.Rejected.Load(), Dropped: s.Dropped.Load(), Failed: s.Failed.Load(),
		})
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Broker != out[j].Broker {
			return out[i].Broker < out[j].Broker
		}
		return out[i].Subscription < out[j].Subscription
	})
	return out
}
