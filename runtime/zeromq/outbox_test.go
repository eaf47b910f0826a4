package zeromq_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// TestUnreachableDeadLetterQueueDoesNotStallTheSubscription: while the
// dead-letter queue's reader is down, a failed job's dead letter waits in
// that queue's outbox and the good jobs behind it are handled; the dead
// letter is delivered once the reader comes up.
func TestUnreachableDeadLetterQueueDoesNotStallTheSubscription(t *testing.T) {
	testkit.NoLeaks(t)
	ep, deadEP := freeEndpoint(t), freeEndpoint(t)
	rec := newRecorder()
	logs := streamtest.NewLogRecorder(nil)
	app := runtime.NewApp("outbox", runtime.WithLogger(logs.Logger()))
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep)), zeromq.Queue("jobs.dead", zeromq.Bind(deadEP)))
	app.Mount(zq, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		jobHandler(rec, runtime.Policy{DeadLetter: "jobs.dead"}, failZero),
	}})
	streamtest.RunApp(t, app)

	publishJob(t, zq, "jobs", Job{ID: 0}, runtime.WithMessageID("bad"))
	for i := 1; i <= 5; i++ {
		publishJob(t, zq, "jobs", Job{ID: i})
	}
	rec.waitFor(t, "jobs", 6)
	testkit.Eventually(t, "the five good jobs acked", func() bool { return app.Stats()[0].Acked == 5 })
	if s := app.Stats()[0]; s.Parked != 0 || s.Failed != 0 {
		t.Fatalf("metrics = %+v before the dead-letter reader is up, want nothing parked or failed yet", s)
	}

	dead := rawPull(t, deadEP)()
	if string(dead[0]) != "jobs.dead" || !strings.Contains(string(dead[1]), "message-id: bad") {
		t.Fatalf("dead letter = %q", dead)
	}
	testkit.Eventually(t, "the dead letter counted as parked", func() bool { return app.Stats()[0].Parked == 1 })
}

// TestFullOutboxHoldsTheSubscriptionBackAndWarns: with room for two
// copies in the dead-letter queue's outbox, a third failed job holds its
// worker back and a warning names the queue; once the reader is up, every
// dead letter is delivered.
func TestFullOutboxHoldsTheSubscriptionBackAndWarns(t *testing.T) {
	testkit.NoLeaks(t)
	ep, deadEP := freeEndpoint(t), freeEndpoint(t)
	rec := newRecorder()
	logs := streamtest.NewLogRecorder(nil)
	app := runtime.NewApp("outbox", runtime.WithLogger(logs.Logger()))
	zq := zeromq.New(
		zeromq.Queue("jobs", zeromq.Bind(ep)),
		zeromq.Queue("jobs.dead", zeromq.Bind(deadEP), zeromq.OutboxSize(2)),
	)
	app.Mount(zq, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		jobHandler(rec, runtime.Policy{DeadLetter: "jobs.dead"}, func(*Job, runtime.Metadata) error { return errors.New("fails") }),
	}})
	streamtest.RunApp(t, app)
	for i := range 5 {
		publishJob(t, zq, "jobs", Job{ID: i})
	}

	testkit.Eventually(t, "a warning that the outbox is full", func() bool { return len(logs.Containing("outbox")) > 0 })
	warn := logs.Containing("outbox")[0]
	if warn.Level != slog.LevelWarn || warn.Attrs["queue"] != "jobs.dead" || !strings.Contains(warn.Message, "full") {
		t.Fatalf("warning = %s", warn)
	}
	// Two copies wait; the worker waits with the third.
	if n := len(rec.All()); n != 3 {
		t.Fatalf("%d jobs handled while the outbox is full, want 3", n)
	}

	dead := rawPull(t, deadEP)
	for range 5 {
		dead()
	}
	testkit.Eventually(t, "five jobs parked", func() bool { return app.Stats()[0].Parked == 5 })
}

