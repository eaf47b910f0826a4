package promstream_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/promstream"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

type job struct {
	ID int `json:"id"`
}

var errFailed = errors.New("the job failed")

// jobsSubscription is "jobs", whose handler of Job does what the job's id
// says: 1 is handled, 2 fails once and is handled on its second attempt,
// 3 always fails, 4 always panics, 5 is dropped. Three attempts are
// allowed, then jobs.dead takes the message; audit handles Job with no
// dead-letter queue.
func jobsSubscription(kind runtime.BrokerKind, name string, delay time.Duration) (jobs, audit *runtime.Subscription) {
	p := runtime.Policy{MaxAttempts: 3, DeadLetter: name + ".dead"}
	if kind == runtime.ZeroMQ {
		p.OutRetry = name
	}
	jobs = &runtime.Subscription{Name: name, Broker: kind, Handlers: []runtime.Handler{
		runtime.Handle("Job", p, func(_ context.Context, j *job, md runtime.Metadata) runtime.Outcome {
			switch {
			case j.ID == 1, j.ID == 2 && md.Attempt == 2:
				return runtime.Ack()
			case j.ID == 4:
				panic(fmt.Sprintf("job %d panics", j.ID))
			case j.ID == 5:
				return runtime.DropNow().Because(errFailed)
			}
			return runtime.Retry().After(delay).Because(errFailed)
		}),
	}}
	audit = &runtime.Subscription{Name: name + ".audit", Broker: kind, Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{}, func(context.Context, *job, runtime.Metadata) runtime.Outcome { return runtime.Ack() }),
	}}
	if kind == runtime.RabbitMQ {
		jobs.RetryDelays = []time.Duration{delay}
	}
	return jobs, audit
}

// newRegistered returns a Collector registered with a fresh registry.
func newRegistered(t testing.TB, opts ...promstream.Option) (*promstream.Collector, *prometheus.Registry) {
	t.Helper()
	c := promstream.New(opts...)
	reg := prometheus.NewRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatalf("register: %v", err)
	}
	return c, reg
}

// compare fails t unless the registry's families called names are what
// want says, in the text exposition format (HELP and TYPE lines may be left
// out: they are added from the gathered families).
func compare(t testing.TB, reg *prometheus.Registry, want string, names ...string) {
	t.Helper()
	if err := testutil.GatherAndCompare(reg, strings.NewReader(withHelp(t, reg, want)), names...); err != nil {
		t.Error(err)
	}
}

