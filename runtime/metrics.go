package runtime

// SubscriptionStats is a snapshot of one subscription's counters.
type SubscriptionStats struct {
	Broker       BrokerKind
	Subscription string
	Delivered    int64
	Acked        int64
	// Duplicates counts, among Acked, the messages acknowledged without
	// calling their *sql.Tx handler: the inbox had recorded them as
	// handled on an earlier delivery (see Transactor).
	Duplicates int64
	Retried    int64
	Parked     int64
	Rejected   int64
	Dropped    int64
	Failed     int64
	// Released counts deliveries handed back before any handler took
	// them (RabbitMQ), to be delivered again: at shutdown, and, on a
	// classic queue, a message that came back after its worker died,
	// set aside on the suspect queue to run alone.
	Released int64
}

// Stats returns the counters of every subscription of the App, sorted by
// broker and name: what became of their deliveries, in process, for a
// test, a demo or a log line. To export metrics, give the App an
// Observer: runtime/promstream serves Prometheus, runtime/otelstream
// OpenTelemetry.
func (a *App) Stats() []SubscriptionStats {
	snap := a.metrics.Snapshot()
	out := make([]SubscriptionStats, len(snap))
	for i, s := range snap {
		out[i] = SubscriptionStats{
			Broker: BrokerKind(s.Broker), Subscription: s.Subscription,
			Delivered: s.Delivered, Acked: s.Acked, Duplicates: s.Duplicates, Retried: s.Retried,
			Parked: s.Parked, Rejected: s.Rejected, Dropped: s.Dropped, Failed: s.Failed, Released: s.Released,
		}
	}
	return out
}
