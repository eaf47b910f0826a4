package rabbitmq_test

import (
	"bytes"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/deadletter"
)

// A letter published by another client (pika) with the headers of a
// delivery that failed three times (x-retry-count 2, an x-death record,
// x-delivery-count), replayed into a real subscription, is handled as
// attempt 1: replay resets every header an attempt is counted from.
func TestAStaleLetterFromPikaIsReplayedAsAttempt1(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := e.name("svc")
	dl := q + ".dl"
	s := e.startService(q, dl, runtime.ClassicQueue, 3)
	s.setFail(false)
	pika(t, e.url, `
import datetime
c = pika.BlockingConnection(pika.URLParameters(url)); ch = c.channel(); ch.confirm_delivery()
h = {"x-retry-count": "2", "x-delivery-count": 5, "x-streamgen-attempts": "3",
     "x-streamgen-reason": "failed on attempt 3 of 3: order 9: card declined", "x-streamgen-source": "`+q+`",
     "x-death": [{"queue": "`+q+`", "reason": "expired", "count": 2, "exchange": "", "routing-keys": ["`+q+`.retry"]}],
     "x-first-death-queue": "`+q+`", "x-last-death-reason": "expired"}
ch.basic_publish("", "`+dl+`", b'{"order": 9}', pika.BasicProperties(message_id="stale-1", type="Card", content_type="application/json", headers=h))
c.close()
`)
	rep, err := e.queue(dl).Replay(e.ctx, deadletter.Selection{}, deadletter.ReplayOptions{})
	if err != nil || rep.Done != 1 {
		t.Fatalf("Replay = %+v, %v", rep, err)
	}
	testkit.Eventually(t, "stale-1 handled", func() bool { return len(s.attempts("stale-1")) == 1 })
	if got := s.attempts("stale-1"); !slices.Equal(got, []int{1}) {
		t.Fatalf("the replayed letter was handled as attempt %v, want 1", got)
	}
}

// A letter the broker dead-lettered itself, from a quorum queue's
// delivery limit (pika rejects it until the broker gives up), is explained
// from its x-death record and grouped apart; a letter that is not UTF-8 or
// not JSON is shown safely, exported as base64 and imported back as it
// was.
func TestBrokerLettersAndBinaryBodiesFromPika(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src := e.name("src")
	dl := e.name("parked")
	e.declare(dl, nil)
	pika(t, e.url, `
c = pika.BlockingConnection(pika.URLParameters(url)); ch = c.channel(); ch.confirm_delivery()
ch.queue_declare("`+src+`", durable=True, arguments={"x-queue-type": "quorum", "x-delivery-limit": 1,
    "x-dead-letter-exchange": "", "x-dead-letter-routing-key": "`+dl+`"})
ch.basic_publish("", "`+src+`", b'{"order": 1}', pika.BasicProperties(message_id="b-1", type="Card"))
for _ in range(10):
    m, p, b = ch.basic_get("`+src+`")
    if m is None:
        break
    ch.basic_reject(m.delivery_tag, requeue=True)
ch.basic_publish("", "`+dl+`", b'\xff\xfe\x00\x1b[31mred', pika.BasicProperties(message_id="bin-1", type="Blob",
    headers={"x-streamgen-reason": "failed on attempt 1 of 1: bad blob 0xdeadbeef", "x-streamgen-source": "blobs", "raw": b'\x00\x01', "n": 7, "ok": True}))
ch.basic_publish("", "`+dl+`", b'plain text, not json', pika.BasicProperties(message_id="txt-1", type="Note",
    headers={"x-streamgen-reason": "failed on attempt 1 of 1: no", "x-streamgen-source": "notes"}))
c.close()
`)
	testkit.Eventually(t, "three letters", func() bool { return e.ready(dl) == 3 })
	all := letters(t, e, dl, deadletter.Selection{})
	byID := map[string]*deadletter.Letter{}
	for _, l := range all {
		byID[l.MessageID()] = l
	}
	b := byID["b-1"]
	if b == nil || !b.ByBroker || !strings.Contains(b.Reason, "delivery limit") || b.Source != src {
		t.Fatalf("the broker's letter = %+v", b)
	}
	groups, err := e.queue(dl).Groups(e.ctx)
	if err != nil || len(groups) != 3 {
		t.Fatalf("groups = %+v, %v", groups, err)
	}
	for _, g := range groups {
		if g.ByBroker != (g.Reason == deadletter.NormalizeReason(b.Reason)) {
			t.Fatalf("group %+v: the broker's letters form their own group", g)
		}
	}

	var shown bytes.Buffer
	for _, id := range []string{"bin-1", "txt-1"} {
		if err := deadletter.WriteLetter(&shown, byID[id]); err != nil {
			t.Fatal(err)
		}
	}
	out := shown.String()
	if strings.Contains(out, "\x1b") || strings.Contains(out, "\xff") || !containsAll(out, "not text; hex", "ff fe 00 1b", "body (text):", "plain text, not json") {
		t.Fatalf("shown letters:\n%s", out)
	}

	var exported bytes.Buffer
	n, err := e.queue(dl).Export(e.ctx, &exported, deadletter.Selection{})
	if err != nil || n != 3 {
		t.Fatalf("Export = %d, %v", n, err)
	}
	if !strings.Contains(exported.String(), `"body_encoding":"base64"`) || !strings.Contains(exported.String(), `"body":"plain text, not json","body_encoding":"text"`) {
		t.Fatalf("export:\n%s", exported.String())
	}
	if rep, err := e.queue(dl).Purge(e.ctx, deadletter.Selection{}, false); err != nil || rep.Done != 3 {
		t.Fatalf("Purge = %+v, %v", rep, err)
	}
	if n, err := e.queue(dl).Import(e.ctx, bytes.NewReader(exported.Bytes())); err != nil || n != 3 {
		t.Fatalf("Import = %d, %v", n, err)
	}
	var again bytes.Buffer
	if _, err := e.queue(dl).Export(e.ctx, &again, deadletter.Selection{}); err != nil {
		t.Fatal(err)
	}
	if sortedLines(again.String()) != sortedLines(exported.String()) {
		t.Fatalf("imported letters differ from the exported ones:\nbefore\n%s\nafter\n%s", exported.String(), again.String())
	}
	if _, err := e.queue(dl).Import(e.ctx, strings.NewReader("{\"body\": 1}\n")); err == nil || !containsAll(err.Error(), dl, "line 1") {
		t.Fatalf("Import of a bad line: %v", err)
	}
}

func sortedLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
