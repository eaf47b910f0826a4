package rabbitmq_test

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/deadletter"
)

// parkedByService runs the test service on a fresh queue and parks four
// letters through it: two cards declined for different orders (c-1, c-2),
// a refund that failed (r-1) and a poison card (p-1). It returns the
// service, its queue and its dead-letter queue.
func parkedByService(t *testing.T, e *env, qt runtime.QueueType) (*service, string, string) {
	t.Helper()
	q := e.name("svc")
	dl := q + ".dl"
	s := e.startService(q, dl, qt, 3)
	s.send(t, q, "Card", "c-1", card{Order: 123}, runtime.WithHeader("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"), runtime.WithProperties(runtime.Properties{CorrelationID: "corr-1"}))
	s.send(t, q, "Card", "c-2", card{Order: 456})
	s.send(t, q, "Refund", "r-1", card{Order: 7})
	e.publish(q, amqp.Publishing{MessageId: "p-1", Type: "Card", ContentType: "application/json", Body: []byte("{not json")})
	testkit.Eventually(t, "four letters parked", func() bool { return e.ready(dl) == 4 })
	return s, q, dl
}

func letters(t *testing.T, e *env, dl string, sel deadletter.Selection) []*deadletter.Letter {
	t.Helper()
	var out []*deadletter.Letter
	if err := e.queue(dl).Select(e.ctx, sel, func(l *deadletter.Letter) error { out = append(out, l); return nil }); err != nil {
		t.Fatalf("select %+v: %v", sel, err)
	}
	return out
}

// parkedBy returns the ids of the letters whose park time is picked.
func parkedBy(ls []*deadletter.Letter, picked func(time.Time) bool) []string {
	out := []string{}
	for _, l := range ls {
		if picked(l.ParkedAt) {
			out = append(out, l.MessageID())
		}
	}
	sort.Strings(out)
	return out
}

func letterIDs(ls []*deadletter.Letter) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.MessageID()
	}
	sort.Strings(out)
	return out
}

