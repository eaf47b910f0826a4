package console_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/deadletter/console"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

// After the broker closed the console's connection (as a restart does),
// the next page and the next action work: the queue connects again.
func TestTheConsoleConnectsAgainAfterTheBrokerClosedItsConnection(t *testing.T) {
	rurl := testkit.RabbitMQURL()
	conn := testkit.DialRabbitMQ(t, rurl)
	q := testkit.UniqueName("streamgen-test.console.reconnect")
	deleteQueues(t, conn, q)
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	for i, l := range orders().snapshot() {
		if err := ch.Publish("", q, false, false, amqp.Publishing{Headers: amqp.Table(l.Headers), Type: l.Type(), MessageId: l.MessageID(), Body: l.Body}); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	_ = ch.Close()
	for ready(t, conn, q) < 4 {
		time.Sleep(10 * time.Millisecond)
	}
	dq, err := rabbitmq.DialDeadLetterQueue(context.Background(), rurl, q)
	if err != nil {
		t.Fatal(err)
	}
	s := newSite(t, console.Options{Fresh: time.Hour}, dq)
	s.signIn()
	if a := s.getRead("/"); !strings.Contains(a.body, `data-queue="`+q+`">4<`) || !strings.Contains(a.body, "Read 4 letters at ") {
		t.Fatalf("the overview:\n%s", a.body)
	}
	testkit.CloseConnection(t, "streamgen dlq "+q+" (dead letters)")
	a := s.get("/")
	if !strings.Contains(a.body, `data-queue="`+q+`">4<`) || strings.Contains(a.body, `class="error"`) {
		t.Fatalf("the overview after the connection closed:\n%s", a.body)
	}
	var key string // the group page and the confirm page are served from the index
	if m := letterKey.FindStringSubmatch(s.get("/q/" + url.PathEscape(q) + "/g/" + groupOf(orders(), "r1")).body); m != nil {
		key = m[1]
	}
	if key == "" {
		t.Fatal("the refund group lists no letter")
	}
	_, form := s.confirm(q, "action=purge&key="+key)
	testkit.CloseConnection(t, "streamgen dlq "+q+" (dead letters)")
	if a := s.post("/q/"+url.PathEscape(q)+"/purge", form); !strings.Contains(a.body, "1 letter purged") || !strings.Contains(a.body, `id="left">3<`) {
		t.Fatalf("the purge after the connection closed:\n%s", a.body)
	}
	s.getRead("/") // the reading after the purge holds the letters a moment
	if n := ready(t, conn, q); n != 3 {
		t.Fatalf("%s holds %d letters after the purge", q, n)
	}
}
