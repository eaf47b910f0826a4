package demo

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/brokerurl"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
)

// broker connects to the test broker, failing loudly when it does not
// answer: these tests are never skipped.
func broker(t *testing.T) (string, *amqp.Channel) {
	t.Helper()
	url := brokerurl.RabbitMQ()
	ch, err := testkit.DialRabbitMQ(t, url).Channel()
	if err != nil {
		t.Fatal(err)
	}
	return url, ch
}

// uniqueQueues declares n durable queues with names unique to this test and
// deletes them when it ends.
func uniqueQueues(t *testing.T, ch *amqp.Channel, n int) []string {
	t.Helper()
	prefix := "streamgen-demo-test-" + rand.Text()[:10]
	var names []string
	for i := range n {
		q := fmt.Sprintf("%s.%d", prefix, i)
		if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		names = append(names, q)
	}
	t.Cleanup(func() {
		for _, q := range names {
			if _, err := ch.QueueDelete(q, false, false, false); err != nil {
				t.Errorf("delete %s: %v", q, err)
			}
		}
	})
	return names
}

func publish(t *testing.T, ch *amqp.Channel, queue, id string, headers amqp.Table) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ch.PublishWithContext(ctx, "", queue, false, false, amqp.Publishing{
		MessageId: id, Type: "Order", Headers: headers, Body: []byte(`{"id":"` + id + `"}`),
	}); err != nil {
		t.Fatal(err)
	}
}

// depth returns how many messages are ready in queue, waiting for a
// publish to land.
func depth(t *testing.T, ch *amqp.Channel, queue string) int {
	t.Helper()
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return q.Messages
}

func waitDepth(t *testing.T, ch *amqp.Channel, queue string, want int) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("%s to hold %d messages", queue, want), func() bool { return depth(t, ch, queue) == want })
}

func TestPeekReadsTheMessagesAndLeavesThem(t *testing.T) {
	url, ch := broker(t)
	q := uniqueQueues(t, ch, 1)[0]
	publish(t, ch, q, "m-1", amqp.Table{runtime.HeaderDeadLetterReason: "failed: boom", runtime.HeaderDeadLetterAttempts: "5"})
	publish(t, ch, q, "m-2", amqp.Table{"count": int32(3)})
	publish(t, ch, q, "m-3", nil)
	waitDepth(t, ch, q, 3)

	for round := range 2 {
		got, err := Peek(url, q)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range got {
			ids = append(ids, m.MessageID)
		}
		if !slices.Equal(ids, []string{"m-1", "m-2", "m-3"}) {
			t.Fatalf("peek %d read %v, want m-1, m-2, m-3 in order", round+1, ids)
		}
		if h := got[0].Headers; h[runtime.HeaderDeadLetterReason] != "failed: boom" || h[runtime.HeaderDeadLetterAttempts] != "5" {
			t.Errorf("headers of m-1: %v", h)
		}
		if got[1].Headers["count"] != "3" || got[1].Type != "Order" || string(got[1].Body) != `{"id":"m-2"}` {
			t.Errorf("m-2 read as %+v", got[1])
		}
	}
	waitDepth(t, ch, q, 3)
}

func TestPeekOfAnEmptyQueueReadsNothing(t *testing.T) {
	url, ch := broker(t)
	got, err := Peek(url, uniqueQueues(t, ch, 1)[0])
	if err != nil || len(got) != 0 {
		t.Fatalf("Peek = %v, %v; want nothing", got, err)
	}
}

func TestPurgeEmptiesTheQueuesThatExist(t *testing.T) {
	url, ch := broker(t)
	qs := uniqueQueues(t, ch, 2)
	publish(t, ch, qs[0], "a", nil)
	publish(t, ch, qs[0], "b", nil)
	publish(t, ch, qs[1], "c", nil)
	waitDepth(t, ch, qs[0], 2)
	waitDepth(t, ch, qs[1], 1)
	n, err := Purge(url, []string{qs[0], qs[0] + ".missing", qs[1]})
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("Purge removed %d messages, want 3", n)
	}
	if depth(t, ch, qs[0]) != 0 || depth(t, ch, qs[1]) != 0 {
		t.Error("the queues are not empty after Purge")
	}
}

func TestDeleteRemovesQueues(t *testing.T) {
	url, ch := broker(t)
	q := "streamgen-demo-test-" + rand.Text()[:10]
	if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := Delete(url, []string{q, q + ".missing"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclarePassive(q, true, false, false, false, nil); err == nil {
		t.Fatalf("%s still exists after Delete", q)
	}
}

func TestAnUnreachableBrokerIsAnErrorWithoutThePassword(t *testing.T) {
	_, err := Peek("amqp://user:s3cret@127.0.0.1:1/", "q")
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("Peek on a closed port = %v, want an error naming the broker without its password", err)
	}
}

func TestDeleteExchangesRemovesThem(t *testing.T) {
	url, ch := broker(t)
	x := "streamgen-demo-test-" + rand.Text()[:10]
	if err := ch.ExchangeDeclare(x, "topic", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := DeleteExchanges(url, []string{x, x + ".missing"}); err != nil {
		t.Fatal(err)
	}
	if err := ch.ExchangeDeclarePassive(x, "topic", true, false, false, false, nil); err == nil {
		t.Fatalf("%s still exists after DeleteExchanges", x)
	}
}
