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
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/deadletter/console"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

// BenchmarkOverview100k times the pages of a RabbitMQ dead-letter queue
// of 100,000 letters (or STREAMGEN_CONSOLE_BENCH_LETTERS) in 10 groups,
// parked over a week, as an operator meets them, with the console's
// default options: the overview, a group's 100th page, a letter's page,
// and an action (the confirm page and the purge of one letter) followed
// by the overview until its figures are read after the purge. fresh-s is
// how long, from the start of the action, the overview took to show
// figures read after it. The letters are published once, before the
// timer starts, and the console has read them once. live-MiB is the live
// heap after a collection: the console's index, and the test's.
//
// On the 2-core test machine, shared (load average 6 to 16), 2 rounds:
//
//	page       every page reads the queue   served from the index
//	overview   1.26 s (1 s waiting)         0.07-0.68 s
//	group      52.5 s                       1.5-4.7 ms
//	letter     47.1 s                       1.4-3.1 ms
//	action     119 s                        34-42 s (the purge and the
//	                                        reading after it)
//	first reading of the queue              22-28 s
//	live heap  3 MiB                        67 MiB
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
	c, err := console.New([]deadletter.Store{rabbitmq.NewDeadLetterQueue(conn, q)}, console.Options{Token: token, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(c)
	b.Cleanup(func() { srv.Close(); _ = c.Close() })
	t := &testing.T{}
	s := &site{t: t, srv: srv, client: newClient(), base: srv.URL}
	if a := s.post("/login", url.Values{"token": {token}}); a.status != http.StatusSeeOther {
		b.Fatalf("sign in: %d", a.status)
	}
	get := func(path string) string {
		resp, err := s.client.Get(s.base + path)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d\n%s", path, resp.StatusCode, body)
		}
		return string(body)
	}
	// read waits until the overview shows figures read since t.
	read := func(since time.Time) time.Duration {
		for {
			body := get("/")
			if m := readAt.FindStringSubmatch(body); m != nil && !strings.Contains(body, `class="note reading"`) {
				at, err := time.Parse("2006-01-02 15:04:05", m[1])
				if err == nil && !at.Before(since.UTC().Truncate(time.Second)) {
					return time.Since(since)
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	warm := time.Now()
	b.Logf("%d letters published; the first reading took %s", letters, read(warm).Round(time.Millisecond))
	group := deadletter.GroupKey(letter("m0", "Card0", "orders", "order 0: card declined", start, ""))
	groupPath := "/q/" + q + "/g/" + group + "?page=100"
	keys := letterKey.FindAllStringSubmatch(get(groupPath), -1)
	if len(keys) == 0 {
		b.Fatal("the group page lists no letter")
	}
	var before, after runtime.MemStats
	for _, page := range []string{"overview", "group", "letter", "action"} {
		b.Run(page, func(b *testing.B) {
			runtime.GC()
			runtime.ReadMemStats(&before)
			var fresh time.Duration
			n := 0
			for b.Loop() {
				switch page {
				case "overview":
					get("/")
				case "group":
					get(groupPath)
				case "letter":
					get("/q/" + q + "/l/" + keys[n%len(keys)][1] + "?group=" + group)
				case "action":
					if len(keys) == 0 {
						b.Fatal("no letter left to purge")
					}
					key := keys[0][1]
					keys = keys[1:]
					at := time.Now()
					_, form := s.confirm(q, "action=purge&key="+key)
					if a := s.post("/q/"+q+"/purge", form); a.status != http.StatusOK || !strings.Contains(a.body, "1 letter purged") {
						b.Fatalf("purge: %d\n%s", a.status, a.body)
					}
					fresh += read(at)
				}
				n++
			}
			if t.Failed() {
				b.Fatal("a request failed")
			}
			runtime.GC() // what is left is the console's index, and the test's
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(letters), "letters")
			b.ReportMetric(float64(after.HeapAlloc)/(1<<20), "live-MiB")
			if page == "action" {
				b.ReportMetric(fresh.Seconds()/float64(n), "fresh-s")
			}
		})
	}
}

var (
	readAt    = regexp.MustCompile(`Read \d+ letters at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC`)
	letterKey = regexp.MustCompile(`/l/([0-9a-f]{20})\?`)
)

// BenchmarkOverviewInMemory100k times what the console itself spends on
// the overview and a group page of 100,000 letters in 10 groups, read
// from memory, without a broker: each page is served from the index
// while the letters are read again in the background (Fresh is 1 ns).
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
