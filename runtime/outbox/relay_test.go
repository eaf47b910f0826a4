package outbox_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/dbtest"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/observe"
	"github.com/streamgen/streamgen/runtime/outbox"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// A rolled-back transaction's messages are never published; a committed
// one's are published once, with everything Tx was given, and removed.
func TestRelayPublishesCommittedMessagesOnce(t *testing.T) {
	databases(t, func(t *testing.T, db *sql.DB) {
		ctx := context.Background()
		ob := open(t, db)
		b := newAsyncBroker(t)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		ts := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
		if err := runtime.Publish(ctx, ob.Tx(tx), runtime.Exchange("events", "order.placed"), "OrderPlaced", order{ID: 7},
			runtime.WithMessageID("m-1"), runtime.WithHeader("tenant", "acme"), runtime.AllowUnroutable(),
			runtime.WithProperties(runtime.Properties{CorrelationID: "c-1", ReplyTo: "replies", Priority: 4,
				Expiration: 90 * time.Second, Timestamp: ts, AppID: "orders"})); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		commit(t, db, ob, true, msgs("orders", "rolled-back", 3)...)
		commit(t, db, ob, false, msgs("orders", "o", 2)...)

		r := ob.Relay(b)
		n, err := r.Flush(ctx)
		if err != nil || n != 3 {
			t.Fatalf("Flush: %d, %v; want 3 published", n, err)
		}
		got := b.published()
		if len(got) != 3 {
			t.Fatalf("published %+v, want 3 messages", got)
		}
		want := runtime.Message{ID: "m-1", Type: "OrderPlaced", ContentType: "application/json", Headers: map[string]string{"tenant": "acme"},
			Body: []byte(`{"id":7}`), Exchange: "events", AllowUnroutable: true,
			Properties: runtime.Properties{CorrelationID: "c-1", ReplyTo: "replies", Priority: 4, Expiration: 90 * time.Second, Timestamp: ts, AppID: "orders"}}
		if m := got[0].msg; got[0].queue != "order.placed" || !equalMessages(m, want) {
			t.Errorf("published to %q %+v\nwant to %q %+v", got[0].queue, m, "order.placed", want)
		}
		if got[1].queue != "orders" || got[1].msg.ID != "o-1" || got[2].msg.ID != "o-2" || got[1].msg.Exchange != "" || got[1].msg.Headers != nil {
			t.Errorf("then %+v", got[1:])
		}
		if n := rowsLeft(t, db); n != 0 {
			t.Errorf("%d rows left, want the published ones removed", n)
		}
		if n, err := r.Flush(ctx); n != 0 || err != nil || len(b.published()) != 3 {
			t.Errorf("a second Flush: %d, %v, and %d published in all; want nothing more", n, err, len(b.published()))
		}
	})
}

func equalMessages(a, b runtime.Message) bool {
	return a.ID == b.ID && a.Type == b.Type && a.ContentType == b.ContentType && maps.Equal(a.Headers, b.Headers) &&
		bytes.Equal(a.Body, b.Body) && a.Exchange == b.Exchange && a.RoutingKey == b.RoutingKey &&
		a.AllowUnroutable == b.AllowUnroutable && a.Properties.Timestamp.Equal(b.Properties.Timestamp) &&
		a.CorrelationID == b.CorrelationID && a.ReplyTo == b.ReplyTo && a.Priority == b.Priority &&
		a.Expiration == b.Expiration && a.AppID == b.AppID
}

// errRefused is a broker's refusal in these tests.
var errRefused = errors.New("refused by the broker (publisher nack)")

