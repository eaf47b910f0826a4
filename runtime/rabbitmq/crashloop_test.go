package rabbitmq

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

// crashWorkerEnv holds the crashWorker that the test binary, run again
// with it set, runs as a worker until SIGTERM (see TestMain).
const crashWorkerEnv = "STREAMGEN_TEST_CRASH_WORKER"

// crashExit is the exit status of a worker that crashed on the bad job.
const crashExit = 3

// crashAttempts is the crash-loop subscriptions' max_attempts, and so
// their crash limit.
const crashAttempts = 3

// handledLine starts the line a crash worker writes to its standard
// output for each job it handled, before its handler returns.
const handledLine = "handled job "

// crashWorker is what a crash worker runs: a subscription on Queue of
// QueueType with Prefetch, whose handler exits the process on job Bad and
// acknowledges any other.
type crashWorker struct {
	Queue     string
	QueueType runtime.QueueType
	Prefetch  int
	Bad       int
}

// subscription is the worker's subscription, with a dead-letter queue.
func (w crashWorker) subscription() *runtime.Subscription {
	s := sub(w.Queue, 50*time.Millisecond, runtime.Handle("Job", runtime.Policy{MaxAttempts: crashAttempts, DeadLetter: w.Queue + ".dl"},
		func(_ context.Context, j *job, _ runtime.Metadata) runtime.Outcome {
			if j.ID == w.Bad {
				os.Exit(crashExit)
			}
			fmt.Printf("%s%d\n", handledLine, j.ID)
			return runtime.Ack()
		}))
	s.QueueType, s.Prefetch = w.QueueType, w.Prefetch
	return s
}

// runCrashWorker runs the crashWorker described by spec (JSON) until
// SIGTERM and returns the process's exit status.
func runCrashWorker(spec string) int {
	var w crashWorker
	if err := json.Unmarshal([]byte(spec), &w); err != nil {
		fmt.Fprintln(os.Stderr, "crash worker:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	app := runtime.NewApp("crash-worker", runtime.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))))
	app.Mount(New(brokerURL(), WithConnectionName("streamgen-test-crash-worker")), w.subscription())
	if err := app.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "crash worker:", err)
		return 1
	}
	return 0
}

// crashRun is what the workers of a crash loop did, each restarted after
// it crashed until the queues were empty.
type crashRun struct {
	crashes int
	// handled counts the handler calls that returned, by job.
	handled map[int]int
	// letters are the dead letters.
	letters []amqp.Delivery
	// out is every worker's output.
	out string
}

// crashProcess is one worker process of a crash loop.
type crashProcess struct {
	id             int
	cmd            *exec.Cmd
	stdout, stderr *testkit.SyncBuffer
	exited         chan error
}

// startCrashWorker starts worker id, running spec.
func startCrashWorker(t *testing.T, id int, spec []byte) *crashProcess {
	t.Helper()
	p := &crashProcess{id: id, stdout: &testkit.SyncBuffer{}, stderr: &testkit.SyncBuffer{}, exited: make(chan error, 1)}
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	p.cmd.Env = append(os.Environ(), crashWorkerEnv+"="+string(spec))
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	return p
}

// runCrashLoop declares w's queues, publishes jobs 1 to n, and runs
// workers of w, that many at once, each restarted after it crashed,
// until every job is handled or parked and the queues are empty.
func runCrashLoop(t *testing.T, adm *admin, w crashWorker, n, workers int) crashRun {
	t.Helper()
	if _, err := declareTopology(adm.conn, []*runtime.Subscription{w.subscription()}, adm.version(), slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	for id := 1; id <= n; id++ {
		publishJob(t, adm, w.Queue, "Job", job{ID: id}, runtime.WithMessageID("job-"+strconv.Itoa(id)))
	}
	spec, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	run := crashRun{handled: map[int]int{}}
	var out strings.Builder
	// collect counts what p handled, and keeps what it wrote.
	collect := func(p *crashProcess) {
		countHandled(run.handled, p.stdout.String())
		fmt.Fprintf(&out, "--- worker %d\n%s%s", p.id, p.stdout, p.stderr)
	}
	// done reports whether every job was handled or parked, counting what
	// the workers running wrote so far, and the queues are empty.
	done := func(running []*crashProcess) bool {
		handled := maps.Clone(run.handled)
		for _, p := range running {
			countHandled(handled, p.stdout.String())
		}
		healthy := 0
		for id := range handled {
			if id != w.Bad {
				healthy++
			}
		}
		if healthy+adm.ready(w.Queue+".dl") < n {
			return false
		}
		for _, q := range []string{w.Queue, w.Queue + runtime.SuspectQueueSuffix} {
			if adm.ready(q) > 0 || adm.unacked(q) > 0 {
				return false
			}
		}
		return true
	}
	procs := make([]*crashProcess, workers)
	started := 0
	for i := range procs {
		started++
		procs[i] = startCrashWorker(t, started, spec)
	}
	// fail stops the workers still running (those not nil) and fails t.
	fail := func(format string, args ...any) {
		t.Helper()
		for _, p := range procs {
			if p != nil {
				_ = p.cmd.Process.Kill()
				<-p.exited
				collect(p)
			}
		}
		t.Fatalf(format+"; the workers wrote:\n%s", append(args, out.String())...)
	}
	deadline := time.Now().Add(patience * time.Duration(crashAttempts+2))
	for !done(procs) {
		if time.Now().After(deadline) {
			fail("the workers did not empty the queues in %v", patience*time.Duration(crashAttempts+2))
		}
		time.Sleep(50 * time.Millisecond)
		for i, p := range procs {
			select {
			case err := <-p.exited:
				collect(p)
				procs[i] = nil
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != crashExit {
					fail("worker %d ended with %v, want exit status %d from a crash", p.id, err, crashExit)
				}
				run.crashes++
				if run.crashes > crashAttempts+2 {
					fail("%d crashes and the queues are not empty", run.crashes)
				}
				started++
				procs[i] = startCrashWorker(t, started, spec)
			default:
			}
		}
	}
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		err := <-p.exited
		collect(p)
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee) && ee.ExitCode() == crashExit:
			// A crash this loop had not seen yet: done can see its
			// consequence (the bad job parked by another worker) before
			// the crashed worker's exit reaches p.exited.
			run.crashes++
		default:
			t.Errorf("worker %d did not stop cleanly: %v", p.id, err)
		}
	}
	for {
		d, ok := adm.get(w.Queue + ".dl")
		if !ok {
			break
		}
		run.letters = append(run.letters, d)
	}
	run.out = out.String()
	return run
}

