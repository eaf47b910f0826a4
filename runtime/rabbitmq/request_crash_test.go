package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// replyWorkerEnv names the queue that the test binary, run again with it
// set, answers requests on as a worker that dies on a request of a sku
// it meets for the first time with "crash" in it (see runReplyWorker);
// replyMarkerEnv names the directory where it marks the skus it died on.
const (
	replyWorkerEnv = "STREAMGEN_TEST_REPLY_WORKER"
	replyMarkerEnv = "STREAMGEN_TEST_REPLY_MARKERS"
)

func init() {
	if q := os.Getenv(replyWorkerEnv); q != "" {
		os.Exit(runReplyWorker(q, os.Getenv(replyMarkerEnv)))
	}
}

// runReplyWorker answers the requests of queue until SIGTERM and returns
// the process's exit status; a request whose sku starts with "crash" and
// has no marker in markers yet gets one, and the process exits with
// crashExit in the middle of its handler.
func runReplyWorker(queue, markers string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	app := runtime.NewApp("reply-worker", runtime.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))))
	s := quoteSubscription(queue, runtime.Policy{}, func(ctx context.Context, q quoteRequest) (quoteReply, error) {
		if len(q.SKU) >= 5 && q.SKU[:5] == "crash" {
			marker := filepath.Join(markers, q.SKU)
			if _, err := os.Stat(marker); errors.Is(err, os.ErrNotExist) {
				_ = os.WriteFile(marker, nil, 0o644)
				os.Exit(crashExit)
			}
		}
		return quoteHandler(func(int) bool { return false })(ctx, q)
	})
	s.Concurrency = 4
	app.Mount(New(brokerURL(), WithConnectionName("streamgen-test-reply-worker")), s)
	if err := app.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "reply worker:", err)
		return 1
	}
	return 0
}

// replyWorker is a worker process of runReplyWorker.
type replyWorker struct {
	cmd    *exec.Cmd
	out    *testkit.SyncBuffer
	exited chan error
}

func startReplyWorker(t *testing.T, queue, markers string) *replyWorker {
	t.Helper()
	w := &replyWorker{out: &testkit.SyncBuffer{}, exited: make(chan error, 1)}
	w.cmd = exec.Command(os.Args[0], "-test.run=^$")
	w.cmd.Env = append(os.Environ(), replyWorkerEnv+"="+queue, replyMarkerEnv+"="+markers)
	w.cmd.Stdout, w.cmd.Stderr = w.out, w.out
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { w.exited <- w.cmd.Wait() }()
	t.Cleanup(func() {
		_ = w.cmd.Process.Kill()
	})
	return w
}

// crashed waits for the worker to die of a crash.
func (w *replyWorker) crashed(t *testing.T) {
	t.Helper()
	select {
	case err := <-w.exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != crashExit {
			t.Fatalf("the worker ended with %v, want exit status %d from the crash:\n%s", err, crashExit, w.out)
		}
	case <-time.After(patience):
		t.Fatalf("the worker did not crash:\n%s", w.out)
	}
}

// stop stops the worker with SIGTERM and waits for a clean exit.
func (w *replyWorker) stop(t *testing.T) {
	t.Helper()
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-w.exited:
		if err != nil {
			t.Fatalf("the worker did not stop cleanly: %v\n%s", err, w.out)
		}
	case <-time.After(patience):
		t.Fatalf("the worker did not stop:\n%s", w.out)
	}
}

// A worker killed in the middle of a request: its caller gets the reply
// of the redelivery to the worker that comes back, and the calls in
// flight beside it get theirs; when no worker comes back before its
// deadline, the caller gets its deadline, and the reply of the later
// redelivery is dropped with a log line.
func TestRequestWhileTheWorkerIsKilled(t *testing.T) {
	adm := newAdmin(t)
	q := adm.queue("quotes")
	markers := t.TempDir()
	r := newTestRequester(t, streamtest.NewLogRecorder(nil))

	first := startReplyWorker(t, q, markers)
	testkit.Eventually(t, "the worker to declare its queue", func() bool { return adm.exists(q) })
	type result struct {
		req quoteRequest
		got quoteReply
		err error
	}
	results := make(chan result, 5)
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
	defer cancel()
	for i, sku := range []string{"crash-a", "b", "c", "d", "e"} {
		req := quoteRequest{N: i + 1, SKU: sku}
		wg.Go(func() {
			got, err := requestQuote(ctx, r, q, req)
			results <- result{req, got, err}
		})
	}
	first.crashed(t)
	second := startReplyWorker(t, q, markers)
	wg.Wait()
	close(results)
	for res := range results {
		if want := (quoteReply{N: res.req.N, SKU: res.req.SKU, Cents: 3 * res.req.N}); res.err != nil || res.got != want {
			t.Errorf("request %+v: %+v, %v; want %+v", res.req, res.got, res.err, want)
		}
	}

	// Killed again, and no worker comes back before the deadline. The
	// request goes through a Requester of its own: a reply the first
	// requests get twice (a worker that died after replying, before its
	// ack) is dropped by theirs, with the same log line.
	logs := streamtest.NewLogRecorder(nil)
	r2 := newTestRequester(t, logs)
	short, cancelShort := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancelShort()
	_, err := requestQuote(short, r2, q, quoteRequest{N: 9, SKU: "crash-b"})
	second.crashed(t)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the caller's deadline", err)
	}
	third := startReplyWorker(t, q, markers)
	testkit.Eventually(t, "the redelivery's reply, with no caller waiting, to be dropped with a log line", func() bool {
		return len(logs.Find(slog.LevelInfo, "rabbitmq: a reply came with no request waiting for it (its caller's deadline passed); dropped")) == 1
	})
	third.stop(t)
	if n := adm.ready(q); n != 0 {
		t.Fatalf("%d requests left in the queue, want none", n)
	}
}
