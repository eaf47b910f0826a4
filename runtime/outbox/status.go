package outbox

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// Status is what an outbox holds: the messages committed and not yet
// confirmed by the broker.
type Status struct {
	// Backlog is how many messages it holds.
	Backlog int64
	// OldestAge is how long the oldest has waited, by the database's
	// clock; 0 when it holds none.
	OldestAge time.Duration
	// Routes are the routes it holds messages for, the one whose oldest
	// message is oldest first.
	Routes []RouteStatus
}

// RouteStatus is what an outbox holds for one route.
type RouteStatus struct {
	// Exchange is "" for a queue by name (the default exchange).
	Exchange string
	// Route is the queue, or the routing key on Exchange.
	Route     string
	Backlog   int64
	OldestAge time.Duration
}

// Status measures what the outbox holds, route by route: it counts the
// table's rows (a scan of the table).
func (o *Outbox) Status(ctx context.Context) (Status, error) {
	q := `SELECT exchange, route, count(*), EXTRACT(EPOCH FROM now() - min(created_at))::float8
FROM streamgen_outbox GROUP BY exchange, route ORDER BY min(id)`
	if o.dialect == SQLite {
		q = `SELECT exchange, route, count(*), (julianday('now') - julianday(min(created_at))) * 86400.0
FROM streamgen_outbox GROUP BY exchange, route ORDER BY min(id)`
	}
	// On SQLite a read can meet a commit in progress: it waits for it.
	var s Status
	err := o.whileBusy(ctx, func() error {
		var err error
		s, err = o.readStatus(ctx, q)
		return err
	})
	return s, err
}

// readStatus runs Status's query q.
func (o *Outbox) readStatus(ctx context.Context, q string) (Status, error) {
	rows, err := o.db.QueryContext(ctx, q)
	if err != nil {
		return Status{}, fmt.Errorf("outbox: status: %w", err)
	}
	defer rows.Close()
	var s Status
	for rows.Next() {
		var r RouteStatus
		var age float64
		if err := rows.Scan(&r.Exchange, &r.Route, &r.Backlog, &age); err != nil {
			return Status{}, fmt.Errorf("outbox: status: %w", err)
		}
		r.OldestAge = max(time.Duration(age*float64(time.Second)), 0)
		s.Backlog += r.Backlog
		s.OldestAge = max(s.OldestAge, r.OldestAge)
		s.Routes = append(s.Routes, r)
	}
	if err := rows.Err(); err != nil {
		return Status{}, fmt.Errorf("outbox: status: %w", err)
	}
	return s, nil
}

// WriteText writes s for a person: a line with the totals, then a table of
// the routes.
//
//	4,211 messages wait to be published; the oldest for 2m3s
//	ROUTE                                            MESSAGES  OLDEST
//	queue orders.received                            4,200     2m3s
//	exchange orders with routing key "order.placed"  11        1.2s
func (s Status) WriteText(w io.Writer) error {
	if s.Backlog == 0 {
		_, err := fmt.Fprintln(w, "no message waits to be published")
		return err
	}
	if _, err := fmt.Fprintf(w, "%s %s to be published; the oldest for %v\n", thousands(s.Backlog), plural(s.Backlog, "message waits", "messages wait"), roundAge(s.OldestAge)); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROUTE\tMESSAGES\tOLDEST")
	for _, r := range s.Routes {
		fmt.Fprintf(tw, "%s\t%s\t%v\n", describeRoute(r.Exchange, r.Route), thousands(r.Backlog), roundAge(r.OldestAge))
	}
	return tw.Flush()
}

// roundAge rounds an age for reading: to the millisecond under a second,
// the tenth of a second under a minute, the second above.
func roundAge(d time.Duration) time.Duration {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond)
	case d < time.Minute:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// thousands writes n with commas between groups of three digits.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// plural returns one when n is 1, else many.
func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