// withHelp prefixes want with the HELP and TYPE lines of the families it
// names, as the registry describes them.
func withHelp(t testing.TB, reg *prometheus.Registry, want string) string {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var b strings.Builder
	for _, f := range families {
		var lines []string
		for line := range strings.Lines(want) {
			name, _, _ := strings.Cut(strings.TrimSpace(line), "{")
			if name == f.GetName() || strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count") == f.GetName() {
				lines = append(lines, sortLabels(strings.TrimSpace(line)))
			}
		}
		if len(lines) == 0 {
			continue
		}
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", f.GetName(), f.GetHelp(), f.GetName(), strings.ToLower(f.GetType().String()))
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// sortLabels returns a sample line with its labels in the order the
// registry gathers them, by name; its label values hold no comma.
func sortLabels(line string) string {
	name, rest, ok := strings.Cut(line, "{")
	if !ok {
		return line
	}
	labels, value, _ := strings.Cut(rest, "}")
	pairs := strings.Split(labels, ",")
	slices.Sort(pairs)
	return name + "{" + strings.Join(pairs, ",") + "}" + value
}

// value returns the value of the series of name with labels, failing t
// when there is none.
func value(t testing.TB, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if len(got) != len(labels) {
				continue
			}
			for k, v := range labels {
				if got[k] != v {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}

// On the harness, for both brokers, every outcome a handler or the runtime
// decides is counted with the subscription, the message type and the
// outcome; poison is counted as such, with the handlers' type or _OTHER;
// each handler call is timed, a panicking one included; and nothing is in
// flight once the broker is idle.
func TestEveryOutcomeOnTheHarness(t *testing.T) {
	for _, kind := range []runtime.BrokerKind{runtime.RabbitMQ, runtime.ZeroMQ} {
		t.Run(string(kind), func(t *testing.T) {
			c, reg := newRegistered(t)
			h := streamtest.New(t, kind, streamtest.WithQuietLogs(), streamtest.WithAppOptions(runtime.WithObserver(c)))
			jobs, audit := jobsSubscription(kind, "jobs", time.Second)
			h.App().Mount(h.Broker(), jobs, audit)
			h.Start()

			for id := 1; id <= 5; id++ {
				h.Publish("jobs", "Job", job{ID: id})
			}
			ctx := t.Context()
			for _, m := range (rawMessages{
				{Queue: "jobs", Type: "Nope", Body: []byte(`{"id":6}`)}, // no handler takes Nope
				{Queue: "jobs", Type: "Job", Body: []byte(`{`)},         // does not decode
				{Queue: "jobs", Body: []byte(`{"id":7}`)},               // no type
				{Queue: "jobs.audit", Type: "Nope", Body: []byte(`{}`)}, // poison, and no dead-letter queue
			}).msgs() {
				if err := h.Broker().Publish(ctx, m.queue, m.msg); err != nil {
					t.Fatal(err)
				}
			}
			h.Wait()
			if kind == runtime.ZeroMQ {
				// 2, 3 and the typeless 7 wait a second in memory; 4's
				// panic is retried at once, and parked.
				if n := value(t, reg, promstream.MetricCopiesWaiting, map[string]string{"broker": "zeromq", "subscription": "jobs"}); n != 3 {
					t.Errorf("%v copies waiting, want 3", n)
				}
			}
			h.Advance(time.Second)
			h.Advance(time.Second)
			h.Wait()

			// ZeroMQ takes a typeless message on a one-handler subscription
			// as that handler's; RabbitMQ finds no handler for it.
			typeless := `streamgen_settled_total{broker="B",subscription="jobs",message_type="",outcome="parked"} 1
streamgen_poison_total{broker="B",subscription="jobs",message_type=""} 1
`
			// 1 is handled at once, 2 on its second attempt, 3 and 4 after
			// three attempts are parked, 5 is dropped; the three poison
			// messages on jobs are delivered once.
			deliveries, jobAcked, jobRetried, jobParked := 1+2+3+3+1+3, 2, 1+2+2, 2+1
			// A poison message without a dead-letter queue is rejected.
			auditPoison := "rejected"
			if kind == runtime.ZeroMQ {
				typeless = ""
				// The typeless message, read as job 7, fails like 3.
				deliveries, jobRetried, jobParked = deliveries+2, jobRetried+2, jobParked+1
			}
			want := fmt.Sprintf(`
streamgen_deliveries_total{broker="B",subscription="jobs"} %d
streamgen_deliveries_total{broker="B",subscription="jobs.audit"} 1
streamgen_settled_total{broker="B",subscription="jobs",message_type="Job",outcome="acked"} %d
streamgen_settled_total{broker="B",subscription="jobs",message_type="Job",outcome="retried"} %d
streamgen_settled_total{broker="B",subscription="jobs",message_type="Job",outcome="parked"} %d
streamgen_settled_total{broker="B",subscription="jobs",message_type="Job",outcome="rejected"} 0
streamgen_settled_total{broker="B",subscription="jobs",message_type="Job",outcome="dropped"} 1
streamgen_settled_total{broker="B",subscription="jobs",message_type="Job",outcome="failed"} 0
streamgen_settled_total{broker="B",subscription="jobs",message_type="_OTHER",outcome="parked"} 1
streamgen_settled_total{broker="B",subscription="jobs.audit",message_type="Job",outcome="acked"} 0
streamgen_settled_total{broker="B",subscription="jobs.audit",message_type="Job",outcome="retried"} 0
streamgen_settled_total{broker="B",subscription="jobs.audit",message_type="Job",outcome="parked"} 0
streamgen_settled_total{broker="B",subscription="jobs.audit",message_type="Job",outcome="rejected"} 0
streamgen_settled_total{broker="B",subscription="jobs.audit",message_type="Job",outcome="dropped"} 0
streamgen_settled_total{broker="B",subscription="jobs.audit",message_type="Job",outcome="failed"} 0
streamgen_settled_total{broker="B",subscription="jobs.audit",message_type="_OTHER",outcome="%s"} 1
streamgen_poison_total{broker="B",subscription="jobs",message_type="Job"} 1
streamgen_poison_total{broker="B",subscription="jobs",message_type="_OTHER"} 1
streamgen_poison_total{broker="B",subscription="jobs.audit",message_type="_OTHER"} 1
streamgen_deliveries_in_flight{broker="B",subscription="jobs"} 0
streamgen_deliveries_in_flight{broker="B",subscription="jobs.audit"} 0
streamgen_reconnects_total{broker="B"} 0
`, deliveries, jobAcked, jobRetried, jobParked, auditPoison) + typeless
			want = strings.ReplaceAll(want, `broker="B"`, `broker="`+string(kind)+`"`)
			compare(t, reg, want, promstream.MetricDeliveries, promstream.MetricSettled, promstream.MetricPoison, promstream.MetricInFlight, promstream.MetricReconnects)

			// The poison never reached a handler: only handled deliveries
			// are timed, the panics among them.
			for outcome, n := range map[string]int{"acked": jobAcked, "retried": jobRetried, "parked": jobParked - 1, "dropped": 1} {
				labels := map[string]string{"broker": string(kind), "subscription": "jobs", "message_type": "Job", "outcome": outcome}
				if got := value(t, reg, promstream.MetricHandlerDuration, labels); got != float64(n) {
					t.Errorf("%s: %v handler calls timed, want %d", outcome, got, n)
				}
			}
			if n := testutil.CollectAndCount(c, promstream.MetricHandlerDuration); n != 4 {
				t.Errorf("%d handler duration series, want 4 (acked, retried, parked, dropped)", n)
			}
		})
	}
}

// outgoing is a message to publish raw, to a queue.
type outgoing struct {
	queue string
	msg   runtime.Message
}

// rawMessages lists messages published as they are, by queue.
type rawMessages []struct {
	Queue string
	Type  string
	Body  []byte
}

func (r rawMessages) msgs() []outgoing {
	out := make([]outgoing, len(r))
	for i, m := range r {
		out[i] = outgoing{m.Queue, runtime.Message{ID: fmt.Sprintf("raw-%d", i), Type: m.Type, Body: m.Body}}
	}
	return out
}

// A delivery is in flight from the moment its consumer takes it until it
// is settled, and its handler's duration is what the call took.
func TestInFlightAndHandlerDuration(t *testing.T) {
	c, reg := newRegistered(t, promstream.WithHandlerBuckets(0.01, 0.05, 10))
	release := make(chan struct{})
	h := streamtest.New(t, runtime.RabbitMQ, streamtest.WithQuietLogs(), streamtest.WithAppOptions(runtime.WithObserver(c)))
	h.App().Mount(h.Broker(), &runtime.Subscription{Name: "slow", Broker: runtime.RabbitMQ, Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{}, func(context.Context, *job, runtime.Metadata) runtime.Outcome {
			<-release
			time.Sleep(60 * time.Millisecond)
			return runtime.Ack()
		}),
	}})
	h.Start()
	h.Publish("slow", "Job", job{ID: 1})
	inFlight := map[string]string{"broker": "rabbitmq", "subscription": "slow"}
	testkit.Eventually(t, "the delivery in flight", func() bool { return value(t, reg, promstream.MetricInFlight, inFlight) == 1 })
	close(release)
	h.Wait()
	if n := value(t, reg, promstream.MetricInFlight, inFlight); n != 0 {
		t.Errorf("%v in flight once settled, want 0", n)
	}
	compare(t, reg, `
streamgen_handler_duration_seconds_bucket{broker="rabbitmq",subscription="slow",message_type="Job",outcome="acked",le="0.01"} 0
streamgen_handler_duration_seconds_bucket{broker="rabbitmq",subscription="slow",message_type="Job",outcome="acked",le="0.05"} 0
streamgen_handler_duration_seconds_bucket{broker="rabbitmq",subscription="slow",message_type="Job",outcome="acked",le="10"} 1
streamgen_handler_duration_seconds_bucket{broker="rabbitmq",subscription="slow",message_type="Job",outcome="acked",le="+Inf"} 1
`, promstream.MetricHandlerDuration+"_bucket")
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == promstream.MetricHandlerDuration {
			if sum := f.GetMetric()[0].GetHistogram().GetSampleSum(); sum < 0.06 || sum > 10 {
				t.Errorf("the handler took %vs, want at least 0.06s", sum)
			}
		}
	}
}

