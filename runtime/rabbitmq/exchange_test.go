package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/internal/messageid"
)

// exchange returns an exchange name unique to this test and deletes the
// exchange after the test.
func (a *admin) exchange(label string) string {
	a.t.Helper()
	name := "streamgen-test.x." + label + "." + randomHex(4)
	a.t.Cleanup(func() {
		_ = a.channel(func(ch *amqp.Channel) error { return ch.ExchangeDelete(name, false, false) })
	})
	return name
}

// declareExchange declares exchange name of kind, durable or not.
func (a *admin) declareExchange(name, kind string, durable bool) {
	a.t.Helper()
	if err := a.channel(func(ch *amqp.Channel) error {
		return ch.ExchangeDeclare(name, kind, durable, false, false, false, nil)
	}); err != nil {
		a.t.Fatalf("declare exchange %s: %v", name, err)
	}
}

// publishTo sends m to exchange with routing key, mandatory and with a
// publisher confirm, and reports whether the broker routed it (false: it
// came back unroutable).
func (a *admin) publishTo(exchange, key string, m runtime.Message) bool {
	a.t.Helper()
	routed := true
	if err := a.channel(func(ch *amqp.Channel) error {
		if err := ch.Confirm(false); err != nil {
			return err
		}
		returns := ch.NotifyReturn(make(chan amqp.Return, 1))
		dc, err := ch.PublishWithDeferredConfirm(exchange, key, true, false, publishingOf(m, time.Now()))
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		if ok, err := dc.WaitContext(ctx); err != nil || !ok {
			return fmt.Errorf("not confirmed (ack %v, %v)", ok, err)
		}
		// The broker sends basic.return before the confirm.
		select {
		case <-returns:
			routed = false
		default:
		}
		return nil
	}); err != nil {
		a.t.Fatalf("publish to exchange %s: %v", exchange, err)
	}
	return routed
}

// jobMessage is a Job message as runtime.Publish makes it.
func jobMessage(id int) runtime.Message {
	return runtime.Message{ID: messageid.New(), Type: "Job", ContentType: "application/json", Body: fmt.Appendf(nil, `{"id":%d}`, id)}
}

// boundSub is a subscription on queue bound to exchange.
func boundSub(queue, exchange string, kind runtime.ExchangeType, bindings []string, handlers ...runtime.Handler) *runtime.Subscription {
	s := sub(queue, 200*time.Millisecond, handlers...)
	s.Exchange, s.ExchangeType, s.Bindings = exchange, kind, bindings
	return s
}

// ids returns the job ids c saw, sorted.
func (c *calls) sortedIDs() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Clone(c.ids)
	slices.Sort(out)
	return out
}

// settle waits until every queue is empty and nothing is unacked, so
// that counts taken afterwards are final.
func settled(adm *admin, queues ...string) func() bool {
	return func() bool {
		for _, q := range queues {
			if adm.ready(q) != 0 || adm.unacked(q) != 0 {
				return false
			}
		}
		return true
	}
}

func TestTopicExchangeRoutesByPattern(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	x := adm.exchange("topic")
	star, hash := adm.queue("star"), adm.queue("hash")
	var cs, ch calls
	runApp(t, newTestBroker(),
		boundSub(star, x, "", []string{"order.*"}, handler("Job", runtime.Policy{}, &cs, alwaysAck)),
		boundSub(hash, x, runtime.TopicExchange, []string{"order.#"}, handler("Job", runtime.Policy{}, &ch, alwaysAck)))

	for _, tc := range []struct {
		key    string
		id     int
		routed bool
	}{{"order.placed", 1, true}, {"order.placed.eu", 2, true}, {"order", 3, true}, {"invoice.sent", 4, false}, {"orders.placed", 5, false}} {
		if got := adm.publishTo(x, tc.key, jobMessage(tc.id)); got != tc.routed {
			t.Errorf("routing key %s: routed %v, want %v", tc.key, got, tc.routed)
		}
	}
	testkit.Eventually(t, "both handlers ran", func() bool { return cs.len() >= 1 && ch.len() >= 3 })
	testkit.Eventually(t, "the queues are empty", settled(adm, star, hash))
	if got := cs.sortedIDs(); !slices.Equal(got, []int{1}) {
		t.Errorf("order.* saw %v, want [1]", got)
	}
	if got := ch.sortedIDs(); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("order.# saw %v, want [1 2 3]", got)
	}
}