// The crash isolation test of the issue: one message among 50 makes the
// worker exit, with a prefetch of 50 and max_attempts 3, and workers are
// restarted until the queues are empty. The message is parked after it
// crashed the worker 3 times, with a reason that says so, and every other
// message is handled, none parked: a crash counts only against the
// message that caused it. Before, on a quorum queue (RabbitMQ 4.3) 19 of
// 20 healthy messages prefetched with it were parked with it, since each
// crash counted against every message the worker held; on a classic
// queue nothing counted the crashes, and the loop never ended.
//
// Run it on RabbitMQ 4.3 too: STREAMGEN_RABBITMQ4_PORT=5676 .ci/rabbitmq4
// run go test -race -count=1 -run TestACrashCountsOnlyAgainstTheMessageThatCausedIt ./runtime/rabbitmq/
func TestACrashCountsOnlyAgainstTheMessageThatCausedIt(t *testing.T) {
	testkit.NoLeaks(t)
	for _, tc := range []struct {
		qt         runtime.QueueType
		n, workers int
	}{
		{runtime.QuorumQueue, 50, 1},
		{runtime.ClassicQueue, 50, 1},
		// Three workers at once, with more jobs than they hold: what one
		// worker's crash brings back goes to the others, which hold
		// healthy jobs of their own.
		{runtime.QuorumQueue, 300, 3},
		{runtime.ClassicQueue, 300, 3},
	} {
		t.Run(fmt.Sprintf("%s/%d workers", tc.qt, tc.workers), func(t *testing.T) {
			adm := newAdmin(t)
			qt, n := tc.qt, tc.n
			const bad = 20
			w := crashWorker{Queue: adm.queue("crash-" + string(qt)), QueueType: qt, Prefetch: 50, Bad: bad}
			run := runCrashLoop(t, adm, w, n, tc.workers)
			t.Logf("RabbitMQ %v, %s queue, %d workers: %d crashes, %d jobs handled (%d handler calls), %d parked",
				adm.version(), qt, tc.workers, run.crashes, len(run.handled), sum(run.handled), len(run.letters))
			if run.crashes != crashAttempts {
				t.Errorf("the workers crashed %d times, want %d: the bad message runs max_attempts times, then it is parked", run.crashes, crashAttempts)
			}
			var missing []int
			for id := 1; id <= n; id++ {
				if id != bad && run.handled[id] == 0 {
					missing = append(missing, id)
				}
			}
			if len(missing) > 0 {
				t.Errorf("healthy jobs %v were never handled", missing)
			}
			var parked []string
			for _, l := range run.letters {
				parked = append(parked, l.MessageId)
			}
			if !slices.Equal(parked, []string{"job-" + strconv.Itoa(bad)}) {
				t.Fatalf("parked %v, want job-%d alone; the workers wrote:\n%s", parked, bad, run.out)
			}
			want := map[string]string{
				runtime.HeaderDeadLetterReason:   fmt.Sprintf("crashed the worker (or lost its connection, or could not send its copy) %d times while being handled: parked without running it again", crashAttempts),
				runtime.HeaderDeadLetterSource:   w.Queue,
				runtime.HeaderDeadLetterAttempts: "1",
				runtime.HeaderDeadLetterPoison:   "false",
			}
			for k, v := range want {
				if got := fmt.Sprint(run.letters[0].Headers[k]); got != v {
					t.Errorf("dead letter %s = %q, want %q", k, got, v)
				}
			}
			if !strings.Contains(run.out, "message parked") {
				t.Errorf("no worker logged the parking:\n%s", run.out)
			}
			for _, q := range []string{w.Queue, w.Queue + runtime.SuspectQueueSuffix, w.Queue + ".dl"} {
				if adm.exists(q) && adm.ready(q) != 0 {
					t.Errorf("%d messages left in %s, want none", adm.ready(q), q)
				}
			}
		})
	}
}

