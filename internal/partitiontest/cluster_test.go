//go:build partitions

package partitiontest

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime/rabbitmq"
)

// cluster is the cluster .ci/rabbitmq-partitions started: node i (0-based)
// listens at urls[i], in a network namespace of its own.
type cluster struct {
	t       *testing.T
	urls    []string
	nodes   []string
	ctlCmd  string // CTL I ARGS...: rabbitmqctl against node I (1-based)
	cutCmd  string // CUT GROUP GROUP... | CUT heal
	version string
}

// theCluster returns the cluster, whole, or fails the test.
func theCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{
		t:       t,
		ctlCmd:  os.Getenv("STREAMGEN_PARTITION_CTL"),
		cutCmd:  os.Getenv("STREAMGEN_PARTITION_CUT"),
		version: os.Getenv("STREAMGEN_PARTITION_VERSION"),
	}
	urls, nodes := os.Getenv("STREAMGEN_PARTITION_URLS"), os.Getenv("STREAMGEN_PARTITION_NODES")
	if urls == "" || nodes == "" || c.ctlCmd == "" || c.cutCmd == "" || c.version == "" {
		t.Fatal("STREAMGEN_PARTITION_URLS, _NODES, _CTL, _CUT and _VERSION are not set: run these tests with make test-partitions, " +
			"which starts three-node RabbitMQ clusters in network namespaces of their own for them (.ci/rabbitmq-partitions) and removes them afterwards")
	}
	c.urls, c.nodes = strings.Split(urls, ","), strings.Split(nodes, ",")
	if len(c.urls) != 3 || len(c.nodes) != 3 {
		t.Fatalf("the cluster has %d URLs and %d nodes, want 3 of each", len(c.urls), len(c.nodes))
	}
	c.waitWhole()
	return c
}

// run runs a command of the cluster's, bounded, and returns its output.
func (c *cluster) run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// ctl runs rabbitmqctl against node i and returns its output.
func (c *cluster) ctl(i int, args ...string) string {
	c.t.Helper()
	out, err := c.run(c.ctlCmd, append([]string{strconv.Itoa(i + 1), "-q"}, args...)...)
	if err != nil {
		c.t.Fatalf("rabbitmqctl -n %s %s: %v\n%s", c.nodes[i], strings.Join(args, " "), err, out)
	}
	return out
}

// cut cuts the network between groups of nodes (0-based indexes).
func (c *cluster) cut(groups ...[]int) {
	c.t.Helper()
	var args []string
	for _, g := range groups {
		var s strings.Builder
		for _, i := range g {
			s.WriteString(strconv.Itoa(i + 1))
		}
		args = append(args, s.String())
	}
	if out, err := c.run(c.cutCmd, args...); err != nil {
		c.t.Fatalf("cut %v: %v\n%s", args, err, out)
	}
}

// heal ends every partition and waits until the cluster is whole again.
func (c *cluster) heal() {
	c.t.Helper()
	c.healNetwork()
	c.waitWhole()
}

// healNetwork ends every partition, and does not wait for the cluster.
func (c *cluster) healNetwork() {
	c.t.Helper()
	if out, err := c.run(c.cutCmd, "heal"); err != nil {
		c.t.Fatalf("heal: %v\n%s", err, out)
	}
}

// wholeFor bounds how long a cluster may take to be whole again after a
// partition healed: a node that paused itself restarts its application.
const wholeFor = 4 * time.Minute

// waitWhole waits until every node runs its application and sees the
// other two running.
func (c *cluster) waitWhole() {
	c.t.Helper()
	deadline := time.Now().Add(wholeFor)
	for i := range c.nodes {
		for {
			out, err := c.run(c.ctlCmd, strconv.Itoa(i+1), "-q", "eval", "length(rabbit_nodes:all_running()).")
			if err == nil && out == "3" {
				break
			}
			if time.Now().After(deadline) {
				c.t.Fatalf("the cluster is not whole %v after the partition healed: %s sees %q running (%v)", wholeFor, c.nodes[i], out, err)
			}
			time.Sleep(time.Second)
		}
	}
}

// waitRunning waits until node i sees n nodes running (itself included),
// for at most patience, and returns how long that took.
func (c *cluster) waitRunning(i, n int, patience time.Duration) time.Duration {
	c.t.Helper()
	began := time.Now()
	for {
		out, err := c.run(c.ctlCmd, strconv.Itoa(i+1), "-q", "eval", "length(rabbit_nodes:all_running()).")
		if err == nil && out == strconv.Itoa(n) {
			return time.Since(began)
		}
		if time.Since(began) > patience {
			c.t.Fatalf("%s does not see %d nodes running after %v: it sees %q (%v)", c.nodes[i], n, patience, out, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// leaderOf returns the index of the node that leads quorum queue q, as the
// cluster's metadata says.
func (c *cluster) leaderOf(q string) int {
	c.t.Helper()
	out := c.ctl(0, "eval", `{ok, Q} = rabbit_amqqueue:lookup(rabbit_misc:r(<<"/">>, queue, <<"`+q+`">>)), {_, N} = amqqueue:get_pid(Q), N.`)
	node := strings.Trim(out, `'`)
	for i, n := range c.nodes {
		if n == node {
			return i
		}
	}
	c.t.Fatalf("%s is led by %q, no node of the cluster", q, out)
	return -1
}

// rotate returns the cluster's URLs as a list that starts at node i.
func (c *cluster) rotate(i int) string {
	var out []string
	for k := range c.urls {
		out = append(out, c.urls[(i+k)%len(c.urls)])
	}
	return strings.Join(out, ",")
}

// nodeOf returns the index of the node a redacted URL of the cluster
// names, or -1.
func (c *cluster) nodeOf(redacted string) int {
	for i, u := range c.urls {
		if rabbitmq.RedactURL(u) == redacted {
			return i
		}
	}
	return -1
}
