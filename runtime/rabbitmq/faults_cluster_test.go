//go:build cluster

package rabbitmq

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// memoryAlarm raises a memory alarm on node i, which blocks the
// publishing connections of the whole cluster, and returns what clears
// it; the test's cleanup clears it too.
func (c *cluster) memoryAlarm(i int) (clear func()) {
	c.t.Helper()
	c.ctl(i, "eval", "rabbit_alarm:set_alarm({{resource_limit, memory, node()}, []}).")
	var once sync.Once
	clear = func() {
		once.Do(func() { c.ctl(i, "eval", "rabbit_alarm:clear_alarm({resource_limit, memory, node()}).") })
	}
	c.t.Cleanup(clear)
	return clear
}

// A memory alarm that outlasts the confirm timeout many times over does
// not multiply retries: a retry copy the blocked connection holds keeps
// its original until the alarm clears, so a message that fails once
// succeeds once. Meanwhile the health report says which copies wait, and
// how many prefetch slots their originals hold.
func TestClusterMemoryAlarmDoesNotMultiplyRetries(t *testing.T) {
	testkit.NoLeaks(t)
	c := theCluster(t)
	const (
		node           = 1
		n              = 10
		confirmTimeout = time.Second
		alarmFor       = 8 * confirmTimeout
	)
	adm := c.admin(node)
	q := adm.queue("cluster-alarm")

	gate := make(chan struct{})
	var mu sync.Mutex
	calls, succeeded := map[int]int{}, map[int]int{}
	h := runtime.Handle("Job", runtime.Policy{MaxAttempts: 5}, func(_ context.Context, j *job, md runtime.Metadata) runtime.Outcome {
		mu.Lock()
		calls[j.ID]++
		first := calls[j.ID] == 1
		mu.Unlock()
		if md.Attempt == 1 {
			if first {
				<-gate // every message is in a handler before the alarm
			}
			return runtime.Retry().Because(errFailed)
		}
		mu.Lock()
		succeeded[j.ID]++
		mu.Unlock()
		return runtime.Ack()
	})
	s := &runtime.Subscription{Name: q, Broker: runtime.RabbitMQ, Concurrency: n,
		RetryDelays: []time.Duration{200 * time.Millisecond}, Handlers: []runtime.Handler{h}}
	logs := streamtest.NewLogRecorder(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	b := New(c.urls[node], WithConnectionName("streamgen-test-alarm-"+randomHex(4)), WithLogger(logs.Logger()),
		WithConfirmTimeout(confirmTimeout))
	a := runApp(t, b, s)
	for id := range n {
		publishJob(t, adm, q, "Job", job{ID: id})
	}
	testkit.Eventually(t, "every message in its first handler call", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(calls) == n
	})

	clear := c.memoryAlarm(node)
	close(gate) // n retry copies, which the broker blocks
	testkit.Eventually(t, "the publishing connection to be blocked", func() bool { _, blocked := b.Blocked(); return blocked })
	began := time.Now()
	var warned []string
	testkit.Eventually(t, "the health report to show the copies awaiting their confirm", func() bool {
		warned = a.app.Readiness().Brokers[0].Warnings
		return len(warned) == 1 && strings.Contains(warned[0], "10 copies of \""+q+"\" await their confirm while the broker blocks publishing (publish: low on memory)")
	})
	if !strings.Contains(warned[0], "their originals hold 10 of its 20 prefetch slots") {
		t.Errorf("health warning %q, want it to say how many prefetch slots the originals hold", warned[0])
	}
	time.Sleep(alarmFor - time.Since(began))
	mu.Lock()
	during := 0
	for _, k := range calls {
		during += k
	}
	mu.Unlock()
	if during != n {
		t.Errorf("%d handler calls during the alarm, want %d: originals came back while their copies waited", during, n)
	}
	clear()

	testkit.Eventually(t, "every message to succeed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(succeeded) == n
	})
	// A duplicate chain would land soon after: its copy was sent with the
	// first, and its delay is 200 ms.
	time.Sleep(3 * time.Second)
	mu.Lock()
	defer mu.Unlock()
	for id := range n {
		if calls[id] != 2 || succeeded[id] != 1 {
			t.Errorf("message %d: %d handler calls, %d successes; want 2 and 1", id, calls[id], succeeded[id])
		}
	}
	if w := a.app.Readiness().Brokers[0].Warnings; len(w) != 0 {
		t.Errorf("health warnings after the alarm: %q, want none", w)
	}
}