// countHandled counts in handled the jobs a worker's output says it
// handled.
func countHandled(handled map[int]int, output string) {
	sc := bufio.NewScanner(strings.NewReader(output))
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), handledLine); ok {
			if n, err := strconv.Atoi(id); err == nil {
				handled[n]++
			}
		}
	}
}

// sum adds up the counts of m.
func sum(m map[int]int) int {
	total := 0
	for _, k := range m {
		total += k
	}
	return total
}

// Messages that came back after their worker died (held by a consumer
// whose channel closed unsettled) are set aside on the suspect queue with
// one crash counted, which the worker consumes one delivery at a time,
// and each runs alone from there, never beside another handler call,
// while the others run as they come; and the subscription runs its
// concurrency's worth of calls at once afterwards.
func TestMessagesThatCameBackRunAloneAndTheRestAtFullSpeed(t *testing.T) {
	testkit.NoLeaks(t)
	for _, qt := range []runtime.QueueType{runtime.QuorumQueue, runtime.ClassicQueue} {
		t.Run(string(qt), func(t *testing.T) {
			adm := newAdmin(t)
			q := adm.queue("alone-" + string(qt))
			// back came back; fresh are published beside them; then later
			// come after them all.
			const back, fresh, later, concurrency = 5, 8, 8, 4
			var (
				mu              sync.Mutex
				running, inFlow int
				reached         bool
				beside          []int
				crashCounts     []string
			)
			together := make(chan struct{})
			h := runtime.Handle("Job", runtime.Policy{MaxAttempts: 3}, func(_ context.Context, j *job, md runtime.Metadata) runtime.Outcome {
				mu.Lock()
				running++
				if j.ID <= back {
					crashCounts = append(crashCounts, md.Headers[adapter.HeaderCrashes])
					if running > 1 {
						beside = append(beside, j.ID)
					}
				}
				if j.ID > back+fresh {
					inFlow++
					if inFlow == concurrency && !reached {
						reached = true
						close(together)
					}
				}
				mu.Unlock()
				if j.ID > back+fresh {
					// Wait until the subscription runs its concurrency's
					// worth of calls at once.
					select {
					case <-together:
					case <-time.After(10 * time.Second):
					}
				} else {
					time.Sleep(20 * time.Millisecond)
				}
				mu.Lock()
				if j.ID <= back && running > 1 {
					beside = append(beside, j.ID)
				}
				running--
				if j.ID > back+fresh {
					inFlow--
				}
				mu.Unlock()
				return runtime.Ack()
			})
			s := sub(q, 0, h)
			s.QueueType, s.Concurrency, s.Prefetch = qt, concurrency, 20
			if _, err := declareTopology(adm.conn, []*runtime.Subscription{s}, adm.version(), slog.New(slog.DiscardHandler)); err != nil {
				t.Fatal(err)
			}
			for id := 1; id <= back; id++ {
				publishJob(t, adm, q, "Job", job{ID: id})
			}
			adm.handBack(q, back)
			for id := back + 1; id <= back+fresh; id++ {
				publishJob(t, adm, q, "Job", job{ID: id})
			}
			a := runApp(t, newTestBroker(), s)
			testkit.Eventually(t, "the jobs to be handled", func() bool { return a.stats(q).Acked == back+fresh })
			// The worker takes one suspect at a time.
			prefetch := map[string]string{}
			for line := range strings.Lines(rabbitmqctl(t, "list_consumers", "-q", "--no-table-headers", "queue_name", "prefetch_count")) {
				if f := strings.Fields(line); len(f) == 2 {
					prefetch[f[0]] = f[1]
				}
			}
			if got := prefetch[q+runtime.SuspectQueueSuffix]; got != "1" {
				t.Errorf("the consumer of %s%s has a prefetch of %q, want 1 (consumers: %v)", q, runtime.SuspectQueueSuffix, got, prefetch)
			}
			for id := back + fresh + 1; id <= back+fresh+later; id++ {
				publishJob(t, adm, q, "Job", job{ID: id})
			}
			testkit.Eventually(t, "the later jobs to be handled", func() bool { return a.stats(q).Acked == back+fresh+later })

			mu.Lock()
			defer mu.Unlock()
			if len(beside) > 0 {
				t.Errorf("jobs that came back ran beside another call: %v", beside)
			}
			if !reached {
				t.Errorf("the subscription never ran %d calls at once after the jobs that came back", concurrency)
			}
			if len(crashCounts) != back {
				t.Errorf("%d calls of jobs that came back, want %d", len(crashCounts), back)
			}
			for _, c := range crashCounts {
				if c != "1" {
					t.Errorf("the jobs that came back ran with crash counts %q, want \"1\" each", crashCounts)
					break
				}
			}
		})
	}
}
