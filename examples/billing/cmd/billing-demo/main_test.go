package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/streamgen/streamgen/examples/internal/exampletest"
	"github.com/streamgen/streamgen/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The demo as make demo runs it: it succeeds, and its account shows the
// retries, the drop, the parked invoice and the counters.
func TestDemoTellsRetriesAndDeadLetters(t *testing.T) {
	var out exampletest.SyncBuffer
	s := defaultSettings()
	s.timeout = time.Minute // the machine may be busy; the demo's own deadline is for people
	if err := run(context.Background(), &out, s); err != nil {
		t.Fatalf("the demo failed: %v\n%s", err, out.String())
	}
	account := out.String()
	for _, want := range []struct {
		what  string
		re    string
		count int
	}{
		{"job-1 charged on its first delivery", `jobs\s+job-1\s+1/5  job charged \(job=1, amount=12.50\)`, 1},
		{"job-2 failing twice", `jobs\s+job-2\s+[12]/5  warning: charge failed`, 2},
		{"job-2 charged on attempt 3", `jobs\s+job-2\s+3/5  job charged`, 1},
		{"every retry after 30s", `jobs\s+job-[23]\s+[1-4]/5  retry: after 30s its copy went back into jobs \(charge job [23]: the payment gateway is unavailable\)`, 6},
		{"job-3 dropped after five", `jobs\s+job-3\s+5/5  DROPPED: failed on attempt 5 of 5: charge job 3: the payment gateway is unavailable`, 1},
		{"inv-1 sent", `invoices\s+inv-1\s+1/1  invoice sent`, 1},
		{"inv-2 parked", `invoices\s+inv-2\s+1/1  PARKED on invoices.dead: failed: invoice 2: the invoice has no amount`, 1},
		{"inv-2 read on invoices.dead", `invoices.dead\s+inv-2\s+1/1  error: invoice parked for a person to look at \(invoice=2, from=invoices, attempts=1, reason=failed: invoice 2: the invoice has no amount\)`, 1},
		{"the jobs counters", `(?m)^jobs\s+9\s+2\s+6\s+0\s+1$`, 1},
		{"the invoices counters", `(?m)^invoices\s+2\s+1\s+0\s+1\s+0$`, 1},
		{"the dead-letter counters", `(?m)^invoices.dead\s+1\s+1\s+0\s+0\s+0$`, 1},
		{"the conclusion", `Everything happened as expected.`, 1},
		{"no ack notices", `ZeroMQ cannot acknowledge`, 0},
	} {
		if n := len(regexp.MustCompile(want.re).FindAllString(account, -1)); n != want.count {
			t.Errorf("%s: %d lines match %s, want %d", want.what, n, want.re, want.count)
		}
	}
	if t.Failed() {
		t.Logf("the account:\n%s", account)
	}
}

// When what a step expects does not happen, the demo fails and says what
// differs.
func TestDemoFailsWhenTheCountersDiffer(t *testing.T) {
	s := defaultSettings()
	s.steps = s.steps[:1]
	s.steps[0].Want = map[string]runtime.SubscriptionStats{"jobs": {Delivered: 9, Acked: 3, Retried: 6}}
	s.timeout = 3 * time.Second
	var out exampletest.SyncBuffer
	err := run(context.Background(), &out, s)
	if err == nil {
		t.Fatalf("the demo succeeded with counters that cannot happen:\n%s", out.String())
	}
	for _, want := range []string{"step 1", "did not reach", "jobs: delivered 9, acked 2, retried 6, parked 0, rejected 0, dropped 1, failed 0, want delivered 9, acked 3"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(out.String(), "Everything happened as expected.") {
		t.Error("a failed demo said everything happened as expected")
	}
}

// A demo interrupted (Ctrl-C) stops the service and says so.
func TestDemoStopsWhenInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out exampletest.SyncBuffer
	err := run(ctx, &out, defaultSettings())
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("an interrupted demo returned %v, want an error saying it was interrupted", err)
	}
}