// suspendQueue suspends the process of classic queue q on node i, as a
// broker that holds a queue's expired messages does, and returns what
// resumes it; the test's cleanup resumes it too.
func (c *cluster) suspendQueue(i int, q string) (resume func()) {
	c.t.Helper()
	pid := `{ok, Q} = rabbit_amqqueue:lookup(rabbit_misc:r(<<"/">>, queue, <<"` + q + `">>)), P = amqqueue:get_pid(Q), `
	c.ctl(i, "eval", pid+"sys:suspend(P).")
	var once sync.Once
	resume = func() { once.Do(func() { c.ctl(i, "eval", pid+"sys:resume(P).") }) }
	c.t.Cleanup(resume)
	return resume
}

// A wait queue whose expired copies stop coming back is reported: a
// warning in the log and in the health report once they are overdue, and
// an info line when they come back. Nothing is lost.
func TestClusterAStalledWaitQueueIsReported(t *testing.T) {
	testkit.NoLeaks(t)
	c := theCluster(t)
	const (
		node  = 1
		n     = 5
		delay = 5 * time.Second
	)
	adm := c.admin(node)
	q := adm.queue("cluster-stall")
	var mu sync.Mutex
	succeeded := map[int]int{}
	h := runtime.Handle("Job", runtime.Policy{MaxAttempts: 3}, func(_ context.Context, j *job, md runtime.Metadata) runtime.Outcome {
		if md.Attempt == 1 {
			return runtime.Retry().Because(errFailed)
		}
		mu.Lock()
		succeeded[j.ID]++
		mu.Unlock()
		return runtime.Ack()
	})
	s := &runtime.Subscription{Name: q, Broker: runtime.RabbitMQ, Concurrency: n,
		RetryDelays: []time.Duration{delay}, Handlers: []runtime.Handler{h}}
	b := New(c.urls[node], WithConnectionName("streamgen-test-stall-"+randomHex(4)),
		func(o *options) { o.stallAfter = time.Second })
	a := runApp(t, b, s)
	for id := range n {
		publishJob(t, adm, q, "Job", job{ID: id})
	}
	testkit.Eventually(t, "every retry copy confirmed", func() bool { return a.stats(q).Retried == n })
	resume := c.suspendQueue(node, q+".retry")
	const stalled = "rabbitmq: retry copies do not come back from their wait queue: the broker holds them (a quorum queue whose leader was lost can hold them for minutes), or they wait behind a backlog"
	testkit.Eventually(t, "the stall to be logged", func() bool { return len(a.logs.Find(slog.LevelWarn, stalled)) == 1 })
	if w := a.logs.Find(slog.LevelWarn, stalled)[0]; w.Attr("queue") != q+".retry" || w.Attr("overdue") != "5" {
		t.Errorf("stall logged as %v, want the wait queue and 5 copies overdue", w)
	}
	warned := a.app.Readiness().Brokers[0].Warnings
	if len(warned) != 1 || !strings.Contains(warned[0], `wait queue "`+q+`.retry": 5 retry copies of "`+q+`" are overdue`) {
		t.Errorf("health warnings %q, want the stalled wait queue", warned)
	}
	if ready, _ := b.Ready(); !ready {
		t.Error("not ready while a wait queue stalls; it still consumes")
	}
	resume()
	testkit.Eventually(t, "every message to succeed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(succeeded) == n
	})
	testkit.Eventually(t, "the health warning to clear", func() bool { return len(a.app.Readiness().Brokers[0].Warnings) == 0 })
	if back := a.logs.Find(slog.LevelInfo, "rabbitmq: retry copies come back from their wait queue again"); len(back) != 1 || back[0].Attr("queue") != q+".retry" {
		t.Errorf("end of the stall logged as %v, want one line naming the wait queue", back)
	}
}

