package console_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/deadletter/console"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

var screenshot = flag.String("screenshot", "", "write a screenshot of the overview to this PNG `file` (docs/console.png, which docs/dead-letters.md shows)")

// orderService is a real subscription on RabbitMQ: its Card handler
// fails ("order N: card declined") until fixed, its Refund handler
// always does; both park on the dead-letter queue after 2 attempts.
type orderService struct {
	app    *runtime.App
	broker *rabbitmq.Broker
	mu     sync.Mutex
	fixed  bool
	acked  map[string]int // message id: the attempt it was acked on
}

func startOrderService(t *testing.T, url, source, dlq string) *orderService {
	t.Helper()
	s := &orderService{broker: rabbitmq.New(url, rabbitmq.WithConnectionName(source)), acked: map[string]int{}}
	card := func(_ context.Context, c *struct{ Order int }, md runtime.Metadata) runtime.Outcome {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.fixed {
			return runtime.OutcomeOf(fmt.Errorf("order %d: card declined", c.Order))
		}
		s.acked[md.MessageID] = md.Attempt
		return runtime.Ack()
	}
	refund := func(_ context.Context, _ *struct{ Order int }, md runtime.Metadata) runtime.Outcome {
		return runtime.OutcomeOf(fmt.Errorf("refund of %s failed: gateway timeout", md.MessageID))
	}
	policy := runtime.Policy{MaxAttempts: 2, DeadLetter: dlq}
	sub := &runtime.Subscription{Name: source, Broker: runtime.RabbitMQ, RetryDelays: []time.Duration{20 * time.Millisecond},
		Handlers: []runtime.Handler{runtime.Handle("Card", policy, card), runtime.Handle("Refund", policy, refund)}}
	s.app = runtime.NewApp("orders", runtime.WithLogger(slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))))
	s.app.Mount(s.broker, sub)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.app.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("the App stopped with %v", err)
		}
	})
	select {
	case <-s.app.Ready():
	case err := <-done:
		t.Fatalf("the App did not start: %v", err)
	case <-time.After(testkit.Patience):
		t.Fatal("the App did not start in time")
	}
	return s
}

func (s *orderService) send(t *testing.T, queue, typ, id string, order int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
	defer cancel()
	if err := runtime.Publish(ctx, s.broker, runtime.Queue(queue), typ, struct{ Order int }{order}, runtime.WithMessageID(id)); err != nil {
		t.Fatalf("publish %s: %v", id, err)
	}
}

func (s *orderService) handled() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.acked {
		out[k] = v
	}
	return out
}

// ready is the number of messages ready in q.
func ready(t *testing.T, conn *amqp.Connection, q string) int {
	t.Helper()
	return testkit.QueueInfo(t, conn, q).Messages
}

func deleteQueues(t *testing.T, conn *amqp.Connection, names ...string) {
	t.Cleanup(func() {
		ch, err := conn.Channel()
		if err != nil {
			return
		}
		defer func() { _ = ch.Close() }()
		for _, n := range names {
			_, _ = ch.QueueDelete(n, false, false, false)
		}
	})
}

