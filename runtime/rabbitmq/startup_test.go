package rabbitmq

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testkit"
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
	want := "queue " + q + " exists with x-queue-type not set but subscription " + q + " declares it with x-queue-type quorum: a queue's type never changes"
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

// Start checks its consumers on its own, for callers without an App: a
// subscription given twice is refused before anything is declared.
func TestStartRefusesASubscriptionGivenTwice(t *testing.T) {
	testkit.NoLeaks(t)
	adm := newAdmin(t)
	q := adm.queue("twice")
	var c calls
	consumer := sub(q, 0, handler("Job", runtime.Policy{}, &c, alwaysAck))
	b := newTestBroker()
	err := b.Start(context.Background(), runtime.Env{}, []*runtime.Subscription{consumer, consumer})
	if err == nil || !strings.HasPrefix(err.Error(), "rabbitmq: ") || !strings.Contains(err.Error(), `subscription "`+q+`" is mounted twice`) {
		t.Errorf("Start = %v, want the duplicate refused", err)
	}
	if adm.exists(q) {
		t.Error("the queue was declared for a refused start")
	}
	if err := b.Close(); err != nil {
		t.Errorf("close after a refused start: %v", err)
	}
}
