package main

import (
	"context"
	"crypto/rand"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/streamgen/streamgen/examples/internal/demo"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testSettings are the demo's, on queues of the test's own.
func testSettings(t *testing.T) settings {
	t.Helper()
	s := defaultSettings()
	testkit.RequireRabbitMQ(t, s.url)
	s.prefix = "test-orders-demo-" + rand.Text()[:10] + "."
	s.timeout = time.Minute
	t.Cleanup(func() {
		queues := []string{"orders.received", "orders.audit", "orders.received.retry.500ms", "orders.received.retry.1s", "orders.received.retry.2s",
			"orders.received.suspect", "orders.audit.suspect", "orders.parked"}
		for i := range queues {
			queues[i] = s.prefix + queues[i]
		}
		if err := demo.Delete(s.url, queues); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		if err := demo.DeleteExchanges(s.url, []string{s.prefix + "orders"}); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return s
}

// The demo as make demo-rabbitmq runs it, twice in a row: the second run
// empties what the first left, and both tell the same story.
func TestDemoRunsTwiceInARow(t *testing.T) {
	s := testSettings(t)
	p := regexp.QuoteMeta(s.prefix)
	for run1 := range 2 {
		var out testkit.SyncBuffer
		if err := run(context.Background(), &out, s); err != nil {
			t.Fatalf("run %d failed: %v\n%s", run1+1, err, out.String())
		}
		account := out.String()
		leftover := "0"
		if run1 == 1 {
			leftover = "3"
		}
		for _, want := range []struct {
			what  string
			re    string
			count int
		}{
			{"the queues emptied first", `emptied ` + p + `orders.received, .*: ` + leftover + ` messages were left from an earlier run`, 1},
			{"o-1 confirmed at once", p + `orders.received o-1\s+1/5  order confirmed \(order=o-1, customer=ada, total=12.50\)`, 1},
			{"o-2 confirmed on attempt 3", p + `orders.received o-2\s+3/5  order confirmed`, 1},
			{"the first step of the ladder", `[12]/5  retry: a copy waits 500ms in ` + p + `orders.received.retry.500ms`, 2},
			{"the second step of the ladder", `2/5  retry: a copy waits 1s in ` + p + `orders.received.retry.1s`, 2},
			{"the last step of the ladder", `o-3\s+[34]/5  retry: a copy waits 2s in ` + p + `orders.received.retry.2s`, 2},
			{"o-3 parked", `o-3\s+5/5  PARKED on ` + p + `orders.parked: failed on attempt 5 of 5`, 1},
			{"c-1 dispatched to Cancel", `c-1\s+1/3  order cancelled \(order=o-1, reason=changed my mind\)`, 1},
			{"o-4 parked by its handler", `o-4\s+1/5  PARKED on ` + p + `orders.parked: dead-lettered by the handler: order o-4: the order has no total`, 1},
			{"r-1 poison", `r-1\s+1/1  PARKED on ` + p + `orders.parked: no handler for message type "OrderRefunded" .*\(poison: it never reached a handler\)`, 1},
			{"the counters", `(?m)^` + p + `orders.received\s+12\s+3\s+6\s+3\s+0$`, 1},
			{"the exchange both queues are bound to", `Both ` + p + `orders.received \(order.placed, order.cancelled\) and ` + p + `orders.audit \(order.#\) are bound to the topic exchange ` + p + `orders\.`, 1},
			{"each event audited once", p + `orders.audit (o-[1-4]|c-1)\s+1/1  audited \(event=Order(Placed|Cancelled), order=o-[1-4]\)`, 5},
			{"the audit's counters", `(?m)^` + p + `orders.audit\s+5\s+5\s+0\s+0\s+0$`, 1},
			{"the parked messages", `(?m)^  (o-3|o-4|r-1) \((OrderPlaced|OrderRefunded)\) \{`, 3},
			{"their reasons", `(?m)^    x-streamgen-reason: +\S`, 3},
			{"their attempts", `(?m)^    x-streamgen-attempts: +[15]$`, 3},
			{"how to look at the parked messages", `(?m)^  streamgen dlq (ls|show|replay -id o-3) ` + p + `orders.parked `, 3},
			{"no rabbitmqctl", `rabbitmqctl|rabbitmqadmin`, 0},
			{"the conclusion", `Everything happened as expected.`, 1},
			{"no password", `guest:guest`, 0},
		} {
			if n := len(regexp.MustCompile(want.re).FindAllString(account, -1)); n != want.count {
				t.Errorf("run %d: %s: %d matches of %s, want %d", run1+1, want.what, n, want.re, want.count)
			}
		}
		if t.Failed() {
			t.Fatalf("run %d told:\n%s", run1+1, account)
		}
	}
}

func TestCheckParked(t *testing.T) {
	want := map[string]string{"o-3": "failed on attempt 5 of 5", "r-1": "no handler"}
	msg := func(id, reason string) demo.QueuedMessage {
		return demo.QueuedMessage{MessageID: id, Headers: map[string]string{runtime.HeaderDeadLetterReason: reason}}
	}
	if err := checkParked([]demo.QueuedMessage{msg("o-3", "failed on attempt 5 of 5: x"), msg("r-1", "no handler for y")}, want); err != nil {
		t.Fatalf("the expected messages: %v", err)
	}
	err := checkParked([]demo.QueuedMessage{msg("o-3", "failed on attempt 4 of 5: x"), msg("o-9", "boom")}, want)
	if err == nil {
		t.Fatal("wrong parked messages passed")
	}
	for _, s := range []string{`o-3 is parked because "failed on attempt 4 of 5: x"`, "o-9 is parked, unexpectedly", "r-1 is not parked"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q does not say %q", err, s)
		}
	}
}

func TestDemoStopsWhenInterrupted(t *testing.T) {
	s := testSettings(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out testkit.SyncBuffer
	if err := run(ctx, &out, s); err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("an interrupted demo returned %v, want an error saying it was interrupted", err)
	}
}