// TestShutdownReportsEachCopyLeftInTheOutbox: dead letters still waiting
// for a queue that does not answer when the shutdown deadline passes are
// lost: each is logged with its message id, one line counts them per
// queue, and Run says so.
func TestShutdownReportsEachCopyLeftInTheOutbox(t *testing.T) {
	testkit.NoLeaks(t)
	ep, deadEP := freeEndpoint(t), freeEndpoint(t)
	rec := newRecorder()
	logs := streamtest.NewLogRecorder(nil)
	app := runtime.NewApp("outbox", runtime.WithLogger(logs.Logger()), runtime.WithShutdownTimeout(300*time.Millisecond))
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep)), zeromq.Queue("jobs.dead", zeromq.Bind(deadEP)))
	app.Mount(zq, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		jobHandler(rec, runtime.Policy{DeadLetter: "jobs.dead"}, func(*Job, runtime.Metadata) error { return errors.New("fails") }),
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- app.Run(ctx) }()
	<-app.Ready()
	for _, id := range []string{"p1", "p2", "p3"} {
		publishJob(t, zq, "jobs", Job{ID: 1}, runtime.WithMessageID(id))
	}
	rec.waitFor(t, "jobs", 3)

	cancel()
	err := <-ran
	if err == nil || !strings.Contains(err.Error(), "lost") || !strings.Contains(err.Error(), "jobs.dead") {
		t.Fatalf("Run = %v, want an error saying copies for jobs.dead were lost", err)
	}
	if !strings.Contains(err.Error(), "3 dead letters still being sent") || strings.Contains(err.Error(), "retry cop") {
		t.Fatalf("Run = %v, want it to name the 3 dead letters, and no retry copies", err)
	}
	lost := map[string]bool{}
	for _, l := range logs.Containing("could not park the message") {
		if l.Attrs["subscription"] == "jobs" && strings.Contains(l.Attrs["err"], "lost") && strings.Contains(l.Attrs["err"], "jobs.dead") {
			lost[l.Attrs["message_id"]] = true
		}
	}
	if len(lost) != 3 || !lost["p1"] || !lost["p2"] || !lost["p3"] {
		t.Fatalf("lost copies reported for %v, want p1, p2, p3; logs:\n%s", lost, logs)
	}
	var summary []streamtest.LogRecord
	for _, l := range logs.Records() {
		if l.Attrs["lost"] != "" && l.Attrs["queue"] == "jobs.dead" {
			summary = append(summary, l)
		}
	}
	if len(summary) != 1 || summary[0].Attrs["lost"] != "3" || summary[0].Level != slog.LevelWarn {
		t.Fatalf("want one warning counting 3 copies lost for jobs.dead; logs:\n%s", logs)
	}
	if s := app.Stats()[0]; s.Failed != 3 || s.Parked != 0 {
		t.Fatalf("metrics = %+v, want 3 failed, none parked", s)
	}
}

