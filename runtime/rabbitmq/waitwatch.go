package rabbitmq

import (
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/streamgen/streamgen/runtime/adapter"
)

// defaultStallAfter is how long past its due time a retry copy may stay
// away, with nothing at all coming back from its wait queue, before the
// queue counts as stalled. A wait queue moves an expired copy back at
// once; a quorum wait queue whose move back is addressed to a queue leader
// that went away holds it until the broker gives up on that leader, which
// took 160-178 s on RabbitMQ 3.10.
const defaultStallAfter = 30 * time.Second

// maxWatched caps the due times a wait queue's watch keeps: a stall is
// seen by the oldest, and the count of those beyond is kept instead.
const maxWatched = 4096

// waitWatch follows a subscription's retry copies through its wait queues
// and notices one whose expired copies stop coming back: copies this
// worker sent are overdue by stallAfter, and no copy from that queue (its
// own or another worker's) has come back since the oldest was due. It
// logs a warning when a queue stalls and when its copies come back again,
// and Warnings reports the stalls for App.Health.
type waitWatch struct {
	sub        string
	stallAfter time.Duration
	log        *slog.Logger

	mu     sync.Mutex
	queues map[string]*waitQueueWatch
}

// waitQueueWatch is what a waitWatch knows of one wait queue.
type waitQueueWatch struct {
	ttl time.Duration
	// due holds when the copies confirmed into the queue since one last
	// came back from it are due back, oldest first; beyond counts those
	// past maxWatched.
	due    []time.Time
	beyond int
	// back is when a copy from the queue last came back.
	back time.Time
	// stalled is when the queue was found stalled, zero while it is not.
	stalled time.Time
}

func newWaitWatch(sub string, queues []adapter.WaitQueue, stallAfter time.Duration, log *slog.Logger) *waitWatch {
	w := &waitWatch{sub: sub, stallAfter: stallAfter, log: log, queues: make(map[string]*waitQueueWatch, len(queues))}
	for _, q := range queues {
		w.queues[q.Name] = &waitQueueWatch{ttl: q.TTL}
	}
	return w
}

// sent records a copy sent into queue at sentAt, once the broker confirmed
// it. The broker enqueued it after sentAt, so it cannot be back before
// sentAt plus the queue's TTL; it can be back before its confirm is
// handled, which a copy that came back since that time accounts for.
func (w *waitWatch) sent(queue string, sentAt time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.queues[queue]
	if q == nil {
		return
	}
	due := sentAt.Add(q.ttl)
	if !q.back.Before(due) {
		return
	}
	if len(q.due) == maxWatched {
		q.beyond++
		return
	}
	q.due = append(q.due, due)
}

// cameBack records a delivery that came back from queue at now: the copies
// that were due by then are accounted for, whichever worker consumed them.
func (w *waitWatch) cameBack(queue string, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.queues[queue]
	if q == nil {
		return
	}
	q.back = now
	n := sort.Search(len(q.due), func(i int) bool { return q.due[i].After(now) })
	q.due = append(q.due[:0], q.due[n:]...)
	if len(q.due) == 0 {
		q.beyond = 0
	}
	if !q.stalled.IsZero() {
		w.log.Info("rabbitmq: retry copies come back from their wait queue again",
			"subscription", w.sub, "queue", queue, "stalled_for", now.Sub(q.stalled).Round(time.Second))
		q.stalled = time.Time{}
	}
}

// check logs the wait queues that stalled since the last check, and
// returns a warning for each queue stalled at now, in name order.
func (w *waitWatch) check(now time.Time) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for name, q := range w.queues {
		if len(q.due) == 0 || now.Sub(q.due[0]) < w.stallAfter {
			continue
		}
		overdue := sort.Search(len(q.due), func(i int) bool { return q.due[i].After(now) })
		if overdue == len(q.due) {
			overdue += q.beyond
		}
		late := now.Sub(q.due[0]).Round(time.Second)
		if q.stalled.IsZero() {
			q.stalled = now
			w.log.Warn("rabbitmq: retry copies do not come back from their wait queue: the broker holds them (a quorum queue whose leader was lost can hold them for minutes), or they wait behind a backlog",
				"subscription", w.sub, "queue", name, "overdue", overdue, "oldest_late_by", late, "delay", q.ttl)
		}
		out = append(out, fmt.Sprintf("wait queue %q: %d retry copies of %q are overdue, the oldest by %s (their delay is %s), and none has come back since: the broker holds them, or they wait behind a backlog",
			name, overdue, w.sub, late, q.ttl))
	}
	sort.Strings(out)
	return out
}

// cameBackFrom returns the wait queue a delivery came back from, by its
// x-death header (the newest entry first): "" when it did not come from
// one of the subscription's wait queues.
func cameBackFrom(headers amqp.Table, isWaitQueue func(string) bool) string {
	entry, ok := lastDeath(headers)
	if !ok {
		return ""
	}
	queue, _ := entry["queue"].(string)
	reason, _ := entry["reason"].(string)
	if reason != "expired" || !isWaitQueue(queue) {
		return ""
	}
	return queue
}