// A failed publish stops its route there: the confirmed messages before it
// are removed, it and those after it stay, and the next try publishes it
// before any later one; another route goes on meanwhile. With a publisher
// that confirms one message at a time, nothing after the failed one is
// sent.
func TestAFailedPublishStopsItsRoute(t *testing.T) {
	databases(t, func(t *testing.T, db *sql.DB) {
		ctx := context.Background()
		ob := open(t, db)
		b := &fakeBroker{}
		refuse := true
		b.setFail(func(q string, m runtime.Message) error {
			if m.ID == "a-3" && refuse {
				return errRefused
			}
			return nil
		})
		commit(t, db, ob, false, append(msgs("a", "a", 5), msgs("b", "b", 3)...)...)
		r := ob.Relay(b)
		n, err := r.Flush(ctx)
		if !errors.Is(err, errRefused) || !strings.Contains(err.Error(), "publish message a-3") || !strings.Contains(err.Error(), "queue a") {
			t.Fatalf("Flush: %v, want the refusal of a-3", err)
		}
		if n != 5 {
			t.Errorf("Flush published %d, want a-1, a-2 and b's 3", n)
		}
		if got := byRoute(b.published()); !slices.Equal(got["a"], []string{"a-1", "a-2"}) || !slices.Equal(got["b"], idsOf(msgs("b", "b", 3))) {
			t.Errorf("confirmed %v", got)
		}
		if sent := len(b.published()); sent != 6 {
			t.Errorf("%d publishes, want 6: nothing of route a after a-3", sent)
		}
		if n := rowsLeft(t, db); n != 3 {
			t.Errorf("%d rows left, want a-3, a-4, a-5", n)
		}
		refuse = false
		if n, err := r.Flush(ctx); n != 3 || err != nil {
			t.Fatalf("Flush once the broker takes it: %d, %v", n, err)
		}
		if got := byRoute(b.published())["a"]; !slices.Equal(got, idsOf(msgs("a", "a", 5))) {
			t.Errorf("route a got %v, want a-1 to a-5 in order", got)
		}
	})
}

// With pipelined publishes, messages after a refused one may already be
// confirmed when the refusal is known: they stay, and are published again
// after the refused one, so that each message's last copy keeps the
// route's order.
func TestAPipelinedRouteRepublishesAfterAFailure(t *testing.T) {
	databases(t, func(t *testing.T, db *sql.DB) {
		ctx := context.Background()
		ob := open(t, db)
		b := newAsyncBroker(t)
		refuse := true
		b.setFail(func(q string, m runtime.Message) error {
			if m.ID == "a-3" && refuse {
				return errRefused
			}
			return nil
		})
		commit(t, db, ob, false, msgs("a", "a", 5)...)
		r := ob.Relay(b)
		if _, err := r.Flush(ctx); !errors.Is(err, errRefused) {
			t.Fatalf("Flush: %v", err)
		}
		if n := rowsLeft(t, db); n != 3 {
			t.Errorf("%d rows left, want a-3, a-4, a-5 whatever was confirmed after a-3", n)
		}
		refuse = false
		if _, err := r.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		got := b.confirmedIDs()
		if !slices.Equal(got[len(got)-3:], []string{"a-3", "a-4", "a-5"}) || !slices.Equal(got[:2], []string{"a-1", "a-2"}) {
			t.Errorf("confirmed %v, want a-1, a-2, then whatever, then a-3, a-4, a-5", got)
		}
		if n := rowsLeft(t, db); n != 0 {
			t.Errorf("%d rows left", n)
		}
	})
}

// A running relay publishes what is committed, keeps a route that fails
// waiting (logged, in its report) while other routes go on, and publishes
// it once the broker takes it again.
func TestRunningRelayRetriesAFailingRoute(t *testing.T) {
	databases(t, func(t *testing.T, db *sql.DB) {
		logs := streamtest.NewLogRecorder(nil)
		ob := open(t, db, outbox.WithLogger(logs.Logger()), outbox.WithPollInterval(20*time.Millisecond),
			outbox.WithRetryBackoff(20*time.Millisecond, 100*time.Millisecond))
		b := newAsyncBroker(t)
		b.setFail(func(q string, m runtime.Message) error {
			if q == "missing" {
				return errors.New(`rabbitmq: publish OrderPlaced to "missing": message returned as unroutable: there is no queue "missing"`)
			}
			return nil
		})
		r := ob.Relay(b)
		runRelay(t, r)
		commit(t, db, ob, false, msgs("missing", "m", 2)...)
		commit(t, db, ob, false, msgs("orders", "o", 3)...)
		testkit.Eventually(t, "route orders to be published", func() bool { return len(byRoute(b.published())["orders"]) == 3 })
		testkit.Eventually(t, "route missing to be tried 3 times", func() bool {
			n := 0
			for _, p := range b.published() {
				if p.queue == "missing" {
					n++
				}
			}
			return n >= 3
		})
		// The first try may pipeline both; from then on m-1 goes alone.
		m2 := 0
		for _, p := range b.published() {
			if p.msg.ID == "m-2" {
				m2++
			}
		}
		if m2 > 1 {
			t.Fatalf("m-2 was sent %d times while m-1 waits: a route that waits sends its oldest message alone", m2)
		}
		rep := r.Report()
		if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], `queue missing: message m-1`) || !strings.Contains(rep.Warnings[0], `there is no queue "missing"`) {
			t.Errorf("report warnings %q", rep.Warnings)
		}
		warn := logs.Find(slog.LevelWarn, "outbox: a message was not published; its route waits and tries again")
		if len(warn) == 0 || warn[0].Attr("route") != "queue missing" || warn[0].Attr("message_id") != "m-1" {
			t.Errorf("warnings logged: %v", logs.String())
		}
		b.setFail(nil) // the queue exists now
		testkit.Eventually(t, "route missing to be published", func() bool { return len(byRoute(b.published())["missing"]) == 2 })
		testkit.Eventually(t, "the report to clear", func() bool { return len(r.Report().Warnings) == 0 })
		if got := byRoute(b.published())["missing"]; !slices.Equal(got, []string{"m-1", "m-2"}) {
			t.Errorf("route missing got %v", got)
		}
		if len(logs.Find(slog.LevelInfo, "outbox: the route publishes again")) != 1 {
			t.Errorf("no line says the route recovered:\n%s", logs.String())
		}
	})
}

