package runtime

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
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

// Metrics holds the counters of every subscription of an App. It serves
// them over HTTP in the Prometheus text format (ServeHTTP), and Snapshot
// returns them for any other exporter.
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

// WritePrometheus writes the counters in the Prometheus text exposition
// format: streamgen_deliveries_total and streamgen_settled_total, labelled
// by broker, subscription and (for settled) outcome.
func (m *Metrics) WritePrometheus(w io.Writer) error {
	var b strings.Builder
	stats := m.Snapshot()
	b.WriteString("# HELP streamgen_deliveries_total Deliveries received, poison included.\n")
	b.WriteString("# TYPE streamgen_deliveries_total counter\n")
	for _, s := range stats {
		fmt.Fprintf(&b, "streamgen_deliveries_total{broker=\"%s\",subscription=\"%s\"} %d\n", labelValue(string(s.Broker)), labelValue(s.Subscription), s.Delivered)
	}
	b.WriteString("# HELP streamgen_settled_total Deliveries settled, by outcome.\n")
	b.WriteString("# TYPE streamgen_settled_total counter\n")
	for _, s := range stats {
		broker, sub := labelValue(string(s.Broker)), labelValue(s.Subscription)
		for _, o := range []struct {
			name string
			n    int64
		}{{"acked", s.Acked}, {"retried", s.Retried}, {"parked", s.Parked}, {"rejected", s.Rejected}, {"dropped", s.Dropped}, {"failed", s.Failed}} {
			fmt.Fprintf(&b, "streamgen_settled_total{broker=\"%s\",subscription=\"%s\",outcome=\"%s\"} %d\n", broker, sub, o.name, o.n)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// labelValue returns v escaped for a label value between double quotes, as
// the text exposition format asks: a backslash, a double quote and a line
// feed are written \\, \" and \n, and every other character, a tab or a
// carriage return included, stands as it is. Each run of bytes that is not
// valid UTF-8 becomes U+FFFD, since the format allows only UTF-8.
func labelValue(v string) string {
	v = strings.ToValidUTF8(v, "\uFFFD")
	if !strings.ContainsAny(v, "\\\"\n") {
		return v
	}
	var b strings.Builder
	b.Grow(len(v) + 8)
	for _, r := range v {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// ServeHTTP serves the counters in the Prometheus text format.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_ = m.WritePrometheus(w)
}