// A stop during an alarm that outlasts the shutdown timeout gives up the
// copies the blocked connection holds, within the timeout, and says so.
func TestClusterShutdownGivesUpCopiesHeldByAnAlarm(t *testing.T) {
	testkit.NoLeaks(t)
	c := theCluster(t)
	const (
		node    = 1
		n       = 3
		timeout = 3 * time.Second
	)
	adm := c.admin(node)
	q := adm.queue("cluster-alarm-stop")
	var calls calls
	gate := make(chan struct{})
	fail := func(*job, runtime.Metadata) runtime.Outcome {
		<-gate
		return runtime.Retry().Because(errFailed)
	}
	s := &runtime.Subscription{Name: q, Broker: runtime.RabbitMQ, Concurrency: n,
		RetryDelays: []time.Duration{200 * time.Millisecond}, Handlers: []runtime.Handler{handler("Job", runtime.Policy{MaxAttempts: 3}, &calls, fail)}}
	b := New(c.urls[node], WithConnectionName("streamgen-test-alarm-stop-"+randomHex(4)), WithConfirmTimeout(500*time.Millisecond))
	a := startApp(t, b, timeout, s)
	a.waitReady()
	for id := range n {
		publishJob(t, adm, q, "Job", job{ID: id})
	}
	testkit.Eventually(t, "every message in its handler", func() bool { return calls.len() == n })
	c.memoryAlarm(node)
	close(gate)
	testkit.Eventually(t, "the copies to be held", func() bool {
		w := a.app.Readiness().Brokers[0].Warnings
		return len(w) == 1 && strings.HasPrefix(w[0], "3 copies of")
	})
	time.Sleep(time.Second) // two confirm timeouts: the copies are still held
	if got := calls.len(); got != n {
		t.Errorf("%d handler calls, want %d: an original came back while its copy was held", got, n)
	}
	began := time.Now()
	err := a.stop()
	took := time.Since(began)
	if took > timeout+10*time.Second {
		t.Errorf("Shutdown took %v, its timeout is %v", took, timeout)
	}
	if err == nil || !strings.Contains(err.Error(), "copies still awaiting their confirm were given up; their originals are left to the broker") {
		t.Errorf("Shutdown = %v, want it to say the held copies were given up", err)
	}
	t.Logf("Shutdown returned after %v: %v", took.Round(10*time.Millisecond), err)
}

// startCommand returns the command that starts node i again after a
// kill (.ci/rabbitmq-cluster writes one per node).
func (c *cluster) startCommand(i int) string {
	c.t.Helper()
	starts := strings.Split(os.Getenv("STREAMGEN_CLUSTER_START"), ",")
	if len(starts) != len(c.nodes) {
		c.t.Fatal("STREAMGEN_CLUSTER_START does not name a start command per node: run these tests with make test-cluster")
	}
	return starts[i]
}

// kill kills node i's Erlang VM with SIGKILL, as a crash or a power cut
// would, and starts it again after the test unless the test did.
func (c *cluster) kill(i int) {
	c.t.Helper()
	// The pid file, else the node's own word (slower on a busy machine).
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(c.startCommand(i)), "mnesia", c.nodes[i]+".pid"))
	if err != nil {
		raw = []byte(strings.Trim(c.ctl(i, "eval", "os:getpid()."), `"`))
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		c.t.Fatalf("the pid of %s: %v", c.nodes[i], err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		c.t.Fatalf("kill -9 %s (pid %d): %v", c.nodes[i], pid, err)
	}
	c.t.Cleanup(func() { c.restart(i) })
}

// restart starts node i again after kill, unless it runs.
func (c *cluster) restart(i int) {
	c.t.Helper()
	ping := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return ctlCommand(ctx, c.nodes[i], "ping").Run() == nil
	}
	if !ping() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, c.startCommand(i)).CombinedOutput()
		cancel()
		if err != nil {
			c.t.Fatalf("start %s again: %v\n%s", c.nodes[i], err, out)
		}
		for deadline := time.Now().Add(2 * time.Minute); !ping(); time.Sleep(time.Second) {
			if time.Now().After(deadline) {
				c.t.Fatalf("%s does not answer 2 minutes after it was started again", c.nodes[i])
			}
		}
	}
	c.waitRunning(i)
}

// Leader crash: the node that leads the quorum queue and its wait and
// dead-letter queues is killed with kill -9 and started again; nothing is
// lost, and a stall of the retries is reported while it lasts.
func TestClusterLeaderCrash(t *testing.T) {
	runLoss(t, false, true)
}
