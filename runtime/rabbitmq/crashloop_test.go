package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
)

// crashWorkerEnv names the queue that the test binary, run again with it
// set, works on as a worker whose handler exits the process on job 1 (see
// TestMain and runCrashWorker).
const crashWorkerEnv = "STREAMGEN_TEST_CRASH_WORKER"

// crashExit is the exit status of a worker that crashed on job 1.
const crashExit = 3

// crashAttempts is the crash-loop subscription's max_attempts, and so its
// delivery limit.
const crashAttempts = 3

// crashSubscription is a quorum subscription on queue with a dead-letter
// queue and no delivery_limit, whose handler exits the process on job 1
// and acknowledges any other.
func crashSubscription(queue string) *runtime.Subscription {
	s := sub(queue, 50*time.Millisecond, runtime.Handle("Job", runtime.Policy{MaxAttempts: crashAttempts, DeadLetter: queue + ".dl"},
		func(_ context.Context, j *job, _ runtime.Metadata) runtime.Outcome {
			if j.ID == 1 {
				os.Exit(crashExit)
			}
			return runtime.Ack()
		}))
	s.QueueType = runtime.QuorumQueue
	return s
}

// runCrashWorker runs crashSubscription(queue) until SIGTERM and returns
// the process's exit status.
func runCrashWorker(queue string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	app := runtime.NewApp("crash-worker", runtime.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))))
	app.Mount(New(brokerURL(), WithConnectionName("streamgen-test-crash-worker")), crashSubscription(queue))
	if err := app.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "crash worker:", err)
		return 1
	}
	return 0
}

// A message whose handler crashes the worker, on a quorum queue with no
// delivery_limit, is parked once, with the reason, after max_attempts
// crashes of a worker restarted after each: never dropped by the broker
// (RabbitMQ 4 drops it after 20 deliveries unless the queue dead-letters)
// and never retried forever (RabbitMQ 3 has no default limit).
func TestACrashLoopingMessageIsParkedOnceAndNeverDropped(t *testing.T) {
	adm := newAdmin(t)
	q := adm.queue("crash")
	crashes, published := 0, false
	var letter amqp.Delivery
	for letter.Body == nil {
		if crashes > crashAttempts+2 {
			t.Fatalf("%d crashes and the message is not parked", crashes)
		}
		out := &testkit.SyncBuffer{}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashWorkerEnv+"="+q)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		if !published {
			testkit.Eventually(t, "the worker to declare its queues", func() bool { return adm.exists(q) && adm.exists(q+".dl") })
			publishJob(t, adm, q, "Job", job{ID: 2})
			publishJob(t, adm, q, "Job", job{ID: 1})
			published = true
		}
		deadline := time.After(patience)
	wait:
		for {
			select {
			case err := <-exited:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != crashExit {
					t.Fatalf("the worker ended with %v, want exit status %d from the crash:\n%s", err, crashExit, out)
				}
				crashes++
				break wait
			case <-time.After(50 * time.Millisecond):
				if d, ok := adm.get(q + ".dl"); ok {
					letter = d
					_ = cmd.Process.Signal(syscall.SIGTERM)
					if err := <-exited; err != nil {
						t.Fatalf("the worker did not stop cleanly after parking: %v\n%s", err, out)
					}
					if !strings.Contains(out.String(), "message parked") {
						t.Errorf("the worker did not log the parking:\n%s", out)
					}
					break wait
				}
			case <-deadline:
				_ = cmd.Process.Kill()
				t.Fatalf("the worker neither crashed nor parked the message in %v:\n%s", patience, out)
			}
		}
	}
	if crashes != crashAttempts {
		t.Errorf("the worker crashed %d times, want %d: the handler runs max_attempts times, then the message is parked", crashes, crashAttempts)
	}
	want := map[string]string{
		runtime.HeaderDeadLetterReason:   fmt.Sprintf("delivered %d times without being settled: the worker crashed or lost its connection each time, or could not send the retry copy", crashAttempts),
		runtime.HeaderDeadLetterSource:   q,
		runtime.HeaderDeadLetterAttempts: "1",
		runtime.HeaderDeadLetterPoison:   "false",
	}
	for k, v := range want {
		if got := fmt.Sprint(letter.Headers[k]); got != v {
			t.Errorf("dead letter %s = %q, want %q", k, got, v)
		}
	}
	if !strings.Contains(string(letter.Body), `"id":1`) {
		t.Errorf("the dead letter is %s, want job 1", letter.Body)
	}
	if n := adm.ready(q + ".dl"); n != 0 {
		t.Errorf("%d more dead letters; want exactly one", n)
	}
	if n := adm.ready(q); n != 0 {
		t.Errorf("%d messages left in %s, want none", n, q)
	}
}
