//go:build partitions

package partitiontest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/rabbitmq"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

const (
	messages    = 5000
	maxAttempts = 3
	retryDelay  = 200 * time.Millisecond
	publishers  = 8 // goroutines publishing at once
	// publishFor paces the publishing: message k is published no sooner
	// than k/messages of it after the start, so that messages flow
	// before, during and after a partition.
	publishFor  = 30 * time.Second
	concurrency = 8 // handler calls at once
	// settleFor bounds how long every message may take to end acked or
	// parked after the partitions healed.
	settleFor = 4 * time.Minute
)

// fate is what the handler does with a message, by its id.
type fate int

const (
	succeeds    fate = iota // on attempt 1
	failsOnce               // fails attempt 1, succeeds on attempt 2: 20% of the ids
	alwaysFails             // fails every attempt and is parked after the 3rd: 5%
)

func fateOf(id int) fate {
	switch r := id % 20; {
	case r < 4:
		return failsOnce
	case r == 4:
		return alwaysFails
	}
	return succeeds
}

// job is the message the test publishes.
type job struct {
	ID int `json:"id"`
}

var errFailed = errors.New("failed on purpose")

// call is one handler call.
type call struct {
	id, attempt int
	ok          bool
	redelivered bool
	at          time.Time
}

// placement says which node leads the queues, which one the worker
// connects to, and which one the publisher does (indexes).
type placement struct{ leader, worker, publisher int }

// figures are what one run measured, by message id.
type figures struct {
	scenario, path string
	published      int // confirmed ids
	republished    int // publishes that failed and were sent again (each may have reached the queue)
	calls          int
	redelivered    int
	reconnects     int // of the worker's consuming connection
	lost           int // confirmed, neither succeeded nor parked
	dupSuccesses   int // successes beyond one per id
	dupParks       int // letters beyond one per id
	wrongAttempts  int
	unexpected     int // letters of ids that succeed, or of no id published
	settled        time.Duration
	took           time.Duration
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// workload is one run: a worker consuming a quorum queue with retries and
// dead letters while a publisher sends it messages, ids 0 to messages-1.
type workload struct {
	t     *testing.T
	c     *cluster
	at    placement
	queue string
	sub   *runtime.Subscription

	mu    sync.Mutex
	calls []call
	okIDs map[int]bool
	final map[int]bool // ids whose last attempt failed: parked

	confirmed   [messages]atomic.Bool
	republished atomic.Int64
}

// newWorkload declares the subscription's queues on node at.leader, so
// that it leads them, as a deployment that declared them first would.
func newWorkload(t *testing.T, c *cluster, scenario string, path retryPath, at placement) *workload {
	t.Helper()
	w := &workload{t: t, c: c, at: at, okIDs: map[int]bool{}, final: map[int]bool{},
		queue: "streamgen-partitions." + scenario + "." + string(path) + "." + randomHex(4)}
	h := runtime.Handle("Job", runtime.Policy{MaxAttempts: maxAttempts, DeadLetter: w.queue + ".dl"}, w.handle)
	w.sub = &runtime.Subscription{Name: w.queue, Broker: runtime.RabbitMQ, QueueType: runtime.QuorumQueue,
		Concurrency: concurrency, RetryDelays: []time.Duration{retryDelay}, Handlers: []runtime.Handler{h}}
	path.apply(w.sub)

	declare := rabbitmq.New(c.urls[at.leader], rabbitmq.WithConnectionName("streamgen-partitions-declare"))
	stop := w.runApp(declare, slog.New(slog.DiscardHandler))
	if err := stop(); err != nil {
		t.Fatalf("the App that declared the queues stopped with %v", err)
	}
	t.Cleanup(w.deleteQueues)
	if got := c.leaderOf(w.queue); got != at.leader {
		t.Fatalf("%s leads %s, want %s, where it was declared", c.nodes[got], w.queue, c.nodes[at.leader])
	}
	return w
}

// handle is the handler: it decides by the message's id and records the
// call.
func (w *workload) handle(_ context.Context, j *job, md runtime.Metadata) runtime.Outcome {
	if md.MessageID != strconv.Itoa(j.ID) {
		w.t.Errorf("message %d delivered with message id %q", j.ID, md.MessageID)
	}
	f := fateOf(j.ID)
	ok := f == succeeds || (f == failsOnce && md.Attempt >= 2)
	w.mu.Lock()
	w.calls = append(w.calls, call{id: j.ID, attempt: md.Attempt, ok: ok, redelivered: md.Redelivered, at: time.Now()})
	if ok {
		w.okIDs[j.ID] = true
	} else if md.Attempt >= maxAttempts {
		w.final[j.ID] = true
	}
	w.mu.Unlock()
	if ok {
		return runtime.Ack()
	}
	return runtime.Retry().Because(errFailed)
}

// runApp runs an App with b and the subscription until it is ready, and
// returns what stops it and returns Run's error.
func (w *workload) runApp(b *rabbitmq.Broker, logger *slog.Logger) (stop func() error) {
	w.t.Helper()
	a := runtime.NewApp("streamgen-partitions", runtime.WithLogger(logger), runtime.WithShutdownTimeout(30*time.Second))
	a.Mount(b, w.sub)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(2 * time.Minute):
				err = errors.New("App.Run did not return 2 minutes after it was stopped")
			}
		})
		return err
	}
	w.t.Cleanup(func() { _ = stop() })
	select {
	case <-a.Ready():
	case err := <-done:
		w.t.Fatalf("the App did not start: %v", err)
	case <-time.After(2 * time.Minute):
		w.t.Fatal("the App did not start in 2 minutes")
	}
	return stop
}

