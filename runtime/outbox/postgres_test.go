package outbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/dbtest"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/outbox"
)

// On PostgreSQL a commit wakes a relay at once (LISTEN), without polling,
// and a relay whose listening connection is cut listens again.
func TestRelayWakesOnCommit(t *testing.T) {
	db := dbtest.Postgres(t)
	ob := open(t, db, outbox.WithPollInterval(time.Hour))
	b := newAsyncBroker(t)
	runRelay(t, ob.Relay(b))
	listening := func() int {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN streamgen_outbox'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	testkit.Eventually(t, "the relay to listen", func() bool { return listening() == 1 })
	commit(t, db, ob, false, msgs("orders", "o", 2)...)
	testkit.Eventually(t, "the commit to wake the relay", func() bool { return len(b.confirmedIDs()) == 2 })

	if _, err := db.Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN streamgen_outbox'`); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the relay to listen again", func() bool { return listening() == 1 })
	commit(t, db, ob, false, msgs("orders", "p", 1)...)
	testkit.Eventually(t, "the commit to wake the relay", func() bool { return len(b.confirmedIDs()) == 3 })
}

// Relays running side by side on one PostgreSQL database share the
// routes: while producers commit, every message is published exactly
// once (nothing fails), each route in commit order, though four relays
// take turns on it.
func TestRelaysShareTheRoutes(t *testing.T) {
	db := dbtest.Postgres(t)
	db.SetMaxOpenConns(40)
	ob := open(t, db, outbox.WithPollInterval(5*time.Millisecond), outbox.WithBatchSize(20))
	b := newAsyncBroker(t) // shared: it records in the order messages are sent
	var sent [4]atomic.Int64
	for i := range sent {
		runRelay(t, ob.Relay(countingPublisher{b, &sent[i]}))
	}
	const producers, txs, routes = 4, 60, 3
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range txs {
				var ms [][2]string
				for r := range routes {
					for k := range 1 + (i+r)%3 {
						ms = append(ms, [2]string{fmt.Sprintf("p%d-r%d", p, r), fmt.Sprintf("p%d-r%d-%04d-%d", p, r, i, k)})
					}
				}
				if err := commitTx(context.Background(), db, ob, i%7 == 3, ms...); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	want := 0
	for i := range txs {
		if i%7 != 3 {
			for r := range routes {
				want += producers * (1 + (i+r)%3)
			}
		}
	}
	testkit.Eventually(t, "every message to be published", func() bool { return len(b.confirmedIDs()) >= want && rowsLeft(t, db) == 0 })
	got := byRoute(b.published())
	total := 0
	for route, ids := range got {
		total += len(ids)
		if !slices.IsSorted(ids) {
			t.Errorf("route %s out of order: %v", route, ids)
		}
		if len(slices.Compact(slices.Clone(ids))) != len(ids) {
			t.Errorf("route %s: a message published twice: %v", route, ids)
		}
		for _, id := range ids {
			if n, _ := strconv.Atoi(strings.Split(id, "-")[2]); n%7 == 3 {
				t.Errorf("%s of a rolled-back transaction was published", id)
			}
		}
	}
	if total != want || len(got) != producers*routes {
		t.Errorf("%d messages on %d routes, want %d on %d", total, len(got), want, producers*routes)
	}
	working := 0
	for i := range sent {
		if sent[i].Load() > 0 {
			working++
		}
	}
	if working < 2 {
		t.Errorf("%d of 4 relays published: the work was not shared", working)
	}
}

// countingPublisher counts the messages a relay sends through an
// asyncBroker.
type countingPublisher struct {
	asyncBroker
	n *atomic.Int64
}

func (p countingPublisher) PublishAsync(ctx context.Context, queue string, m runtime.Message, done func(error)) {
	p.n.Add(1)
	p.asyncBroker.PublishAsync(ctx, queue, m, done)
}

// Status counts what waits, route by route, and says for how long; its
// text names each route.
func TestStatus(t *testing.T) {
	databases(t, func(t *testing.T, db *sql.DB) {
		ctx := context.Background()
		ob := open(t, db)
		st, err := ob.Status(ctx)
		if err != nil || st.Backlog != 0 || st.OldestAge != 0 || len(st.Routes) != 0 {
			t.Fatalf("empty: %+v, %v", st, err)
		}
		var text strings.Builder
		if err := st.WriteText(&text); err != nil || text.String() != "no message waits to be published\n" {
			t.Errorf("empty text %q, %v", text.String(), err)
		}
		commit(t, db, ob, false, msgs("orders", "o", 1200)...)
		time.Sleep(50 * time.Millisecond)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := runtime.Publish(ctx, ob.Tx(tx), runtime.Exchange("events", "invoice.paid"), "InvoicePaid", order{ID: 1}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		st, err = ob.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Backlog != 1201 || len(st.Routes) != 2 || st.Routes[0].Route != "orders" || st.Routes[0].Backlog != 1200 ||
			st.Routes[1].Exchange != "events" || st.Routes[1].Route != "invoice.paid" || st.Routes[1].Backlog != 1 {
			t.Fatalf("status %+v", st)
		}
		if st.OldestAge < 50*time.Millisecond || st.OldestAge > time.Minute || st.OldestAge != st.Routes[0].OldestAge || st.Routes[1].OldestAge >= st.OldestAge {
			t.Errorf("ages: %v, routes %v and %v", st.OldestAge, st.Routes[0].OldestAge, st.Routes[1].OldestAge)
		}
		text.Reset()
		if err := st.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(text.String()), "\n")
		if len(lines) != 4 || !strings.HasPrefix(lines[0], "1,201 messages wait to be published; the oldest for ") ||
			!strings.HasPrefix(lines[1], "ROUTE ") || !strings.HasPrefix(lines[2], "queue orders ") || !strings.Contains(lines[2], " 1,200 ") ||
			!strings.HasPrefix(lines[3], `exchange events with routing key "invoice.paid" `) {
			t.Errorf("text:\n%s", text.String())
		}
	})
}
