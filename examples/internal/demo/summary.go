package demo

import (
	"fmt"
	"io"
	"strings"

	"github.com/streamgen/streamgen/runtime"
)

// WriteSummary writes the counters of each subscription as a table:
//
//	subscription    delivered  acked  retried  parked  dropped
//	invoices                2      1        0       1        0
//
// Columns for rejected messages and for verdicts that could not be carried
// out are added when a subscription has any.
func WriteSummary(w io.Writer, stats []runtime.SubscriptionStats) error {
	type column struct {
		title string
		value func(runtime.SubscriptionStats) int64
	}
	columns := []column{
		{"delivered", func(s runtime.SubscriptionStats) int64 { return s.Delivered }},
		{"acked", func(s runtime.SubscriptionStats) int64 { return s.Acked }},
		{"retried", func(s runtime.SubscriptionStats) int64 { return s.Retried }},
		{"parked", func(s runtime.SubscriptionStats) int64 { return s.Parked }},
		{"dropped", func(s runtime.SubscriptionStats) int64 { return s.Dropped }},
	}
	optional := []column{
		{"rejected", func(s runtime.SubscriptionStats) int64 { return s.Rejected }},
		{"failed", func(s runtime.SubscriptionStats) int64 { return s.Failed }},
	}
	for _, c := range optional {
		for _, s := range stats {
			if c.value(s) != 0 {
				columns = append(columns, c)
				break
			}
		}
	}
	width := len("subscription")
	for _, s := range stats {
		width = max(width, len(s.Subscription))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-*s", width, "subscription")
	for _, c := range columns {
		fmt.Fprintf(&b, "  %s", c.title)
	}
	b.WriteByte('\n')
	for _, s := range stats {
		fmt.Fprintf(&b, "%-*s", width, s.Subscription)
		for _, c := range columns {
			fmt.Fprintf(&b, "  %*d", len(c.title), c.value(s))
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
