package rabbitmq

import (
	"context"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
)

// startupError runs an App that must fail to start, and returns its error.
func startupError(t *testing.T, subs ...*runtime.Subscription) error {
	t.Helper()
	a := startApp(t, newTestBroker(), 10*time.Second, subs...)
	select {
	case <-a.done:
		if a.err == nil {
			t.Fatal("the App ran and stopped without an error")
		}
		return a.err
	case <-a.app.Ready():
		t.Fatal("the App started; want a startup error")
	case <-time.After(patience):
		t.Fatal("the App neither started nor failed")
	}
	return nil
}

func TestStartupFailsOnAWaitQueueWithAnotherTTL(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("ttl")
	adm.declare(q+".retry", amqp.Table{"x-message-ttl": int64(10000), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": q})
	var c calls
	err := startupError(t, sub(q, 5*time.Second, handler("Job", runtime.Policy{MaxAttempts: 3}, &c, alwaysAck)))
	want := "wait queue " + q + ".retry exists with x-message-ttl 10000 ms but retry_delay is 5s: delete it when empty (rabbitmqctl delete_queue " + q + ".retry) or keep retry_delay=10s"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("startup error:\n%v\nwant it to say:\n%s", err, want)
	}
	var te *TopologyError
	if !errors.As(err, &te) || te.Queue != q+".retry" || te.Argument != "x-message-ttl" || te.Have != "10000" || te.Want != "5000" {
		t.Errorf("TopologyError = %+v", te)
	}
	var ae *amqp.Error
	if !errors.As(err, &ae) || ae.Code != amqp.PreconditionFailed {
		t.Errorf("the broker's 406 is not wrapped: %v", err)
	}
}

// Every mismatching queue is reported at once: after a 406 closes the
// channel, declaring goes on on a new one.
func TestStartupReportsEveryMismatchingQueue(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("dlargs")
	adm.declare(q+".dl", amqp.Table{"x-max-length": int64(10)})
	adm.declare(q+".retry", amqp.Table{"x-message-ttl": int64(10000), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "elsewhere"})
	var c calls
	err := startupError(t, sub(q, 10*time.Second, handler("Job", runtime.Policy{MaxAttempts: 2, DeadLetter: q + ".dl"}, &c, alwaysAck)))
	t.Log(err)
	for _, want := range []string{
		"dead-letter queue " + q + ".dl exists with x-max-length 10 but subscription " + q + " declares it with x-max-length not set: delete it when empty (rabbitmqctl delete_queue " + q + ".dl) so that it is declared as a plain durable queue, or name another dead_letter",
		"wait queue " + q + ".retry exists with x-dead-letter-routing-key elsewhere but subscription " + q + " declares it with x-dead-letter-routing-key " + q + ": delete it when empty (rabbitmqctl delete_queue " + q + ".retry)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("startup error:\n%v\nwant it to say:\n%s", err, want)
		}
	}
	if strings.Contains(err.Error(), "guest@") {
		t.Errorf("startup error shows credentials: %v", err)
	}
}

func TestStartupFailsWhenTheQueueHasAnotherType(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("type")
	adm.declare(q, nil)
	var c calls
	s := sub(q, 0, handler("Job", runtime.Policy{}, &c, alwaysAck))
	s.QueueType = runtime.QuorumQueue
	err := startupError(t, s)
	// RabbitMQ 4 reports the type a queue was given by default; 3.x reports
	// none.
	have := "x-queue-type not set"
	if adm.version().atLeast(4, 0) {
		have = "x-queue-type classic"
	}
	want := "queue " + q + " exists with " + have + " but subscription " + q + " declares it with x-queue-type quorum: a queue's type never changes"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("startup error:\n%v\nwant it to say:\n%s", err, want)
	}
}

func TestStartupFailsWhenTheBrokerIsUnreachable(t *testing.T) {
	testkit.NoLeaks(t)
	var c calls
	b := New("amqp://guest:"+secret+"@127.0.0.1:1/", WithConnectionName("unreachable"))
	a := startApp(t, b, 10*time.Second, sub("never-declared", 0, handler("Job", runtime.Policy{}, &c, alwaysAck)))
	select {
	case <-a.done:
	case <-time.After(patience):
		t.Fatal("the App did not fail")
	}
	err := a.err
	if err == nil || !strings.Contains(err.Error(), "rabbitmq: connect to amqp://guest:xxxxx@127.0.0.1:1/") {
		t.Errorf("startup error = %v, want one naming the redacted URL", err)
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("startup error shows the password: %v", err)
	}
}

// A subscription mounted twice is refused by the App before anything is
// declared.
func TestASubscriptionMountedTwiceIsRefusedBeforeAnythingIsDeclared(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("twice")
	var c calls
	consumer := sub(q, 0, handler("Job", runtime.Policy{}, &c, alwaysAck))
	b := newTestBroker()
	app := runtime.NewApp("twice")
	app.Mount(b, consumer, consumer)
	err := app.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), `subscription "`+q+`" is mounted twice`) {
		t.Errorf("Run = %v, want the duplicate refused", err)
	}
	if adm.exists(q) {
		t.Error("the queue was declared for a refused start")
	}
	if err := b.Close(); err != nil {
		t.Errorf("close after a refused start: %v", err)
	}
}

