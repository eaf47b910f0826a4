package examples_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/brokerurl"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

type ladderJob struct {
	ID int `json:"id"`
}

// The caveat on RabbitMQ ladders of docs/operating.md, as it says: a service whose
// ladder's steps changed starts cleanly, the old step queue stays, the copy
// waiting in it still drains back with its retry count, and
// rabbitmqctl delete_queue removes the queue.
func TestReadmeChangedLadderLosesNothing(t *testing.T) {
	testkit.NoLeaks(t)
	url := brokerurl.RabbitMQ()
	conn := testkit.DialRabbitMQ(t, url)
	q := fmt.Sprintf("readme-ladder-%d", time.Now().UnixNano())

	var mu sync.Mutex
	var attempts []int
	handler := runtime.Handle("Job", runtime.Policy{MaxAttempts: 3}, func(_ context.Context, _ *ladderJob, md runtime.Metadata) runtime.Outcome {
		mu.Lock()
		attempts = append(attempts, md.Attempt)
		mu.Unlock()
		if md.Attempt == 1 {
			return runtime.Retry()
		}
		return runtime.Ack()
	})
	handled := func() []int {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(attempts)
	}
	// The old ladder's first step outlasts the stop of the first service,
	// so its copy is still waiting when the second one starts.
	oldSub := &runtime.Subscription{Name: q, Broker: runtime.RabbitMQ, RetryDelays: []time.Duration{5 * time.Second, 10 * time.Second}, Handlers: []runtime.Handler{handler}}
	newSub := &runtime.Subscription{Name: q, Broker: runtime.RabbitMQ, RetryDelays: []time.Duration{6 * time.Second, 10 * time.Second}, Handlers: []runtime.Handler{handler}}
	oldStep := q + ".retry.5s"
	t.Cleanup(func() {
		ch, err := conn.Channel()
		if err != nil {
			t.Error(err)
			return
		}
		defer ch.Close()
		for _, name := range rabbitmq.QueueNames(oldSub, newSub) {
			if _, err := ch.QueueDelete(name, false, false, false); err != nil {
				t.Errorf("delete %s: %v", name, err)
			}
		}
	})
	queueExists := func(name string) bool {
		t.Helper()
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		defer ch.Close()
		_, err = ch.QueueDeclarePassive(name, true, false, false, false, nil)
		var aerr *amqp.Error
		if err != nil && (!errors.As(err, &aerr) || aerr.Code != amqp.NotFound) {
			t.Fatalf("look for %s: %v", name, err)
		}
		return err == nil
	}

	logs := streamtest.NewLogRecorder(nil)
	oldBroker := rabbitmq.New(url, rabbitmq.WithConnectionName(q+"-old"))
	oldApp := runtime.NewApp("ladder-old", runtime.WithLogger(logs.Logger()))
	oldApp.Mount(oldBroker, oldSub)
	stopOld := streamtest.RunApp(t, oldApp)
	if err := runtime.Publish(t.Context(), oldBroker, runtime.Queue(q), "Job", ladderJob{ID: 1}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the first delivery to be retried", func() bool { s := oldApp.Stats(); return len(s) == 1 && s[0].Subscription == q && s[0].Retried == 1 })
	if err := stopOld(); err != nil {
		t.Fatal(err)
	}
	if got := handled(); !slices.Equal(got, []int{1}) {
		t.Fatalf("the old service handled attempts %v, want [1] (its copy should still wait in %s)", got, oldStep)
	}

	newBroker := rabbitmq.New(url, rabbitmq.WithConnectionName(q+"-new"))
	newApp := runtime.NewApp("ladder-new", runtime.WithLogger(logs.Logger()))
	newApp.Mount(newBroker, newSub)
	stopNew := streamtest.RunApp(t, newApp) // fails the test unless it starts cleanly
	if !queueExists(oldStep) || !queueExists(q+".retry.6s") {
		t.Fatalf("want both %s (left behind) and %s (declared)", oldStep, q+".retry.6s")
	}
	testkit.Eventually(t, "the waiting copy to drain back and be handled", func() bool { return len(handled()) == 2 })
	if got := handled(); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("attempts %v, want [1 2]: the copy keeps its retry count", got)
	}
	if err := stopNew(); err != nil {
		t.Fatal(err)
	}

	// The command docs/operating.md gives.
	testkit.Rabbitmqctl(t, "delete_queue", oldStep)
	if queueExists(oldStep) {
		t.Errorf("%s is still there after rabbitmqctl delete_queue", oldStep)
	}
	if t.Failed() {
		t.Logf("logs:\n%s", strings.TrimSpace(logs.String()))
	}
}