func TestDirectExchangeRoutesByEqualKey(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	x := adm.exchange("direct")
	q := adm.queue("direct")
	var c calls
	runApp(t, newTestBroker(), boundSub(q, x, runtime.DirectExchange, []string{"welcome", "order.*"}, handler("Job", runtime.Policy{}, &c, alwaysAck)))
	if !adm.publishTo(x, "welcome", jobMessage(1)) || !adm.publishTo(x, "order.*", jobMessage(2)) {
		t.Error("a message with a bound key was not routed")
	}
	if adm.publishTo(x, "order.placed", jobMessage(3)) {
		t.Error("a direct exchange matched a key as a pattern")
	}
	testkit.Eventually(t, "the handler ran twice", func() bool { return c.len() >= 2 })
	testkit.Eventually(t, "the queue is empty", settled(adm, q))
	if got := c.sortedIDs(); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("saw %v, want [1 2]", got)
	}
}

// Two queues bound to one fanout exchange each get a copy. One handler
// fails: its retry copies go through its own wait queue back to its own
// queue, so only it sees them, and it parks the message in its own
// dead-letter queue; the other handler sees the message once.
func TestFanoutRetriesStayWithTheirQueue(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	x := adm.exchange("fanout")
	failing, ok := adm.queue("failing"), adm.queue("ok")
	var cf, co calls
	runApp(t, newTestBroker(),
		boundSub(failing, x, runtime.FanoutExchange, nil, handler("Job", runtime.Policy{MaxAttempts: 3, DeadLetter: failing + ".dl"}, &cf, alwaysFail)),
		boundSub(ok, x, runtime.FanoutExchange, nil, handler("Job", runtime.Policy{}, &co, alwaysAck)))
	if !adm.publishTo(x, "anything", jobMessage(7)) {
		t.Fatal("the fanout exchange did not route")
	}
	testkit.Eventually(t, "the failing handler parked the message", func() bool { return adm.ready(failing+".dl") == 1 })
	testkit.Eventually(t, "the queues are empty", settled(adm, failing, ok, failing+".retry"))
	if got := cf.attempts(); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("the failing handler saw attempts %v, want [1 2 3]", got)
	}
	if got := co.attempts(); !slices.Equal(got, []int{1}) {
		t.Errorf("the other handler saw attempts %v, want [1]: another queue's retries reached it", got)
	}
	d, found := adm.get(failing + ".dl")
	if !found || !strings.Contains(string(d.Body), `"id":7`) {
		t.Errorf("dead letter %v %q", found, d.Body)
	}
	if d.Exchange != "" || d.RoutingKey != failing+".dl" {
		t.Errorf("the dead letter went through exchange %q with key %q, want the default exchange to %s", d.Exchange, d.RoutingKey, failing+".dl")
	}
}

func TestStartupFailsOnAnExchangeOfAnotherType(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	x := adm.exchange("drift")
	adm.declareExchange(x, "fanout", true)
	q := adm.queue("drift")
	var c calls
	err := startupError(t, boundSub(q, x, "", []string{"order.*"}, handler("Job", runtime.Policy{}, &c, alwaysAck)))
	want := "exchange " + x + " exists with type fanout but subscription " + q + " declares it topic: an exchange's type never changes: set exchange_type=fanout to match, or delete it (rabbitmqadmin delete exchange name=" + x + ")"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("startup error:\n%v\nwant it to say:\n%s", err, want)
	}
	var te *TopologyError
	if !errors.As(err, &te) || te.Exchange != x || te.Role != "exchange" || te.Argument != "type" || te.Have != "fanout" || te.Want != "topic" || te.Subscription != q {
		t.Errorf("TopologyError = %+v", te)
	}
	var ae *amqp.Error
	if !errors.As(err, &ae) || ae.Code != amqp.PreconditionFailed {
		t.Errorf("the broker's 406 is not wrapped: %v", err)
	}
}