// TestShutdownNamesEachKindOfCopyItGaveUpOn: retry copies for a queue
// that does not answer, and a dead letter for another, are still being
// sent when the shutdown deadline passes: Run's error counts each kind.
func TestShutdownNamesEachKindOfCopyItGaveUpOn(t *testing.T) {
	testkit.NoLeaks(t)
	ep := freeEndpoint(t)
	rec := newRecorder()
	app := runtime.NewApp("outbox", runtime.WithShutdownTimeout(300*time.Millisecond))
	zq := zeromq.New(
		zeromq.Queue("jobs", zeromq.Bind(ep)),
		zeromq.Queue("jobs.later", zeromq.Bind(freeEndpoint(t))), // nobody reads either
		zeromq.Queue("jobs.dead", zeromq.Bind(freeEndpoint(t))),
	)
	app.Mount(zq, &runtime.Subscription{Name: "jobs", Handlers: []runtime.Handler{
		jobHandler(rec, runtime.Policy{MaxAttempts: 3, OutRetry: "jobs.later", DeadLetter: "jobs.dead"},
			func(*Job, runtime.Metadata) error { return errors.New("fails") }),
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- app.Run(ctx) }()
	<-app.Ready()
	publishJob(t, zq, "jobs", Job{ID: 1})
	publishJob(t, zq, "jobs", Job{ID: 2})
	send(t, rawPush(t, ep), "jobs", "type: job", "not json") // poison: parked at once
	rec.waitFor(t, "jobs", 2)
	// Shutdown lets the workers finish first: the three copies are then in
	// their outboxes.
	testkit.Eventually(t, "three deliveries", func() bool { return app.Stats()[0].Delivered == 3 })

	cancel()
	err := <-ran
	if err == nil || !strings.Contains(err.Error(), "2 retry copies and 1 dead letter still being sent") {
		t.Fatalf("Run = %v, want it to name 2 retry copies and 1 dead letter", err)
	}
}

// paddedJob is a codec that writes a Job as "job <id>" and 64 KiB of
// padding, and reads only the id: bodies that fill connections, cheap to
// decode.
type paddedJob struct{}

func (paddedJob) ContentType() string { return "text/x-padded-job" }

func (paddedJob) Encode(v any) ([]byte, error) {
	return append([]byte(fmt.Sprintf("job %d|", v.(Job).ID)), make([]byte, 64<<10)...), nil
}

func (paddedJob) Decode(body []byte, v any) error {
	id, _, _ := strings.Cut(strings.TrimPrefix(string(body[:min(len(body), 32)]), "job "), "|")
	n, err := strconv.Atoi(id)
	v.(*Job).ID = n
	return err
}

// TestRetryingIntoItsOwnQueueNeverWaitsForItself: a subscription that
// retries every job into its own queue at once, with room for one copy in
// that queue's outbox, one worker and a prefetch of one, takes 300 jobs of
// 64 KiB, each three times. Were its worker to wait for room in the outbox
// of its own queue, it would wait for itself: the outbox waits for the
// connection, the connection for the queue's reader, the reader for the
// worker. (It did: the test gave up waiting.)
func TestRetryingIntoItsOwnQueueNeverWaitsForItself(t *testing.T) {
	testkit.NoLeaks(t)
	const jobs, attempts = 300, 3
	ep := freeEndpoint(t)
	app := runtime.NewApp("self", runtime.WithCodec(paddedJob{}))
	zq := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep), zeromq.OutboxSize(1)))
	var handled atomic.Int64
	app.Mount(zq, &runtime.Subscription{Name: "jobs", Prefetch: 1, Handlers: []runtime.Handler{
		runtime.Handle("job", runtime.Policy{MaxAttempts: attempts, OutRetry: "jobs"}, func(_ context.Context, _ *Job, md runtime.Metadata) runtime.Outcome {
			handled.Add(1)
			if md.Attempt < attempts {
				return runtime.Retry()
			}
			return runtime.Ack()
		}),
	}})
	streamtest.RunApp(t, app)

	producer := zeromq.New(zeromq.Queue("jobs", zeromq.Bind(ep)), zeromq.WithCodec(paddedJob{}))
	defer shutdown(t, producer)
	published := make(chan error, 1)
	go func() {
		for i := range jobs {
			if err := runtime.Publish(context.Background(), producer, runtime.Queue("jobs"), "job", Job{ID: i}); err != nil {
				published <- err
				return
			}
		}
		published <- nil
	}()
	// A worker waiting for itself makes no more progress: wait as long as
	// the handlings go on, so that a busy machine, slow as it may be, does
	// not pass for a stall.
	for handled.Load() < jobs*attempts {
		was := handled.Load()
		testkit.Eventually(t, fmt.Sprintf("progress past %d of %d handlings", was, jobs*attempts), func() bool { return handled.Load() > was })
	}
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "every job acked", func() bool { return app.Stats()[0].Acked == jobs })
}