// The operator opens the overview of a real service's dead-letter queue
// on RabbitMQ, sees its groups and chart, clicks into the card group and
// replays it once the handler is fixed; the subscription handles every
// replayed message as a new one, and the count drops to the refunds.
// Then one refund is purged.
func TestBrowserReplayAGroupToARealSubscriptionAndPurgeALetter(t *testing.T) {
	url := testkit.RabbitMQURL()
	conn := testkit.DialRabbitMQ(t, url)
	source := testkit.UniqueName("streamgen-test.console.orders")
	dlq := source + ".parked"
	deleteQueues(t, conn, source, source+".retry", source+".suspect", dlq)
	svc := startOrderService(t, url, source, dlq)
	const cards, refunds = 30, 4
	for i := range cards {
		svc.send(t, source, "Card", "card-"+strconv.Itoa(i), 1000+i)
	}
	for i := range refunds {
		svc.send(t, source, "Refund", "refund-"+strconv.Itoa(i), i)
	}
	deadline := time.Now().Add(testkit.Patience)
	for ready(t, conn, dlq) < cards+refunds {
		if time.Now().After(deadline) {
			t.Fatalf("the service parked %d of %d messages", ready(t, conn, dlq), cards+refunds)
		}
		time.Sleep(20 * time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
	defer cancel()
	logs := &testkit.SyncBuffer{}
	c, err := console.ForApp(ctx, svc.app, rabbitmq.DeadLetterOpener(url), console.Options{Token: token,
		Logger: slog.New(slog.NewTextHandler(logs, nil)), Redact: rabbitmq.RedactURL})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(func() { srv.Close(); _ = c.Close() })

	b := newBrowser(t)
	b.signIn(srv.URL, token)
	b.waitRead()
	main := b.text("main")
	for _, want := range []string{dlq, "Parked by " + source, "order <n>: card declined", "refund of refund-<n> failed: gateway timeout", "Card", "Refund"} {
		if !strings.Contains(main, want) {
			t.Fatalf("the overview lacks %q:\n%s", want, main)
		}
	}
	if got := b.text(".count"); got != strconv.Itoa(cards+refunds) {
		t.Fatalf("the overview counts %s letters", got)
	}
	if n := eval[int](b, `document.querySelectorAll("figure.chart svg rect.bar").length`); n == 0 {
		t.Fatal("the overview has no chart")
	}
	if *screenshot != "" {
		png, err := chromedpScreenshot(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(*screenshot, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	svc.mu.Lock()
	svc.fixed = true
	svc.mu.Unlock()
	b.clickXPath(`//a[@class="group" and contains(., "card declined")]`)
	if got := b.text("#group-count"); got != strconv.Itoa(cards) {
		t.Fatalf("the group page counts %s letters", got)
	}
	b.click("#replay-group")
	if got := b.text("#plan"); !strings.HasPrefix(got, fmt.Sprintf("Replay %d of the %d letters", cards, cards+refunds)) {
		t.Fatalf("the confirm page says %q", got)
	}
	b.click("#confirm")
	if got := b.text("#done"); !strings.HasPrefix(got, fmt.Sprintf("%d letters replayed to each letter's source queue", cards)) || b.text("#failed") != "0" {
		t.Fatalf("the result page says %q", got)
	}
	// The count drops while the subscription handles the replays, each
	// as attempt 1 of a new delivery.
	b.open(srv.URL + "/")
	var seen []string
	for deadline := time.Now().Add(testkit.Patience); ; {
		count := b.text(".count")
		if len(seen) == 0 || seen[len(seen)-1] != count {
			seen = append(seen, count)
		}
		if count == strconv.Itoa(refunds) && len(svc.handled()) == cards {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the count went %v; the service handled %d of %d", seen, len(svc.handled()), cards)
		}
		time.Sleep(100 * time.Millisecond)
		b.do("reload", chromedpReload())
	}
	b.waitRead()
	for id, attempt := range svc.handled() {
		if attempt != 1 {
			t.Errorf("%s was handled as attempt %d, not 1", id, attempt)
		}
	}
	if main := b.text("main"); strings.Contains(main, "card declined") {
		t.Fatalf("the overview still shows the card group:\n%s", main)
	}

	// Purge one refund.
	b.clickXPath(`//a[@class="group" and contains(., "refund of")]`)
	b.click("a.letter")
	letterID := b.text("main h1")
	b.click("#purge-letter")
	if got := b.text("#plan"); !strings.HasPrefix(got, fmt.Sprintf("Purge 1 of the %d letters", refunds)) {
		t.Fatalf("the confirm page says %q", got)
	}
	b.click("#confirm")
	if got := b.text("#done"); !strings.HasPrefix(got, "1 letter purged") || b.text("#left") != strconv.Itoa(refunds-1) {
		t.Fatalf("the result page says %q, %s left", got, b.text("#left"))
	}
	// The purge hands the letters it did not take back to the queue; the
	// broker counts them as ready once it has requeued them, which a count
	// read at once can precede (seen on RabbitMQ 4.3: 0 letters).
	testkit.Eventually(t, fmt.Sprintf("%s to hold %d letters after the purge of %s", dlq, refunds-1, letterID), func() bool {
		return ready(t, conn, dlq) == refunds-1
	})
	log := logs.String()
	for _, want := range []string{"dlq console: replay", "replayed=30", "dlq console: purge", "purged=1", "token=" + console.Fingerprint(token)} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, token) || strings.Contains(log, "guest:guest") {
		t.Errorf("the log holds the token or the broker password:\n%s", log)
	}
}