// handled returns how many handler calls were made.
func (w *workload) handled() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.calls)
}

// publish sends every id, from publishers goroutines, each with confirms,
// and sends a message again until the broker confirms it. It returns when
// every id is confirmed.
func (w *workload) publish(pub *rabbitmq.Broker) {
	began := time.Now()
	var wg sync.WaitGroup
	for g := range publishers {
		wg.Go(func() {
			for id := g; id < messages; id += publishers {
				time.Sleep(time.Until(began.Add(publishFor * time.Duration(id) / messages)))
				for {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					err := runtime.Publish(ctx, pub, runtime.Queue(w.queue), "Job", job{ID: id}, runtime.WithMessageID(strconv.Itoa(id)))
					cancel()
					if err == nil {
						w.confirmed[id].Store(true)
						break
					}
					w.republished.Add(1)
					time.Sleep(100 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
}

// pending returns the confirmed ids that neither succeeded nor failed
// their last attempt yet.
func (w *workload) pending() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ids []int
	for id := range messages {
		if w.confirmed[id].Load() && !w.okIDs[id] && !w.final[id] {
			ids = append(ids, id)
		}
	}
	return ids
}

// run runs the workload with disrupt, which cuts the network once a fifth
// of the messages were handled and returns once it healed, and accounts
// for every message.
func (w *workload) run(scenario string, path retryPath, disrupt func()) figures {
	t, c := w.t, w.c
	began := time.Now()
	name := "streamgen-partitions-" + randomHex(4)
	// Errors are shown as they come; warnings are summed up afterwards
	// (every park is one).
	logs := streamtest.NewLogRecorder(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))
	worker := rabbitmq.New(c.rotate(w.at.worker), rabbitmq.WithAddressesInOrder(), rabbitmq.WithConnectionName(name),
		rabbitmq.WithReconnectBackoff(100*time.Millisecond, 2*time.Second, 0.2), rabbitmq.WithLogger(logs.Logger()))
	stop := w.runApp(worker, logs.Logger())
	if started := logs.Find(slog.LevelInfo, "rabbitmq: consuming"); len(started) != 1 || c.nodeOf(started[0].Attr("url")) != w.at.worker {
		t.Fatalf("the worker started consuming as %v, want once, on %s", started, c.nodes[w.at.worker])
	}

	pub := rabbitmq.New(c.rotate(w.at.publisher), rabbitmq.WithAddressesInOrder(), rabbitmq.WithConnectionName(name+"-publisher"),
		rabbitmq.WithReconnectBackoff(100*time.Millisecond, 2*time.Second, 0.2))
	t.Cleanup(func() { _ = pub.Close() })
	published := make(chan struct{})
	go func() {
		defer close(published)
		w.publish(pub)
	}()
	for w.handled() < messages/5 {
		select {
		case <-published:
		case <-time.After(10 * time.Millisecond):
		}
		if time.Since(began) > 5*time.Minute {
			t.Fatalf("only %d handler calls after 5 minutes", w.handled())
		}
	}
	disrupt()
	healed := time.Now()
	<-published

	// Settled: every confirmed id succeeded or failed its last attempt,
	// and a letter parked otherwise (a message that came back too often)
	// is found by reading the dead-letter queue.
	var parked map[int][]*deadletter.Letter
	for {
		left := w.pending()
		if len(left) == 0 {
			break
		}
		parked = w.letters()
		left = slices.DeleteFunc(left, func(id int) bool { return len(parked[id]) > 0 })
		if len(left) == 0 {
			break
		}
		if time.Since(healed) > settleFor {
			t.Errorf("%d messages neither succeeded nor were parked %v after the partition healed, such as %v", len(left), settleFor, left[:min(len(left), 10)])
			break
		}
		time.Sleep(time.Second)
	}
	settled := time.Since(healed)
	time.Sleep(2 * time.Second) // a duplicate's retry copy lands in a retry delay
	if err := stop(); err != nil {
		t.Errorf("the worker's App stopped with %v", err)
	}
	parked = w.letters()
	f, r := w.account(parked)
	if len(r.lost) > 0 {
		t.Errorf("%d messages lost: confirmed, neither succeeded nor parked: %v", len(r.lost), r.lost[:min(len(r.lost), 10)])
	}
	if len(r.wrong) > 0 {
		t.Errorf("%d messages ran with wrong attempt numbers: %v", len(r.wrong), r.wrong[:min(len(r.wrong), 10)])
	}
	if len(r.unexpected) > 0 {
		t.Logf("%d unexpected letters (a message the worker's lost connections handed back as often as the crash limit is parked without running again): %v",
			len(r.unexpected), r.unexpected[:min(len(r.unexpected), 10)])
	}
	f.scenario, f.path, f.settled, f.took = scenario, string(path), settled, time.Since(began)
	f.reconnects = len(logs.Find(slog.LevelWarn, "rabbitmq: consuming was interrupted; reconnecting"))
	warnings := map[string]int{}
	for _, r := range logs.Records() {
		if r.Level == slog.LevelWarn {
			warnings[r.Message]++
		}
	}
	t.Logf("the worker's warnings, by message: %v", warnings)
	return f
}

// letters reads the dead-letter queue with the dead-letter tools (what
// streamgen dlq ls reads), by message id.
func (w *workload) letters() map[int][]*deadletter.Letter {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dlq, err := rabbitmq.DialDeadLetterQueue(ctx, w.c.rotate(w.at.publisher), w.queue+".dl")
	if err != nil {
		w.t.Fatal(err)
	}
	defer func() { _ = dlq.Close() }()
	byID := map[int][]*deadletter.Letter{}
	err = dlq.Scan(ctx, func(l *deadletter.Letter) error {
		id, err := strconv.Atoi(l.MessageID())
		if err != nil {
			id = -1
		}
		byID[id] = append(byID[id], l)
		return nil
	})
	if err != nil {
		w.t.Fatalf("read %s: %v", dlq.Name(), err)
	}
	return byID
}

// findings name the ids behind the figures, each with what happened to it.
type findings struct{ lost, wrong, unexpected []string }

// account counts, by message id, what was lost, run or parked twice, and
// run with wrong attempt numbers.
func (w *workload) account(parked map[int][]*deadletter.Letter) (figures, findings) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := figures{calls: len(w.calls), republished: int(w.republished.Load())}
	byID := map[int][]call{}
	for _, c := range w.calls {
		byID[c.id] = append(byID[c.id], c)
		if c.redelivered {
			f.redelivered++
		}
	}
	var lost, wrong, unexpected []string
	for id := range messages {
		if !w.confirmed[id].Load() {
			continue
		}
		f.published++
		calls, letters := byID[id], parked[id]
		successes := 0
		for _, c := range calls {
			if c.ok {
				successes++
			}
		}
		if successes == 0 && len(letters) == 0 {
			lost = append(lost, fmt.Sprintf("%d (%s)", id, describe(calls)))
		}
		f.dupSuccesses += max(successes-1, 0)
		f.dupParks += max(len(letters)-1, 0)
		if reason := wrongAttempts(id, calls, letters); reason != "" {
			wrong = append(wrong, fmt.Sprintf("%d: %s", id, reason))
		}
		if fateOf(id) != alwaysFails && len(letters) > 0 {
			unexpected = append(unexpected, fmt.Sprintf("%d parked (%s): %s", id, letters[0].Reason, describe(calls)))
		}
	}
	for id, letters := range parked {
		if id < 0 || id >= messages || !w.confirmed[id].Load() {
			unexpected = append(unexpected, fmt.Sprintf("a letter with message id %q, which was not published", letters[0].MessageID()))
		}
	}
	f.lost, f.wrongAttempts, f.unexpected = len(lost), len(wrong), len(unexpected)
	return f, findings{lost: lost, wrong: wrong, unexpected: unexpected}
}

// wrongAttempts says what is wrong with the attempt numbers of one id's
// calls (in the order they were made) and letters, or "".
func wrongAttempts(id int, calls []call, letters []*deadletter.Letter) string {
	if len(calls) > 0 && calls[0].attempt != 1 {
		return "first ran as attempt " + strconv.Itoa(calls[0].attempt) + ": " + describe(calls)
	}
	seen := map[int]bool{}
	highest := 0
	for _, c := range calls {
		if c.attempt < 1 || c.attempt > maxAttempts {
			return "ran as attempt " + strconv.Itoa(c.attempt) + ": " + describe(calls)
		}
		seen[c.attempt] = true
		highest = max(highest, c.attempt)
		want := 1
		if fateOf(id) == failsOnce {
			want = 2
		}
		if c.ok && c.attempt != want {
			return fmt.Sprintf("succeeded on attempt %d, want %d: %s", c.attempt, want, describe(calls))
		}
	}
	for a := 1; a <= highest; a++ {
		if !seen[a] {
			return fmt.Sprintf("never ran as attempt %d: %s", a, describe(calls))
		}
	}
	for _, l := range letters {
		if l.ByBroker || !l.Explained {
			return "parked by the broker, or without an explanation: " + l.Reason
		}
		// A letter of a message that failed its last attempt says it ran
		// maxAttempts times; one parked for coming back too often says
		// how often it ran before.
		if fateOf(id) == alwaysFails && seen[maxAttempts] && l.Attempts != maxAttempts {
			return fmt.Sprintf("parked with %d attempts, want %d: %s", l.Attempts, maxAttempts, describe(calls))
		}
	}
	return ""
}

// describe lists the attempt numbers of calls, with ok marking a success
// and r a redelivery.
func describe(calls []call) string {
	if len(calls) == 0 {
		return "never ran"
	}
	s := "ran as"
	for _, c := range calls {
		s += " " + strconv.Itoa(c.attempt)
		if c.ok {
			s += "ok"
		}
		if c.redelivered {
			s += "r"
		}
	}
	return s
}

// deleteQueues deletes the subscription's queues.
func (w *workload) deleteQueues() {
	conn, err := amqp.Dial(w.c.urls[w.at.publisher])
	if err != nil {
		w.t.Errorf("delete the queues of %s: %v", w.queue, err)
		return
	}
	defer func() { _ = conn.Close() }()
	ch, err := conn.Channel()
	if err != nil {
		w.t.Errorf("delete the queues of %s: %v", w.queue, err)
		return
	}
	for _, q := range rabbitmq.QueueNames(w.sub) {
		if _, err := ch.QueueDelete(q, false, false, false); err != nil {
			w.t.Errorf("delete %s: %v", q, err)
			return
		}
	}
}
