package console_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/deadletter/console"
)

// BenchmarkOverview100k times the overview and a group page of a
// RabbitMQ dead-letter queue of 100,000 letters (or
// STREAMGEN_CONSOLE_BENCH_LETTERS) in 10 groups, parked over a week; each
// is one streaming scan of the queue. The letters are published once,
// before the timer starts.
func BenchmarkOverview100k(b *testing.B) {
	const groups = 10
	letters := 100_000
	if n, err := strconv.Atoi(os.Getenv("STREAMGEN_CONSOLE_BENCH_LETTERS")); err == nil && n > 0 {
		letters = n
	}
	url_ := testkit.RabbitMQURL()
	conn := testkit.DialRabbitMQ(b, url_)
	q := testkit.UniqueName("streamgen-bench.console")
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if ch, err := conn.Channel(); err == nil {
			_, _ = ch.QueueDelete(q, false, false, false)
			_ = ch.Close()
		}
	})
	if err := ch.Confirm(false); err != nil {
		b.Fatal(err)
	}
	start := time.Now().Add(-7 * 24 * time.Hour)
	var pending []*amqp.DeferredConfirmation
	for i := range letters {
		l := letter("m"+strconv.Itoa(i), "Card"+strconv.Itoa(i%groups), "orders", fmt.Sprintf("order %d: card declined", i),
			start.Add(time.Duration(i)*(7*24*time.Hour/time.Duration(letters))), fmt.Sprintf(`{"order":%d,"note":"a body of some size to read"}`, i))
		dc, err := ch.PublishWithDeferredConfirm("", q, false, false, amqp.Publishing{Headers: amqp.Table(l.Headers), Type: l.Type(), MessageId: l.MessageID(), Body: l.Body})
		if err != nil {
			b.Fatal(err)
		}
		if pending = append(pending, dc); len(pending) == 1000 {
			for _, dc := range pending {
				if ok, err := dc.WaitContext(context.Background()); !ok || err != nil {
					b.Fatalf("not confirmed: %v", err)
				}
			}
			pending = pending[:0]
		}
	}
	for _, dc := range pending {
		_, _ = dc.WaitContext(context.Background())
	}
	_ = ch.Close()
	c, err := console.New([]deadletter.Store{deadletter.NewQueue(conn, q)}, console.Options{Token: token, Fresh: time.Nanosecond,
		Wait: 30 * time.Minute, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(c)
	b.Cleanup(func() { srv.Close(); _ = c.Close() })
	s := &site{t: &testing.T{}, srv: srv, client: newClient(), base: srv.URL}
	if a := s.post("/login", url.Values{"token": {token}}); a.status != http.StatusSeeOther {
		b.Fatalf("sign in: %d", a.status)
	}
	group := deadletter.GroupKey(letter("m0", "Card0", "orders", "order 0: card declined", start, ""))
	b.Logf("%d letters published", letters)
	var before, after runtime.MemStats
	for _, page := range []struct{ name, path string }{{"overview", "/"}, {"group", "/q/" + q + "/g/" + group + "?page=100"}} {
		b.Run(page.name, func(b *testing.B) {
			runtime.GC()
			runtime.ReadMemStats(&before)
			for b.Loop() {
				resp, err := s.client.Get(s.base + page.path)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("GET %s: %d", page.path, resp.StatusCode)
				}
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(letters), "letters")
			b.ReportMetric(float64(after.HeapInuse)/(1<<20), "heap-MiB")
		})
	}
}

// BenchmarkOverviewInMemory100k times what the console itself spends on
// the overview and a group page of 100,000 letters in 10 groups, read
// from memory: the grouping, the chart and the page, without a broker.
func BenchmarkOverviewInMemory100k(b *testing.B) {
	const letters, groups = 100_000, 10
	start := time.Now().Add(-7 * 24 * time.Hour)
	ls := make([]*deadletter.Letter, letters)
	for i := range ls {
		ls[i] = letter("m"+strconv.Itoa(i), "Card"+strconv.Itoa(i%groups), "orders", fmt.Sprintf("order %d: card declined", i),
			start.Add(time.Duration(i)*(7*24*time.Hour/letters)), fmt.Sprintf(`{"order":%d,"note":"a body of some size to read"}`, i))
	}
	c, err := console.New([]deadletter.Store{newMemStore("orders.parked", ls...)}, console.Options{Token: token, Fresh: time.Nanosecond,
		Wait: time.Minute, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(c)
	b.Cleanup(func() { srv.Close(); _ = c.Close() })
	s := &site{t: &testing.T{}, srv: srv, client: newClient(), base: srv.URL}
	if a := s.post("/login", url.Values{"token": {token}}); a.status != http.StatusSeeOther {
		b.Fatalf("sign in: %d", a.status)
	}
	group := deadletter.GroupKey(ls[0])
	for _, page := range []struct{ name, path string }{{"overview", "/"}, {"group", "/q/orders.parked/g/" + group + "?page=100"}} {
		b.Run(page.name, func(b *testing.B) {
			for b.Loop() {
				resp, err := s.client.Get(s.base + page.path)
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK || page.name == "overview" && !bytes.Contains(body, []byte("Read 100000 letters")) {
					b.Fatalf("GET %s: %d %s", page.path, resp.StatusCode, body)
				}
			}
		})
	}
}
