// Package counters holds the in-process counters of an App's
// subscriptions: the Consumer counts what becomes of each delivery, and
// App.Stats reads them.
package counters

import (
	"sort"
	"sync"
	"sync/atomic"
)

// Subscription counts what happened to one subscription's deliveries.
type Subscription struct {
	// Delivered counts deliveries received, poison included.
	Delivered atomic.Int64
	// Acked counts messages handled successfully.
	Acked atomic.Int64
	// Duplicates counts, among Acked, the messages acknowledged without
	// calling their *sql.Tx handler, whose inbox recorded them as handled
	// on an earlier delivery.
	Duplicates atomic.Int64
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
	// Released counts deliveries handed back before any handler took
	// them, to be delivered again: at shutdown, or set aside on a
	// suspect queue after their worker died.
	Released atomic.Int64
}

// Stats is a snapshot of one subscription's counters.
type Stats struct {
	Broker       string
	Subscription string
	Delivered    int64
	Acked        int64
	Duplicates   int64
	Retried      int64
	Parked       int64
	Rejected     int64
	Dropped      int64
	Failed       int64
	Released     int64
}

type key struct {
	broker, name string
}

// Set holds the counters of every subscription of an App.
type Set struct {
	mu   sync.Mutex
	subs map[key]*Subscription
}

// NewSet returns empty counters.
func NewSet() *Set {
	return &Set{subs: map[key]*Subscription{}}
}

// Subscription returns the counters of a subscription on a broker,
// creating them.
func (m *Set) Subscription(broker, name string) *Subscription {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := key{broker, name}
	s := m.subs[k]
	if s == nil {
		s = &Subscription{}
		m.subs[k] = s
	}
	return s
}

// Snapshot returns every subscription's counters, sorted by broker and name.
func (m *Set) Snapshot() []Stats {
	m.mu.Lock()
	out := make([]Stats, 0, len(m.subs))
	for k, s := range m.subs {
		out = append(out, Stats{
			Broker: k.broker, Subscription: k.name,
			Delivered: s.Delivered.Load(), Acked: s.Acked.Load(), Duplicates: s.Duplicates.Load(), Retried: s.Retried.Load(),
			Parked: s.Parked.Load(), Rejected: s.Rejected.Load(), Dropped: s.Dropped.Load(), Failed: s.Failed.Load(), Released: s.Released.Load(),
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