// Letters parked by a real subscription are explained, grouped by type and
// normalised reason, and picked by every kind of selection.
func TestGroupsAndSelectionsOfLettersARealSubscriptionParked(t *testing.T) {
	t.Parallel()
	for _, qt := range []runtime.QueueType{runtime.ClassicQueue, runtime.QuorumQueue} {
		t.Run(string(qt), func(t *testing.T) {
			e := newEnv(t)
			_, q, dl := parkedByService(t, e, qt)
			all := letters(t, e, dl, deadletter.Selection{})
			byID := map[string]*deadletter.Letter{}
			for _, l := range all {
				byID[l.MessageID()] = l
			}
			c1 := byID["c-1"]
			if c1 == nil || !strings.HasSuffix(c1.Reason, "order 123: card declined") || c1.Source != q || c1.Attempts != 3 || c1.Poison || c1.ByBroker || c1.ParkedAt.IsZero() {
				t.Fatalf("letter c-1 = %+v", c1)
			}
			if p := byID["p-1"]; p == nil || !p.Poison {
				t.Fatalf("letter p-1 = %+v, want a poison letter", p)
			}
			if r := byID["r-1"]; r == nil || r.Attempts != 1 || !strings.Contains(r.Reason, "gateway timeout") {
				t.Fatalf("letter r-1 = %+v", r)
			}

			groups, err := e.queue(dl).Groups(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(groups) != 3 {
				t.Fatalf("groups = %+v, want 3 (cards declined, refund, poison)", groups)
			}
			g := groups[0]
			if g.Count != 2 || !strings.HasSuffix(g.Reason, "order <n>: card declined") || !slices.Equal(g.Types, []string{"Card"}) || !slices.Equal(g.Sources, []string{q}) ||
				g.Oldest.IsZero() || g.Newest.Before(g.Oldest) {
				t.Fatalf("the largest group = %+v", g)
			}
			var table bytes.Buffer
			if err := deadletter.WriteGroups(&table, groups); err != nil {
				t.Fatal(err)
			}
			if !containsAll(table.String(), "GROUP", "COUNT", "order <n>: card declined", g.Key, q) {
				t.Fatalf("the table:\n%s", table.String())
			}

			mid := c1.ParkedAt
			if len(parkedBy(all, func(t time.Time) bool { return t.After(mid) })) == 0 {
				mid = all[0].ParkedAt // c-1 was parked last: cut after the first
			}
			for name, c := range map[string]struct {
				sel  deadletter.Selection
				want []string
			}{
				"group":      {deadletter.Selection{Group: g.Key}, []string{"c-1", "c-2"}},
				"reason":     {deadletter.Selection{Reason: "GATEWAY"}, []string{"r-1"}},
				"type":       {deadletter.Selection{Types: []string{"Refund"}}, []string{"r-1"}},
				"two types":  {deadletter.Selection{Types: []string{"Refund", "Card"}}, []string{"c-1", "c-2", "p-1", "r-1"}},
				"ids":        {deadletter.Selection{IDs: []string{"c-2", "p-1"}}, []string{"c-2", "p-1"}},
				"before":     {deadletter.Selection{Before: mid.Add(time.Millisecond)}, parkedBy(all, func(t time.Time) bool { return !t.After(mid) })},
				"after":      {deadletter.Selection{After: mid}, parkedBy(all, func(t time.Time) bool { return t.After(mid) })},
				"far future": {deadletter.Selection{After: time.Now().Add(time.Hour)}, []string{}},
				"limit":      {deadletter.Selection{Types: []string{"Card"}, Limit: 2}, nil},
				"and":        {deadletter.Selection{Types: []string{"Card"}, Reason: "declined"}, []string{"c-1", "c-2"}},
			} {
				got := letterIDs(letters(t, e, dl, c.sel))
				if c.want == nil {
					if len(got) != 2 {
						t.Errorf("%s: picked %v, want 2 letters", name, got)
					}
					continue
				}
				if !slices.Equal(got, c.want) {
					t.Errorf("%s: picked %v, want %v", name, got, c.want)
				}
			}
			// A passive declare of a quorum queue on 3.x counts a moment late.
			testkit.Eventually(t, "4 letters left after the selections", func() bool { return e.ready(dl) == 4 })
			if got := letterIDs(letters(t, e, dl, deadletter.Selection{})); !slices.Equal(got, []string{"c-1", "c-2", "p-1", "r-1"}) {
				t.Fatalf("after the selections the queue holds %v", got)
			}
		})
	}
}

// A letter parked after its third attempt, replayed, is handled again by
// the real subscription as attempt 1, keeping its body, properties and user headers (trace context
// included), and with x-streamgen-replays counting the replays. It leaves
// the dead-letter queue; the others stay.
func TestReplayToTheSourceResetsTheAttemptBudget(t *testing.T) {
	t.Parallel()
	for _, qt := range []runtime.QueueType{runtime.ClassicQueue, runtime.QuorumQueue} {
		t.Run(string(qt), func(t *testing.T) {
			e := newEnv(t)
			s, _, dl := parkedByService(t, e, qt)
			s.setFail(false)
			rep, err := e.queue(dl).Replay(e.ctx, deadletter.Selection{IDs: []string{"c-1"}}, deadletter.ReplayOptions{})
			if err != nil || rep.Done != 1 || rep.Failed != 0 || rep.Scanned != 4 {
				t.Fatalf("Replay = %+v, %v", rep, err)
			}
			testkit.Eventually(t, "c-1 handled again", func() bool { return len(s.attempts("c-1")) == 4 })
			if got := s.attempts("c-1"); !slices.Equal(got, []int{1, 2, 3, 1}) {
				t.Fatalf("c-1 was handled as attempts %v, want [1 2 3 1]: the replay must start a fresh attempt budget", got)
			}
			h := s.headers("c-1")
			if h[deadletter.HeaderReplays] != "1" || h["traceparent"] == "" || h[runtime.HeaderDeadLetterReason] != "" {
				t.Fatalf("the replayed delivery's headers: %v", h)
			}
			if got := letterIDs(letters(t, e, dl, deadletter.Selection{})); !slices.Equal(got, []string{"c-2", "p-1", "r-1"}) {
				t.Fatalf("after the replay the dead-letter queue holds %v", got)
			}
			// Failing again, it is parked again, and its replay count shows.
			s.setFail(true)
			if _, err := e.queue(dl).Replay(e.ctx, deadletter.Selection{IDs: []string{"c-2"}}, deadletter.ReplayOptions{}); err != nil {
				t.Fatal(err)
			}
			testkit.Eventually(t, "c-2 parked again", func() bool { return len(s.attempts("c-2")) == 6 })
			testkit.Eventually(t, "c-2 back", func() bool { return len(letters(t, e, dl, deadletter.Selection{IDs: []string{"c-2"}})) == 1 })
			again := letters(t, e, dl, deadletter.Selection{IDs: []string{"c-2"}})[0]
			if again.Replays() != 1 || again.Attempts != 3 {
				t.Fatalf("c-2 parked after its replay: replays %d, attempts %d; want 1, 3", again.Replays(), again.Attempts)
			}
		})
	}
}

// Replay to another queue and to an exchange: the new delivery has the
// original body, type, id, properties and user headers, and none of the
// failed delivery's headers.
func TestReplayToAQueueAndToAnExchange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dl := e.name("parked")
	e.declare(dl, nil)
	letter := parked("m-1", 1)
	letter.CorrelationId = "corr-9"
	letter.Priority = 3
	letter.Timestamp = time.Unix(1700000000, 0)
	letter.Headers["traceparent"] = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	letter.Headers["tenant"] = "acme"
	letter.Headers["x-first-death-queue"] = "cards"
	letter.Headers["x-last-death-reason"] = "rejected"
	letter.Headers["x-death"] = []any{amqp.Table{"queue": "cards", "reason": "rejected", "count": int64(1)}}
	letter.Headers[deadletter.HeaderReplays] = "2"
	e.publish(dl, letter, parked("m-2", 2))

	other := e.name("other")
	e.declare(other, nil)
	rep, err := e.queue(dl).Replay(e.ctx, deadletter.Selection{IDs: []string{"m-1"}}, deadletter.ReplayOptions{To: deadletter.Target{Queue: other}})
	if err != nil || rep.Done != 1 {
		t.Fatalf("Replay to a queue = %+v, %v", rep, err)
	}
	got := e.drain(other)
	if len(got) != 1 {
		t.Fatalf("the target queue got %d messages", len(got))
	}
	d := got[0]
	if string(d.Body) != string(letter.Body) || d.Type != "Card" || d.MessageId != "m-1" || d.CorrelationId != "corr-9" ||
		d.Priority != 3 || !d.Timestamp.Equal(letter.Timestamp) || d.ContentType != "application/json" || d.DeliveryMode != amqp.Persistent {
		t.Fatalf("the replayed delivery %+v does not keep the original's body and properties", d)
	}
	want := amqp.Table{"traceparent": letter.Headers["traceparent"], "tenant": "acme", deadletter.HeaderReplays: "3"}
	if fmt.Sprint(d.Headers) != fmt.Sprint(want) {
		t.Fatalf("the replayed delivery's headers are %v, want %v", d.Headers, want)
	}

	ex := e.name("exchange")
	bound := e.name("bound")
	e.declare(bound, nil)
	if err := e.channel(func(ch *amqp.Channel) error {
		if err := ch.ExchangeDeclare(ex, "direct", false, true, false, false, nil); err != nil {
			return err
		}
		return ch.QueueBind(bound, "cards.key", ex, false, nil)
	}); err != nil {
		t.Fatal(err)
	}
	rep, err = e.queue(dl).Replay(e.ctx, deadletter.Selection{}, deadletter.ReplayOptions{To: deadletter.Target{Exchange: ex, RoutingKey: "cards.key"}})
	if err != nil || rep.Done != 1 {
		t.Fatalf("Replay to an exchange = %+v, %v", rep, err)
	}
	if got := ids(e.drain(bound)); !slices.Equal(got, []string{"m-2"}) {
		t.Fatalf("the queue bound to the exchange got %v", got)
	}
	if n := e.ready(dl); n != 0 {
		t.Fatalf("%d letters left after both were replayed", n)
	}
}

