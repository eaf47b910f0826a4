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
