package counters_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime/internal/counters"
)

// A subscription's counters are made once, per broker and name, and the
// snapshot reads each of them.
func TestMetricsCountPerSubscription(t *testing.T) {
	m := counters.NewSet()
	jobs := m.Subscription("zeromq", "jobs")
	jobs.Delivered.Add(5)
	jobs.Retried.Add(4)
	jobs.Dropped.Add(1)
	orders := m.Subscription("rabbitmq", "orders")
	orders.Delivered.Add(3)
	orders.Acked.Add(1)
	orders.Parked.Add(1)
	orders.Rejected.Add(1)
	orders.Failed.Add(2)
	if m.Subscription("zeromq", "jobs") != jobs {
		t.Fatal("Subscription made new counters for a known subscription")
	}
	if m.Subscription("rabbitmq", "jobs") == jobs {
		t.Fatal("Subscription shared the counters of one name on two brokers")
	}
	want := []counters.Stats{
		{Broker: "rabbitmq", Subscription: "jobs"},
		{Broker: "rabbitmq", Subscription: "orders", Delivered: 3, Acked: 1, Parked: 1, Rejected: 1, Failed: 2},
		{Broker: "zeromq", Subscription: "jobs", Delivered: 5, Retried: 4, Dropped: 1},
	}
	if got := m.Snapshot(); !slices.Equal(got, want) {
		t.Errorf("Snapshot\n%+v\nwant\n%+v", got, want)
	}
}

func TestMetricsSnapshotIsSorted(t *testing.T) {
	m := counters.NewSet()
	m.Subscription("zeromq", "b").Acked.Add(2)
	m.Subscription("zeromq", "a")
	m.Subscription("rabbitmq", "z").Delivered.Add(1)
	got := m.Snapshot()
	if len(got) != 3 {
		t.Fatalf("%d entries", len(got))
	}
	order := []string{got[0].Broker + "/" + got[0].Subscription, got[1].Broker + "/" + got[1].Subscription, got[2].Broker + "/" + got[2].Subscription}
	if strings.Join(order, " ") != "rabbitmq/z zeromq/a zeromq/b" {
		t.Errorf("order %v", order)
	}
	if got[2].Acked != 2 || got[0].Delivered != 1 {
		t.Errorf("snapshot %+v", got)
	}
}
