//go:build cluster

// The cluster tests run against a three-node RabbitMQ cluster of their
// own: make test-cluster starts it (.ci/rabbitmq-cluster), runs them, and
// removes it. Without the cluster they fail, saying how to run them.

package rabbitmq

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/streamtest"
)

// cluster is the test cluster: node i listens at urls[i].
type cluster struct {
	t     *testing.T
	urls  []string
	nodes []string
}

// theCluster returns the cluster .ci/rabbitmq-cluster started, or fails
// the test.
func theCluster(t *testing.T) *cluster {
	t.Helper()
	urls, nodes := os.Getenv("STREAMGEN_CLUSTER_URLS"), os.Getenv("STREAMGEN_CLUSTER_NODES")
	if urls == "" || nodes == "" {
		t.Fatal("STREAMGEN_CLUSTER_URLS and STREAMGEN_CLUSTER_NODES are not set: run these tests with make test-cluster, " +
			"which starts a three-node RabbitMQ cluster for them (.ci/rabbitmq-cluster) and removes it afterwards")
	}
	c := &cluster{t: t, urls: splitAddresses(urls), nodes: strings.Split(nodes, ",")}
	if len(c.urls) != 3 || len(c.nodes) != 3 {
		t.Fatalf("the cluster has %d URLs and %d nodes, want 3 of each", len(c.urls), len(c.nodes))
	}
	for i := range c.nodes {
		c.waitRunning(i)
	}
	return c
}

// ctl runs rabbitmqctl against node i and returns its output.
func (c *cluster) ctl(i int, args ...string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "rabbitmqctl", append([]string{"-q", "-n", c.nodes[i]}, args...)...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("rabbitmqctl -n %s %s: %v\n%s", c.nodes[i], strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// waitRunning waits until node i runs its RabbitMQ application.
func (c *cluster) waitRunning(i int) {
	c.t.Helper()
	c.ctl(i, "await_startup", "--timeout", "120")
}

// stopApp stops the RabbitMQ application on node i (the Erlang node stays
// up, as after a crash of the broker only), and starts it again after the
// test unless the test did.
func (c *cluster) stopApp(i int) {
	c.t.Helper()
	c.ctl(i, "stop_app")
	c.t.Cleanup(func() { c.startApp(i) })
}

// startApp starts the RabbitMQ application on node i and waits for it.
func (c *cluster) startApp(i int) {
	c.t.Helper()
	c.ctl(i, "start_app")
	c.waitRunning(i)
}

// nodeOf returns the index of the node a URL of the cluster names.
func (c *cluster) nodeOf(redacted string) int {
	c.t.Helper()
	for i, u := range c.urls {
		if RedactURL(u) == redacted {
			return i
		}
	}
	c.t.Fatalf("%s is not an address of the cluster", redacted)
	return -1
}

// admin returns a test connection to node i.
func (c *cluster) admin(i int) *admin {
	c.t.Helper()
	conn, err := amqp.Dial(c.urls[i])
	if err != nil {
		c.t.Fatalf("node %s does not answer at %s: %v", c.nodes[i], RedactURL(c.urls[i]), err)
	}
	c.t.Cleanup(func() { _ = conn.Close() })
	return &admin{t: c.t, conn: conn}
}

// With the first address down, the Broker starts on the next one.
func TestClusterFailoverAtStartup(t *testing.T) {
	noLeaks(t)
	c := theCluster(t)
	c.stopApp(0)
	adm := c.admin(1)
	q := adm.queue("cluster-startup")
	b := New(strings.Join(c.urls, ","), WithAddressesInOrder(), WithConnectionName("streamgen-test-startup"))
	var calls calls
	a := runApp(t, b, sub(q, 0, handler("Job", runtime.Policy{}, &calls, alwaysAck)))
	started := a.logs.Find(slog.LevelInfo, "rabbitmq: consuming")
	if len(started) != 1 {
		t.Fatalf("logged %d starts, want 1", len(started))
	}
	if n := c.nodeOf(started[0].Attr("url")); n != 1 {
		t.Errorf("started on %s, want %s: %s does not answer", c.nodes[n], c.nodes[1], c.nodes[0])
	}
	publishJob(t, b, q, "Job", job{ID: 7})
	eventually(t, "the job to be handled", func() bool { return calls.len() == 1 })
	t.Logf("started on %s with %s down", started[0].Attr("url"), c.nodes[0])
}

// While a memory alarm is in force, the broker blocks the publishing
// connection: the Broker logs it with the broker's reason, Blocked
// reports it, and Shutdown still returns within its deadline, with an
// error, instead of waiting for the alarm to clear.
func TestClusterShutdownWhileTheBrokerBlocksPublishing(t *testing.T) {
	noLeaks(t)
	c := theCluster(t)
	const node = 2
	adm := c.admin(node)
	q := adm.queue("cluster-blocked")
	logs := streamtest.NewLogRecorder(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	b := New(c.urls[node], WithConnectionName("streamgen-test-blocked"), WithLogger(logs.Logger()), WithConfirmTimeout(time.Second))
	const timeout = 3 * time.Second
	a := startApp(t, b, timeout, sub(q, 0, handler("Job", runtime.Policy{}, &calls{}, alwaysAck)))
	a.waitReady()

	alarm := func() {
		t.Helper()
		c.ctl(node, "set_vm_memory_high_watermark", "0.00001")
		t.Cleanup(func() { c.ctl(node, "set_vm_memory_high_watermark", "0.4") })
	}
	// The broker blocks a connection once it publishes during the alarm.
	publishBlocked := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := runtime.Publish(ctx, b, q, "Job", job{ID: 1}); err == nil {
			t.Fatal("a publish during a memory alarm was confirmed")
		}
		eventually(t, "the publishing connection to be blocked", func() bool { _, blocked := b.Blocked(); return blocked })
	}

	alarm()
	publishBlocked()
	reason, _ := b.Blocked()
	if reason != "publish: low on memory" {
		t.Errorf("Blocked() = %q, want %q", reason, "publish: low on memory")
	}
	blocked := logs.Find(slog.LevelWarn, "rabbitmq: the broker blocked the connection: it reads nothing from it until its alarm clears")
	if len(blocked) == 0 || blocked[0].Attr("reason") != "low on memory" || blocked[0].Attr("connection") != "publish" {
		t.Fatalf("connection.blocked logged as %v, want a warning with reason=low on memory connection=publish", blocked)
	}

	c.ctl(node, "set_vm_memory_high_watermark", "0.4")
	eventually(t, "the publishing connection to be unblocked", func() bool { _, blocked := b.Blocked(); return !blocked })
	if len(logs.Find(slog.LevelInfo, "rabbitmq: the broker unblocked the connection")) == 0 {
		t.Error("connection.unblocked was not logged")
	}
	publishJob(t, b, q, "Job", job{ID: 2})

	alarm()
	publishBlocked()
	began := time.Now()
	done := make(chan error, 1)
	go func() { done <- a.stop() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(timeout + 20*time.Second):
		t.Fatalf("Shutdown still running %v after its %v deadline, while the broker blocks the connection", time.Since(began)-timeout, timeout)
	}
	if err == nil || !strings.Contains(err.Error(), "the publishing connection did not close in time (the broker blocks it: publish: low on memory), so it was dropped") {
		t.Errorf("Shutdown = %v, want an error saying the blocked publishing connection was dropped", err)
	}
	t.Logf("Shutdown returned after %v: %v", time.Since(began).Round(10*time.Millisecond), err)
}
