package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/deadletter/console"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

// pausedReplay is a RabbitMQ dead-letter queue whose replay stops, once
// it replayed its at-th letter, until the test let it go on (go on): the
// test closes the queue's connection meanwhile, as a broker restart
// would mid-way through the replay.
type pausedReplay struct {
	*rabbitmq.DeadLetterQueue
	at      int
	reached chan struct{} // closed when the replay stops
	goOn    chan struct{} // closed by the test
	once    sync.Once
}

func (p *pausedReplay) Replay(ctx context.Context, sel deadletter.Selection, opts deadletter.ReplayOptions) (deadletter.Report, error) {
	ctx = deadletter.WithProgress(ctx, func(read int) {
		if read == p.at {
			p.once.Do(func() {
				close(p.reached)
				<-p.goOn
			})
		}
	})
	return p.DeadLetterQueue.Replay(ctx, sel, opts)
}

// A replay from the console whose connection the broker closes mid-way is
// answered: the result page says the replay stopped, that the letters not
// replayed are still parked and to run it again; and running it again from
// the console moves the rest. (Before package rabbitmq published on its
// confirm channel, the replay read its closed channel of returns in a loop:
// the POST was never answered, and the console spun at 77-100% CPU.)
func TestAReplayWhoseConnectionIsLostIsAnsweredAndARerunFinishesIt(t *testing.T) {
	rurl := testkit.RabbitMQURL()
	conn := testkit.DialRabbitMQ(t, rurl)
	q := testkit.UniqueName("streamgen-test.console.replaylost")
	target := q + ".target"
	deleteQueues(t, conn, q, target)
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ch.Close() }()
	for _, name := range []string{q, target} {
		if _, err := ch.QueueDeclare(name, true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	const n = 1000
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("m-%04d", i)
		if err := ch.Publish("", q, false, false, amqp.Publishing{MessageId: want[i], Type: "Card", Body: []byte("{}")}); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	testkit.Eventually(t, "the letters parked", func() bool { return ready(t, conn, q) == n })
	dq, err := rabbitmq.DialDeadLetterQueue(context.Background(), rurl, q)
	if err != nil {
		t.Fatal(err)
	}
	st := &pausedReplay{DeadLetterQueue: dq, at: 200, reached: make(chan struct{}), goOn: make(chan struct{})}
	s := newSite(t, console.Options{}, st)
	s.signIn()
	s.getRead("/q/" + url.PathEscape(q) + "/")

	_, form := s.confirm(q, "action=replay&all=1&to="+url.QueryEscape(target))
	answered := make(chan answer, 1)
	go func() { answered <- s.postWithin(t, "/q/"+url.PathEscape(q)+"/replay", form, time.Minute) }()
	select {
	case <-st.reached:
	case a := <-answered:
		t.Fatalf("the replay was answered before it reached letter %d: %d\n%s", st.at, a.status, a.body)
	case <-time.After(testkit.Patience):
		t.Fatalf("the replay did not reach letter %d", st.at)
	}
	if closed := testkit.CloseConnections(t, "streamgen dlq "+q); closed != 1 {
		t.Fatalf("%d connections closed, want the replay's", closed)
	}
	close(st.goOn)
	a := <-answered
	if a.status != http.StatusBadGateway || !strings.Contains(a.body, "the replay stopped after") ||
		!strings.Contains(a.body, "still parked") || !strings.Contains(a.body, "run the same replay again") {
		t.Fatalf("the replay whose connection closed was answered %d, want 502 saying to run it again:\n%s", a.status, a.body)
	}

	// Every letter is replayed or parked again; the replay again, from
	// the console, moves those parked.
	testkit.Eventually(t, "every letter replayed or parked", func() bool { return ready(t, conn, q)+ready(t, conn, target) >= n })
	s.getRead("/q/" + url.PathEscape(q) + "/")
	_, form = s.confirm(q, "action=replay&all=1&to="+url.QueryEscape(target))
	if a := s.postWithin(t, "/q/"+url.PathEscape(q)+"/replay", form, time.Minute); a.status != http.StatusOK || !strings.Contains(a.body, `id="failed">0<`) {
		t.Fatalf("the replay run again: %d\n%s", a.status, a.body)
	}
	testkit.Eventually(t, "the dead-letter queue empty", func() bool { return ready(t, conn, q) == 0 })
	var got []string
	for {
		d, ok, err := ch.Get(target, true)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		got = append(got, d.MessageId)
	}
	// A letter whose replay was under way when the connection closed
	// may be replayed twice (at most the replay's window of 256), none
	// is lost.
	if len(got) < n || len(got) > n+256 {
		t.Fatalf("the target holds %d letters after both replays, want %d and at most 256 replayed twice", len(got), n)
	}
	slices.Sort(got)
	if got = slices.Compact(got); !slices.Equal(got, want) {
		t.Fatalf("the target holds %d distinct letters after both replays, want each of the %d", len(got), n)
	}
}

// postWithin posts form to path and returns the answer, failing the test
// when none comes within d.
func (s *site) postWithin(t *testing.T, path string, form url.Values, d time.Duration) answer {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", s.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Error(err)
		return answer{}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := s.client.Do(req)
	if err != nil {
		t.Errorf("POST %s: no answer within %v: %v", path, d, err)
		return answer{}
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b), resp.Header}
}