// Both exchanges are reported at once: after a 406 closes the channel,
// declaring goes on on a new one.
func TestStartupReportsEveryDriftingExchange(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	x1, x2 := adm.exchange("transient"), adm.exchange("typed")
	adm.declareExchange(x1, "topic", false)
	adm.declareExchange(x2, "direct", true)
	q1, q2 := adm.queue("transient"), adm.queue("typed")
	var c calls
	err := startupError(t,
		boundSub(q1, x1, "", []string{"a"}, handler("Job", runtime.Policy{}, &c, alwaysAck)),
		boundSub(q2, x2, runtime.FanoutExchange, nil, handler("Job", runtime.Policy{}, &c, alwaysAck)))
	for _, want := range []string{
		"exchange " + x1 + " exists with durable false but subscription " + q1 + " declares it durable true: subscriptions bind to durable exchanges",
		"exchange " + x2 + " exists with type direct but subscription " + q2 + " declares it fanout: an exchange's type never changes: set exchange_type=direct to match",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("startup error:\n%v\nwant it to say:\n%s", err, want)
		}
	}
}

func TestStartupFailsWhenSubscriptionsDisagreeOnAnExchangeType(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	x := adm.exchange("disagree")
	q1, q2 := adm.queue("a"), adm.queue("b")
	var c calls
	err := startupError(t,
		boundSub(q1, x, "", []string{"a"}, handler("Job", runtime.Policy{}, &c, alwaysAck)),
		boundSub(q2, x, runtime.FanoutExchange, nil, handler("Job", runtime.Policy{}, &c, alwaysAck)))
	want := "subscriptions " + q1 + " and " + q2 + " declare exchange " + x + " as topic and as fanout"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("startup error:\n%v\nwant it to say:\n%s", err, want)
	}
}

// A message another client publishes into the exchange, with the AMQP
// properties streamgen reads, reaches the handlers its key is bound to.
func TestForeignClientPublishesIntoTheExchange(t *testing.T) {
	testkit.NoLeaks(t)
	python := pikaPython(t)
	adm := newAdmin(t)
	x := adm.exchange("foreign")
	placed, all := adm.queue("placed"), adm.queue("all")
	var cp, ca calls
	runApp(t, newTestBroker(),
		boundSub(placed, x, "", []string{"order.placed"}, handler("Job", runtime.Policy{}, &cp, alwaysAck)),
		boundSub(all, x, "", []string{"order.#"}, handler("Job", runtime.Policy{}, &ca, alwaysAck)))
	script := `
import sys, pika
params = pika.URLParameters(sys.argv[1])
conn = pika.BlockingConnection(params)
ch = conn.channel()
ch.confirm_delivery()
for i, key in enumerate(["order.placed", "order.cancelled"]):
    ch.basic_publish(exchange=sys.argv[2], routing_key=key, body=('{"id": %d}' % (i + 1)).encode(),
        properties=pika.BasicProperties(type="Job", message_id="foreign-%d" % (i + 1), content_type="application/json", delivery_mode=2),
        mandatory=True)
conn.close()
`
	if out, err := exec.Command(python, "-c", script, brokerURL(), x).CombinedOutput(); err != nil {
		t.Fatalf("the python publisher failed: %v\n%s", err, out)
	}
	testkit.Eventually(t, "the handlers ran", func() bool { return cp.len() >= 1 && ca.len() >= 2 })
	testkit.Eventually(t, "the queues are empty", settled(adm, placed, all))
	if got := cp.sortedIDs(); !slices.Equal(got, []int{1}) {
		t.Errorf("order.placed saw %v, want [1]", got)
	}
	if got := ca.sortedIDs(); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("order.# saw %v, want [1 2]", got)
	}
	if md := cp.metadata(); len(md) == 0 || md[0].MessageID != "foreign-1" || md[0].MessageType != "Job" {
		t.Errorf("metadata %+v", md)
	}
}