// A letter whose replay cannot be delivered stays parked: to a queue that
// does not exist (an error that names it, before anything is taken), or
// through an exchange that routes it nowhere (returned: counted as
// failed).
func TestAReplayThatCannotBeDeliveredLeavesTheLetter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dl := e.name("parked")
	e.declare(dl, nil)
	e.publish(dl, parked("m-1", 1), parked("m-2", 2))
	missing := e.name("missing")
	_, err := e.queue(dl).Replay(e.ctx, deadletter.Selection{}, deadletter.ReplayOptions{To: deadletter.Target{Queue: missing}})
	if err == nil || !containsAll(err.Error(), dl, missing, "does not exist") {
		t.Fatalf("Replay to a missing queue: %v", err)
	}
	ex := e.name("nowhere")
	if err := e.channel(func(ch *amqp.Channel) error { return ch.ExchangeDeclare(ex, "direct", false, true, false, false, nil) }); err != nil {
		t.Fatal(err)
	}
	rep, err := e.queue(dl).Replay(e.ctx, deadletter.Selection{}, deadletter.ReplayOptions{To: deadletter.Target{Exchange: ex, RoutingKey: "x"}})
	if err != nil || rep.Failed != 2 || rep.Done != 0 || len(rep.Errors) != 2 || !strings.Contains(rep.Errors[0], "unroutable") {
		t.Fatalf("Replay through an exchange that routes nowhere = %+v, %v", rep, err)
	}
	if got := ids(e.drain(dl)); !slices.Equal(got, []string{"m-1", "m-2"}) {
		t.Fatalf("after failed replays the queue holds %v", got)
	}
	// To a source queue that was deleted: returned, and said so.
	gone := e.name("gone")
	m3 := parked("m-3", 3)
	m3.Headers[runtime.HeaderDeadLetterSource] = gone
	e.publish(dl, m3)
	rep, err = e.queue(dl).Replay(e.ctx, deadletter.Selection{}, deadletter.ReplayOptions{})
	if err != nil || rep.Failed != 1 || !containsAll(rep.Errors[0], "m-3", "queue "+gone, "unroutable") {
		t.Fatalf("Replay to a deleted source = %+v, %v", rep, err)
	}
	testkit.Eventually(t, "m-3 still parked", func() bool { return e.ready(dl) == 1 })
}