// However many message ids and made-up types go by, the series stay those
// of the subscription's handlers and outcomes: no message id and no
// sender's type becomes a label value.
func TestCardinalityStaysBounded(t *testing.T) {
	c, reg := newRegistered(t)
	h := streamtest.New(t, runtime.ZeroMQ, streamtest.WithQuietLogs(), streamtest.WithAppOptions(runtime.WithObserver(c)))
	jobs, _ := jobsSubscription(runtime.ZeroMQ, "jobs", time.Second)
	h.App().Mount(h.Broker(), jobs, &runtime.Subscription{Name: "jobs.dead", Broker: runtime.ZeroMQ, Handlers: []runtime.Handler{
		runtime.Handle("Job", runtime.Policy{}, func(context.Context, *job, runtime.Metadata) runtime.Outcome { return runtime.Ack() }),
	}})
	h.Start()
	series := func() int {
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, f := range families {
			n += len(f.GetMetric())
		}
		return n
	}
	round := func(from, to int) {
		for i := from; i < to; i++ {
			h.Publish("jobs", "Job", job{ID: 1}, runtime.WithMessageID(fmt.Sprintf("ok-%d", i)))
			if err := h.Broker().Publish(t.Context(), "jobs", runtime.Message{ID: fmt.Sprintf("bad-%d", i), Type: fmt.Sprintf("Made-up-%d", i), Body: []byte(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}
		h.Wait()
	}
	round(0, 10)
	before := series()
	round(10, 1000)
	if after := series(); after != before {
		t.Errorf("%d series after 1000 message ids and types, %d after 10", after, before)
	}
	if n := value(t, reg, promstream.MetricSettled, map[string]string{"broker": "zeromq", "subscription": "jobs", "message_type": "Job", "outcome": "acked"}); n != 1000 {
		t.Errorf("%v acked, want 1000", n)
	}
	if n := value(t, reg, promstream.MetricPoison, map[string]string{"broker": "zeromq", "subscription": "jobs", "message_type": promstream.OtherMessageType}); n != 1000 {
		t.Errorf("%v poison of made-up types, want 1000", n)
	}
	// What each delivery carried is in none of the series.
	text, err := testutil.GatherAndFormat(reg, expfmt.TypeTextPlain)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"ok-", "bad-", "Made-up"} {
		if strings.Contains(string(text), s) {
			t.Errorf("the metrics mention %q:\n%s", s, text)
		}
	}
}