// Queues declared before streamgen dead-lettered a subscription's queue
// and set its delivery limit (an earlier release, or by hand) are used as
// they are: the Broker starts, says what they lack and how to add it
// without deleting them, and the policy it suggests gives them what they
// lack. Queues with dead-letter arguments of an operator's own keep them.
func TestQueuesDeclaredWithoutTheDeadLetterArgumentsAreUsedAsTheyAre(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("before-dlx")
	adm.declare(q, amqp.Table{"x-queue-type": "quorum"})
	adm.declare(q+".dl", amqp.Table{"x-queue-type": "quorum"})
	var c calls
	s := sub(q, time.Second, handler("Job", runtime.Policy{MaxAttempts: 3, DeadLetter: q + ".dl"}, &c, alwaysAck))
	s.QueueType = runtime.QuorumQueue
	a := runApp(t, newTestBroker(), s)
	publishJob(t, adm, q, "Job", job{ID: 1})
	testkit.Eventually(t, "the job to be handled", func() bool { return a.stats(q).Acked == 1 })

	lines := a.logs.Find(slog.LevelWarn, "rabbitmq: queue exists without arguments streamgen now declares it with; using it as it is")
	if len(lines) != 1 || lines[0].Attrs["queue"] != q ||
		lines[0].Attrs["lacks"] != "x-dead-letter-exchange,x-dead-letter-routing-key,x-dead-letter-strategy,x-overflow,x-delivery-limit" {
		t.Fatalf("want one warning naming %s and what it lacks; logged:\n%s", q, a.logs)
	}
	fix := lines[0].Attrs["fix"]
	wantPolicy := `'{"dead-letter-exchange":"","dead-letter-routing-key":"` + q + `.dl","dead-letter-strategy":"at-least-once","delivery-limit":3,"overflow":"reject-publish"}'`
	if !strings.Contains(fix, "rabbitmqctl set_policy streamgen-"+q+" '^"+regexp.QuoteMeta(q)+"$' "+wantPolicy+" --apply-to queues") {
		t.Errorf("fix = %s\nwant the policy %s", fix, wantPolicy)
	}
	dl := a.logs.Find(slog.LevelWarn, "rabbitmq: dead-letter queue exists without arguments streamgen now declares it with; using it as it is")
	if adm.version().defaultDeliveryLimit() {
		if len(dl) != 1 || dl[0].Attrs["queue"] != q+".dl" || dl[0].Attrs["lacks"] != "x-delivery-limit" ||
			!strings.Contains(dl[0].Attrs["fix"], `'{"delivery-limit":-1}'`) {
			t.Errorf("on RabbitMQ 4, want a warning that %s.dl has the default delivery limit; logged:\n%s", q, a.logs)
		}
	} else if len(dl) != 0 {
		t.Errorf("RabbitMQ 3 has no default delivery limit, yet: %v", dl)
	}

	// The policy the warning suggests, applied as it says.
	setPolicy(t, q, strings.Trim(wantPolicy, "'"))
	testkit.Eventually(t, "the policy to apply", func() bool {
		return strings.Contains(rabbitmqctl(t, "list_queues", "-q", "--no-table-headers", "name", "policy"), q+"\tstreamgen-test-")
	})
	// Refuse a message as a crashing worker would (the worker, which
	// would take it, stopped first), until the broker dead-letters it.
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	adm.publish(q, amqp.Publishing{Type: "Job", Body: []byte(`{"id":2}`), MessageId: "r-1"})
	rejected := false
	for deadline := time.Now().Add(patience); !rejected && time.Now().Before(deadline); {
		_ = adm.channel(func(ch *amqp.Channel) error {
			d, ok, err := ch.Get(q, false)
			if err != nil || !ok {
				rejected = adm.ready(q+".dl") == 1
				time.Sleep(10 * time.Millisecond)
				return err
			}
			return d.Reject(true)
		})
	}
	if d, ok := adm.get(q + ".dl"); !ok || d.MessageId != "r-1" {
		t.Errorf("with the suggested policy the broker parks a message past the delivery limit; %s.dl holds %q (%v)", q, d.MessageId, ok)
	}
}

// A queue that dead-letters elsewhere, as an operator declared it, keeps
// doing so.
func TestAQueueWithItsOwnDeadLetterExchangeKeepsIt(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("own-dlx", ".dl", ".mine")
	adm.declare(q, amqp.Table{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": q + ".mine"})
	var c calls
	a := runApp(t, newTestBroker(), sub(q, 0, handler("Job", runtime.Policy{DeadLetter: q + ".dl"}, &c, alwaysAck)))
	if lines := a.logs.Find(slog.LevelInfo, "rabbitmq: queue exists with dead-letter arguments of its own; using it as declared"); len(lines) != 1 || lines[0].Attrs["queue"] != q {
		t.Errorf("want one line saying %s keeps its own dead-letter arguments; logged:\n%s", q, a.logs)
	}
	if lines := a.logs.Find(slog.LevelWarn, "rabbitmq: queue exists without arguments streamgen now declares it with; using it as it is"); len(lines) != 0 {
		t.Errorf("a queue with dead-letter arguments of its own is no queue that lacks them: %v", lines)
	}
	publishJob(t, adm, q, "Job", job{ID: 1})
	testkit.Eventually(t, "the job to be handled", func() bool { return a.stats(q).Acked == 1 })
}