// A dry run changes nothing; a rate limit spaces the replays.
func TestReplayDryRunAndRate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dl := e.name("parked")
	e.declare(dl, nil)
	target := e.name("target")
	e.declare(target, nil)
	var msgs []amqp.Publishing
	for i := range 5 {
		msgs = append(msgs, parked(fmt.Sprintf("m-%d", i), i))
	}
	e.publish(dl, msgs...)
	rep, err := e.queue(dl).Replay(e.ctx, deadletter.Selection{}, deadletter.ReplayOptions{To: deadletter.Target{Queue: target}, DryRun: true})
	if err != nil || rep.Done != 5 || rep.Selected != 5 || e.ready(dl) != 5 || e.ready(target) != 0 {
		t.Fatalf("dry run = %+v, %v; %d left, %d in the target", rep, err, e.ready(dl), e.ready(target))
	}
	start := time.Now()
	rep, err = e.queue(dl).Replay(e.ctx, deadletter.Selection{}, deadletter.ReplayOptions{To: deadletter.Target{Queue: target}, Rate: 20})
	if err != nil || rep.Done != 5 {
		t.Fatalf("Replay = %+v, %v", rep, err)
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Fatalf("5 replays at 20 a second took %v, want at least 200ms", took)
	}
	if got := ids(e.drain(target)); !slices.Equal(got, []string{"m-0", "m-1", "m-2", "m-3", "m-4"}) {
		t.Fatalf("the target got %v, want the letters in their order", got)
	}
}

// Purge removes what the selection picks, or every letter.
func TestPurge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, _, dl := parkedByService(t, e, runtime.ClassicQueue)
	rep, err := e.queue(dl).Purge(e.ctx, deadletter.Selection{Types: []string{"Refund"}}, true)
	if err != nil || rep.Done != 1 || e.ready(dl) != 4 {
		t.Fatalf("dry-run purge = %+v, %v, %d left", rep, err, e.ready(dl))
	}
	rep, err = e.queue(dl).Purge(e.ctx, deadletter.Selection{Types: []string{"Refund"}}, false)
	if err != nil || rep.Done != 1 {
		t.Fatalf("Purge = %+v, %v", rep, err)
	}
	if got := letterIDs(letters(t, e, dl, deadletter.Selection{})); !slices.Equal(got, []string{"c-1", "c-2", "p-1"}) {
		t.Fatalf("after purging the refund the queue holds %v", got)
	}
	if rep, err := e.queue(dl).Purge(e.ctx, deadletter.Selection{}, false); err != nil || rep.Done != 3 || e.ready(dl) != 0 {
		t.Fatalf("Purge of all = %+v, %v, %d left", rep, err, e.ready(dl))
	}
}
