package demo

import (
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime"
)

func TestWriteSummary(t *testing.T) {
	var b strings.Builder
	err := WriteSummary(&b, []runtime.SubscriptionStats{
		{Subscription: "invoices", Delivered: 2, Acked: 1, Parked: 1},
		{Subscription: "invoices.dead", Delivered: 1, Acked: 1},
		{Subscription: "jobs", Delivered: 9, Acked: 2, Retried: 6, Dropped: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "" +
		"subscription   delivered  acked  retried  parked  dropped\n" +
		"invoices               2      1        0       1        0\n" +
		"invoices.dead          1      1        0       0        0\n" +
		"jobs                   9      2        6       0        1\n"
	if b.String() != want {
		t.Fatalf("summary:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestWriteSummaryAddsRejectedAndFailedWhenAny(t *testing.T) {
	var b strings.Builder
	if err := WriteSummary(&b, []runtime.SubscriptionStats{
		{Subscription: "a", Delivered: 3, Rejected: 1, Failed: 2},
		{Subscription: "b"},
	}); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"subscription  delivered  acked  retried  parked  dropped  rejected  failed\n" +
		"a                     3      0        0       0        0         1       2\n" +
		"b                     0      0        0       0        0         0       0\n"
	if b.String() != want {
		t.Fatalf("summary:\n%s\nwant:\n%s", b.String(), want)
	}
}
