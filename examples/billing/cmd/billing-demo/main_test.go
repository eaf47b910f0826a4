package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The demo as make demo runs it: it succeeds, and its account shows the
// retries, the drop, the parked invoice and the counters.
func TestDemoTellsRetriesAndDeadLetters(t *testing.T) {
	var out testkit.SyncBuffer
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

// normalized returns a demo's account without what differs from run to
// run by nature: the times, measured on the scaled clock, and the ports the
// queues were bound to.
func normalized(account string) string {
	account = regexp.MustCompile(`(?m)^ *\+[0-9]+\.[0-9]s`).ReplaceAllString(account, "   +T")
	return regexp.MustCompile(`127\.0\.0\.1:[0-9]+ *`).ReplaceAllString(account, "127.0.0.1:PORT ")
}

// Every run of the demo tells the same story in the same order: a retry
// before the next attempt, the last line of a step before the next step's
// title. (The runtime logs that a ZeroMQ copy was sent after sending it,
// so without the narrator's ordering one run in a few told job-3's next
// attempt before the retry that sent it.)
func TestDemoTellsTheSameStoryEveryRun(t *testing.T) {
	const runs = 6
	var first string
	for i := range runs {
		var out testkit.SyncBuffer
		s := defaultSettings()
		s.timeout = time.Minute
		if err := run(context.Background(), &out, s); err != nil {
			t.Fatalf("run %d: the demo failed: %v\n%s", i+1, err, out.String())
		}
		got := normalized(out.String())
		if i == 0 {
			first = got
			continue
		}
		if got != first {
			a, b := strings.Split(first, "\n"), strings.Split(got, "\n")
			for j := range min(len(a), len(b)) {
				if a[j] != b[j] {
					t.Fatalf("run %d differs from run 1 at line %d:\n  run 1: %s\n  run %d: %s\n\nrun %d:\n%s", i+1, j+1, a[j], i+1, b[j], i+1, got)
				}
			}
			t.Fatalf("run %d has %d lines, run 1 %d:\n%s", i+1, len(b), len(a), got)
		}
	}
	// The story itself, in order: each message's lines, one step after
	// the other, as message, try and the sentence's first word.
	var story []string
	for _, m := range regexp.MustCompile(`(?m)^   \+T  \S+\s+((?:job|inv)-\d) +(\d/\d)  (\S+)`).FindAllStringSubmatch(first, -1) {
		story = append(story, m[1]+" "+m[2]+" "+m[3])
	}
	want := []string{
		"job-1 1/5 job", "job-2 1/5 warning:",
		"job-2 1/5 retry:", "job-2 2/5 warning:", "job-2 2/5 retry:", "job-2 3/5 job",
		"job-3 1/5 warning:",
		"job-3 1/5 retry:", "job-3 2/5 warning:", "job-3 2/5 retry:", "job-3 3/5 warning:",
		"job-3 3/5 retry:", "job-3 4/5 warning:", "job-3 4/5 retry:", "job-3 5/5 warning:", "job-3 5/5 DROPPED:",
		"inv-1 1/1 invoice", "inv-2 1/1 PARKED", "inv-2 1/1 error:",
	}
	if strings.Join(story, "\n") != strings.Join(want, "\n") {
		t.Errorf("the story:\n%s\nwant:\n%s\n\nthe account:\n%s", strings.Join(story, "\n"), strings.Join(want, "\n"), first)
	}
	for _, order := range []struct{ last, next string }{
		{`job-2 +3/5  job charged`, `2\. job-3 always fails`},
		{`job-3 +5/5  DROPPED`, `3\. Two invoices`},
		{`inv-2 +1/1  error: invoice parked`, `Stopping the service\.`},
	} {
		last, next := regexp.MustCompile(order.last).FindStringIndex(first), regexp.MustCompile(order.next).FindStringIndex(first)
		if last == nil || next == nil || next[0] < last[1] {
			t.Errorf("%s is not told after %s:\n%s", order.next, order.last, first)
		}
	}
}

// When what a step expects does not happen, the demo fails and says what
// differs.
func TestDemoFailsWhenTheCountersDiffer(t *testing.T) {
	s := defaultSettings()
	s.steps = s.steps[:1]
	s.steps[0].Want = map[string]runtime.SubscriptionStats{"jobs": {Delivered: 4, Acked: 3, Retried: 2}}
	s.timeout = 3 * time.Second
	var out testkit.SyncBuffer
	err := run(context.Background(), &out, s)
	if err == nil {
		t.Fatalf("the demo succeeded with counters that cannot happen:\n%s", out.String())
	}
	for _, want := range []string{"step 1", "did not reach", "jobs: delivered 4, acked 2, retried 2, parked 0, rejected 0, dropped 0, failed 0, want delivered 4, acked 3"} {
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
	var out testkit.SyncBuffer
	err := run(ctx, &out, defaultSettings())
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("an interrupted demo returned %v, want an error saying it was interrupted", err)
	}
}
