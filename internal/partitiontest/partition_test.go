//go:build partitions

package partitiontest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

// retryPath is how a failed attempt waits for its retry.
type retryPath string

const (
	// queuePath: a copy of the message waits in the subscription's wait
	// queue for its delay, then the broker moves it back (retry=queue).
	queuePath retryPath = "queue"
	// brokerPath: the quorum queue holds the message handed back for its
	// delay itself (retry=broker, RabbitMQ 4.3 and later).
	brokerPath retryPath = "broker"
)

// retryPaths returns the retry paths to run on RabbitMQ version: the
// wait queues everywhere, and the queue's own delayed retry where the
// broker has it (4.3 and later).
func retryPaths(version string) []retryPath {
	paths := []retryPath{queuePath}
	if v := versionOf(version); v.DelayedRetry() {
		paths = append(paths, brokerPath)
	}
	return paths
}

// versionOf reads "4.3.6" as the version queues are declared for.
func versionOf(version string) adapter.RabbitMQVersion {
	var v adapter.RabbitMQVersion
	_, _ = fmt.Sscanf(version, "%d.%d", &v.Major, &v.Minor)
	return v
}

// apply sets the subscription up for the path.
func (p retryPath) apply(s *runtime.Subscription) {
	switch p {
	case queuePath:
		s.Retry = runtime.RetryQueue
	case brokerPath:
		s.Retry = runtime.RetryBroker
	default:
		panic("partitiontest: unknown retry path " + string(p))
	}
}

const (
	// cutFor is how long a single partition lasts: longer than the
	// Erlang net_ticktime of the nodes (10 s), so that the cluster
	// notices it and the minority pauses.
	cutFor = 20 * time.Second
	// flapFor is how long the flapping scenario partitions and heals.
	flapFor = 30 * time.Second
)

// scenario is one way of cutting the network while the workload runs.
type scenario struct {
	name, does string
	disrupt    func(c *cluster, w *workload, rng *rand.Rand) string // returns what it did
}

// isolate cuts node i off from the other two for cutFor, then heals.
// The test fails unless the other two notice the partition.
func isolate(c *cluster, i int) string {
	c.cut([]int{i}, others(i))
	began := time.Now()
	noticed := c.waitRunning(others(i)[0], 2, cutFor+time.Minute)
	time.Sleep(cutFor - time.Since(began))
	healed := time.Now()
	c.heal()
	return fmt.Sprintf("%s cut off for %v, noticed by the others after %v; whole again %v after healing",
		c.nodes[i], healed.Sub(began).Round(time.Second), noticed.Round(time.Second), time.Since(healed).Round(time.Second))
}

// others returns the two nodes other than i.
func others(i int) []int {
	var out []int
	for k := range 3 {
		if k != i {
			out = append(out, k)
		}
	}
	return out
}

var scenarios = []scenario{
	{
		name: "leader",
		does: "the node leading the quorum queue (and its wait and dead-letter queues) is cut off from the other two",
		disrupt: func(c *cluster, w *workload, _ *rand.Rand) string {
			return isolate(c, c.leaderOf(w.queue))
		},
	},
	{
		name: "worker",
		does: "the node the worker's connections are on is cut off from the other two",
		disrupt: func(c *cluster, w *workload, _ *rand.Rand) string {
			return isolate(c, w.at.worker)
		},
	},
	{
		name: "half",
		does: "a node chosen at random is cut off from the other two",
		disrupt: func(c *cluster, _ *workload, rng *rand.Rand) string {
			return isolate(c, rng.IntN(3))
		},
	},
	{
		name: "flapping",
		does: "for 30 s, a random node is cut off for 2 to 5 s, then the network heals for 2 to 5 s, again and again",
		disrupt: func(c *cluster, _ *workload, rng *rand.Rand) string {
			began := time.Now()
			var cuts []string
			for time.Since(began) < flapFor {
				i := rng.IntN(3)
				c.cut([]int{i}, others(i))
				cuts = append(cuts, strconv.Itoa(i+1))
				time.Sleep(time.Duration(2000+rng.IntN(3000)) * time.Millisecond)
				c.healNetwork()
				time.Sleep(time.Duration(2000+rng.IntN(3000)) * time.Millisecond)
			}
			healed := time.Now()
			c.heal()
			return fmt.Sprintf("%d cuts in %v (nodes %s); whole again after %v", len(cuts), healed.Sub(began).Round(time.Second),
				strings.Join(cuts, ","), time.Since(healed).Round(time.Second))
		},
	},
}

// seed returns the seed of the random choices: STREAMGEN_PARTITION_SEED,
// to run the choices of an earlier run again, else a fresh one.
func seed(t *testing.T) uint64 {
	if s := os.Getenv("STREAMGEN_PARTITION_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("STREAMGEN_PARTITION_SEED=%q: %v", s, err)
		}
		return n
	}
	return rand.Uint64()
}

// TestPartitions runs each scenario on each retry path while 5,000
// messages flow (20% fail once, 5% always), and accounts for every
// message by id: none may be lost, none may run with a wrong attempt
// number; duplicates are counted and reported.
func TestPartitions(t *testing.T) {
	c := theCluster(t)
	s := seed(t)
	t.Logf("RabbitMQ %s; seed %d (STREAMGEN_PARTITION_SEED=%d runs the same choices)", c.version, s, s)
	rng := rand.New(rand.NewPCG(s, s))
	// The queues are declared on node 0, which so leads them; the worker
	// consumes from node 1; the publisher publishes through node 2. Each
	// connection fails over to the others.
	at := placement{leader: 0, worker: 1, publisher: 2}
	var all []figures
	for _, sc := range scenarios {
		for _, path := range retryPaths(c.version) {
			t.Run(sc.name+"/"+string(path), func(t *testing.T) {
				testkit.NoLeaks(t)
				c := *c
				c.t = t
				w := newWorkload(t, &c, sc.name, path, at)
				f := w.run(sc.name, path, func() {
					t.Logf("%s: %s", sc.name, sc.disrupt(&c, w, rng))
				})
				all = append(all, f)
				t.Logf("%s on the %s path: %d published (%d publishes sent again), %d handler calls, %d redelivered, %d reconnects; "+
					"lost %d, duplicated successes %d, duplicated parks %d, wrong attempts %d, unexpected %d; settled %v after healing, %v in all",
					sc.name, path, f.published, f.republished, f.calls, f.redelivered, f.reconnects,
					f.lost, f.dupSuccesses, f.dupParks, f.wrongAttempts, f.unexpected, f.settled.Round(time.Second), f.took.Round(time.Second))
			})
		}
	}
	var table strings.Builder
	fmt.Fprintf(&table, "RabbitMQ %s, seed %d\n", c.version, s)
	fmt.Fprintf(&table, "| scenario | retry path | published | sent again | handler calls | redelivered | reconnects | lost | duplicated successes | duplicated parks | wrong attempts | unexpected | settled after healing | took |\n")
	fmt.Fprintf(&table, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, f := range all {
		fmt.Fprintf(&table, "| %s | %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %v | %v |\n",
			f.scenario, f.path, f.published, f.republished, f.calls, f.redelivered, f.reconnects,
			f.lost, f.dupSuccesses, f.dupParks, f.wrongAttempts, f.unexpected, f.settled.Round(time.Second), f.took.Round(time.Second))
	}
	t.Logf("figures:\n%s", table.String())
}