// The report's gauges say how many messages wait and how old the oldest
// is, as Status measures them.
func TestRelayReportsBacklog(t *testing.T) {
	databases(t, func(t *testing.T, db *sql.DB) {
		ob := open(t, db, outbox.WithPollInterval(10*time.Millisecond))
		b := newAsyncBroker(t)
		b.setFail(func(string, runtime.Message) error { return errRefused })
		commit(t, db, ob, false, msgs("a", "a", 4)...)
		r := ob.Relay(b)
		if rep := r.Report(); len(rep.Gauges) != 0 {
			t.Errorf("before it measured: %+v", rep)
		}
		runRelay(t, r)
		testkit.Eventually(t, "the backlog to be measured", func() bool { return len(r.Report().Gauges) == 2 })
		g := r.Report().Gauges
		if g[0].Name != observe.GaugeOutboxBacklog || g[0].Value != 4 || g[1].Name != observe.GaugeOutboxOldestAge || g[1].Value <= 0 {
			t.Errorf("gauges %+v, want 4 messages and an age", g)
		}
	})
}

// blockingBroker is a publisher whose Publish waits for its context to
// end, as a ZeroMQ PUSH with no peer does.
type blockingBroker struct{ entered chan struct{} }

func (b blockingBroker) Publish(ctx context.Context, _ string, _ runtime.Message) error {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return ctx.Err()
}

// A stop ends a publish that waits at once: the relay returns, and the
// message stays in the outbox for the next run.
func TestRelayStopsAWaitingPublish(t *testing.T) {
	databases(t, func(t *testing.T, db *sql.DB) {
		ob := open(t, db, outbox.WithPollInterval(10*time.Millisecond))
		b := blockingBroker{entered: make(chan struct{}, 1)}
		commit(t, db, ob, false, msgs("jobs", "j", 1)...)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- ob.Relay(b).Run(ctx) }()
		<-b.entered
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the relay did not stop while a publish waited")
		}
		if n := rowsLeft(t, db); n != 1 {
			t.Errorf("%d rows left, want the message kept", n)
		}
	})
}

// On an SQLite database opened without a busy_timeout, a relay whose
// removal meets another connection's write waits for it, instead of
// leaving the published row to be published again.
func TestRelayOnSQLiteWaitsForAnotherWriter(t *testing.T) {
	ctx := context.Background()
	db := dbtest.SQLite(t)
	ob := open(t, db)
	if _, err := db.ExecContext(ctx, "CREATE TABLE other (n INTEGER)"); err != nil {
		t.Fatal(err)
	}
	commit(t, db, ob, false, msgs("orders", "o", 1)...)
	released := make(chan struct{})
	b := &fakeBroker{}
	b.setFail(func(string, runtime.Message) error {
		// Another connection takes the write lock while the message is
		// published, and keeps it for a moment after.
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Error(err)
			return nil
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO other (n) VALUES (1)"); err != nil {
			t.Error(err)
		}
		go func() {
			defer close(released)
			time.Sleep(300 * time.Millisecond)
			if err := tx.Commit(); err != nil {
				t.Error(err)
			}
		}()
		return nil
	})
	n, err := ob.Relay(b).Flush(ctx)
	<-released
	if n != 1 || err != nil {
		t.Fatalf("Flush: %d, %v; want 1 published", n, err)
	}
	if left := rowsLeft(t, db); left != 0 {
		t.Errorf("%d rows left, want the published one removed", left)
	}
	if got := len(b.published()); got != 1 {
		t.Errorf("published %d times, want once", got)
	}
}