func TestExchangesTopology(t *testing.T) {
	subs := []*runtime.Subscription{
		{Name: "a", Exchange: "orders", Bindings: []string{"order.*", "order.#"}},
		{Name: "b"},
		{Name: "c", Exchange: "events", ExchangeType: runtime.FanoutExchange},
		{Name: "d", Exchange: "orders", ExchangeType: runtime.TopicExchange, Bindings: []string{"order.placed"}},
	}
	got, err := exchanges(subs)
	if err != nil {
		t.Fatal(err)
	}
	want := []exchangeSpec{
		{name: "orders", kind: runtime.TopicExchange, subscription: "a", bindings: []bindingSpec{{"a", "order.*"}, {"a", "order.#"}, {"d", "order.placed"}}},
		{name: "events", kind: runtime.FanoutExchange, subscription: "c", bindings: []bindingSpec{{"c", ""}}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("exchanges = %+v\nwant %+v", got, want)
	}
}

// pikaPython returns a python3 that imports pika: the first python3 on
// PATH, else the system's. It fails the test when there is none.
func pikaPython(t *testing.T) string {
	t.Helper()
	var tried []string
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(p)
		if err != nil {
			continue
		}
		out, err := exec.Command(path, "-c", "import pika").CombinedOutput()
		if err == nil {
			return path
		}
		tried = append(tried, fmt.Sprintf("%s: %v %s", path, err, out))
	}
	t.Fatalf("this test needs python3 with pika (apt-get install -y python3-pika); tried:\n%s", strings.Join(tried, "\n"))
	return ""
}

// The Broker publishes through an exchange with runtime.Publish to a runtime.Exchange,
// mandatory: an event no queue is bound for is an error wrapping
// ErrUnroutable, unless it allows being dropped.
func TestPublishToAnExchange(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	x := adm.exchange("publish")
	q := adm.queue("publish")
	var c calls
	b := newTestBroker()
	runApp(t, b, boundSub(q, x, "", []string{"order.*"}, handler("Job", runtime.Policy{}, &c, alwaysAck)))
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := runtime.Publish(ctx, b, runtime.Exchange(x, "order.placed"), "Job", job{ID: 1}); err != nil {
		t.Fatalf("publish a routed event: %v", err)
	}
	if err := runtime.Publish(ctx, b, runtime.Exchange(x, "invoice.sent"), "Job", job{ID: 2}, runtime.WithRoutingKey("order.cancelled")); err != nil {
		t.Fatalf("publish with a routing key: %v", err)
	}
	err := runtime.Publish(ctx, b, runtime.Exchange(x, "invoice.sent"), "Job", job{ID: 3})
	if !errors.Is(err, ErrUnroutable) || !strings.Contains(err.Error(), "runtime.AllowUnroutable()") || !strings.Contains(err.Error(), `exchange "`+x+`" with routing key "invoice.sent"`) {
		t.Errorf("publish an unroutable event: %v, want ErrUnroutable saying how to allow it", err)
	}
	if err := runtime.Publish(ctx, b, runtime.Exchange(x, "invoice.sent"), "Job", job{ID: 4}, runtime.AllowUnroutable()); err != nil {
		t.Errorf("publish an unroutable event that allows it: %v", err)
	}
	testkit.Eventually(t, "the handler ran twice", func() bool { return c.len() >= 2 })
	testkit.Eventually(t, "the queue is empty", settled(adm, q))
	if got := c.sortedIDs(); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("saw %v, want [1 2]", got)
	}
	// Publishing to a queue by name is as before.
	if err := runtime.Publish(ctx, b, runtime.Queue(q), "Job", job{ID: 5}); err != nil {
		t.Errorf("publish to a queue: %v", err)
	}
	testkit.Eventually(t, "the handler ran a third time", func() bool { return c.len() >= 3 })
}
