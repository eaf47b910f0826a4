package outbox_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/outbox"
)

// The outbox under faults: 10,000 messages in
// 1,000 committed transactions, and a hundred more transactions rolled
// back, published by two relays, each a child process, to five routes (four
// queues and an exchange) of a RabbitMQ node of the test's own, from a
// PostgreSQL cluster of the test's own, while the relays are killed with
// SIGKILL three times, the broker is restarted once and PostgreSQL once
// (immediate shutdown: a crash, then recovery). Afterwards every message
// of a committed transaction (the orders table, written in the same
// transactions, says which committed: a commit cut by the restart may
// have landed or not) is in its queue at least once, none of a
// transaction that did not commit is anywhere, and each queue holds its
// messages in commit order (the first copy of each).
func TestOutboxUnderFaults(t *testing.T) {
	pg := startPostgres(t)
	mq := startRabbitMQ(t)
	ctx := context.Background()

	db, err := sql.Open("pgx", pg.url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ob, err := outbox.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE orders (tx INT PRIMARY KEY, ids TEXT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	conn := dialUntil(t, mq.url)
	queues := []string{"faults.q0", "faults.q1", "faults.q2", "faults.q3", "faults.x"}
	declareFaultTopology(t, conn, queues)
	conn.Close()

	relays := [2]*relayChild{startRelayChild(t, pg.url, mq.url, "A"), startRelayChild(t, pg.url, mq.url, "B")}

	// The producer: 1,000 committed transactions of 10 messages each (and
	// one in eleven rolled back), the ids in commit order, each saving
	// its order beside its messages.
	const committedTxs = 1000
	var committed, attempts atomic.Int64
	rolledBack := map[string]bool{}
	var mu sync.Mutex
	producing := make(chan struct{})
	go func() {
		defer close(producing)
		seq := 0
		for tx := 0; committed.Load() < committedTxs; tx++ {
			attempts.Add(1)
			ids, err := produce(ctx, db, ob, tx, &seq, tx%11 == 5)
			switch {
			case tx%11 == 5 && err == nil:
				mu.Lock()
				for _, id := range ids {
					rolledBack[id] = true
				}
				mu.Unlock()
			case err == nil:
				committed.Add(1)
			default:
				// PostgreSQL restarting: the commit may have landed or
				// not; the orders table says.
				time.Sleep(100 * time.Millisecond)
			}
			time.Sleep(15 * time.Millisecond)
		}
	}()
	at := func(n int64) {
		eventuallyWithin(t, 5*time.Minute, fmt.Sprintf("%d transactions committed", n), func() bool { return committed.Load() >= n })
	}
	backlog := func() string {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM streamgen_outbox").Scan(&n); err != nil {
			return "unknown (" + err.Error() + ")"
		}
		return fmt.Sprintf("%d, %d transactions committed", n, committed.Load())
	}
	at(100)
	t.Logf("kill -9 relay A (backlog %s)", backlog())
	relays[0].kill(t)
	relays[0] = startRelayChild(t, pg.url, mq.url, "A2")
	at(250)
	t.Logf("restart RabbitMQ (backlog %s)", backlog())
	mq.restart(t)
	at(400)
	t.Logf("kill -9 relay B (backlog %s)", backlog())
	relays[1].kill(t)
	relays[1] = startRelayChild(t, pg.url, mq.url, "B2")
	at(550)
	t.Logf("restart PostgreSQL, immediate (backlog %s)", backlog())
	pg.restart(t)
	at(700)
	t.Logf("kill -9 relay A2 (backlog %s)", backlog())
	relays[0].kill(t)
	relays[0] = startRelayChild(t, pg.url, mq.url, "A3")
	<-producing
	t.Logf("%d transactions tried, %d committed; waiting for the backlog (%s) to drain", attempts.Load(), committed.Load(), backlog())
	eventuallyWithin(t, 5*time.Minute, "the outbox to empty", func() bool { return strings.HasPrefix(backlog(), "0,") })
	for _, r := range relays {
		r.stop(t)
	}

	// What committed, by the orders table.
	want := map[string]bool{}
	rows, err := db.Query("SELECT ids FROM orders")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var ids string
		if err := rows.Scan(&ids); err != nil {
			t.Fatal(err)
		}
		for _, id := range strings.Fields(ids) {
			want[id] = true
		}
	}
	rows.Close()
	if n := len(want); n < committedTxs*10 {
		t.Fatalf("%d messages committed, want at least %d", n, committedTxs*10)
	}

	conn = dialUntil(t, mq.url)
	defer conn.Close()
	got := map[string]bool{}
	duplicates := 0
	for _, q := range queues {
		var first []int
		seen := map[string]bool{}
		for _, d := range drainQueue(t, conn, q) {
			if seen[d.MessageId] {
				duplicates++
				continue
			}
			seen[d.MessageId] = true
			got[d.MessageId] = true
			if !strings.HasPrefix(d.MessageId, q+"/") {
				t.Errorf("%s arrived on queue %s", d.MessageId, q)
			}
			n, _ := strconv.Atoi(strings.TrimPrefix(d.MessageId, q+"/"))
			first = append(first, n)
		}
		if !slices.IsSorted(first) {
			t.Errorf("queue %s: the first copies are out of commit order", q)
		}
	}
	lost, foreign := 0, 0
	for id := range want {
		if !got[id] {
			lost++
		}
	}
	for id := range got {
		if !want[id] {
			foreign++
			if rolledBack[id] {
				t.Errorf("%s of a rolled-back transaction was published", id)
			}
		}
	}
	t.Logf("%d messages committed, %d received (%d more copies), %d rolled back", len(want), len(got), duplicates, len(rolledBack))
	if lost > 0 || foreign > 0 {
		t.Errorf("%d committed messages lost, %d published that did not commit", lost, foreign)
	}
}

// produce writes one transaction: its order and 10 messages spread over
// the routes, numbered from *seq on; it commits, or rolls back. It returns
// the message ids.
func produce(ctx context.Context, db *sql.DB, ob *outbox.Outbox, n int, seq *int, rollback bool) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	var ids []string
	for i := range 10 {
		*seq++
		route := (n + i/4) % 5
		var to runtime.Destination
		id := ""
		if route == 4 {
			to = runtime.Exchange("faults.exchange", "key")
			id = fmt.Sprintf("faults.x/%07d", *seq)
		} else {
			to = runtime.Queue(fmt.Sprintf("faults.q%d", route))
			id = fmt.Sprintf("faults.q%d/%07d", route, *seq)
		}
		if err := runtime.Publish(ctx, ob.Tx(tx), to, "Order", order{ID: *seq}, runtime.WithMessageID(id)); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO orders (tx, ids) VALUES ($1, $2)", n, strings.Join(ids, " ")); err != nil {
		return nil, err
	}
	if rollback {
		return ids, tx.Rollback()
	}
	return ids, tx.Commit()
}

// declareFaultTopology declares the durable queues, and the exchange whose
// key "key" routes to faults.x.
func declareFaultTopology(t *testing.T, conn *amqp.Connection, queues []string) {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	for _, q := range queues {
		if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := ch.ExchangeDeclare("faults.exchange", "direct", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind("faults.x", "key", "faults.exchange", false, nil); err != nil {
		t.Fatal(err)
	}
}

// drainQueue reads every message of q, in order.
func drainQueue(t *testing.T, conn *amqp.Connection, q string) []amqp.Delivery {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	var out []amqp.Delivery
	for {
		d, ok, err := ch.Get(q, true)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		out = append(out, d)
	}
}

// dialUntil connects to url, trying for a minute.
func dialUntil(t *testing.T, url string) *amqp.Connection {
	t.Helper()
	var conn *amqp.Connection
	eventuallyWithin(t, time.Minute, "RabbitMQ to answer", func() bool {
		c, err := amqp.Dial(url)
		conn = c
		return err == nil
	})
	return conn
}

// relayChild is a relay running in a child process: the test binary run
// again (TestMain, runRelayChild).
type relayChild struct {
	name   string
	cmd    *exec.Cmd
	out    *testkit.SyncBuffer
	exited chan error
}

func startRelayChild(t *testing.T, dbURL, amqpURL, name string) *relayChild {
	t.Helper()
	r := &relayChild{name: name, out: &testkit.SyncBuffer{}, exited: make(chan error, 1)}
	r.cmd = exec.Command(os.Args[0], "-test.run=^$")
	r.cmd.Env = append(os.Environ(), relayChildEnv+"="+dbURL+" "+amqpURL)
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.exited <- r.cmd.Wait() }()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		<-r.exited
		r.exited <- nil
		if t.Failed() {
			t.Logf("relay %s said:\n%s", r.name, lastLines(r.out.String(), 40))
		}
	})
	return r
}

// kill kills the relay with SIGKILL.
func (r *relayChild) kill(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := <-r.exited
	r.exited <- err
	if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("relay %s ended with %v, not by SIGKILL:\n%s", r.name, err, lastLines(r.out.String(), 40))
	}
}

// stop stops the relay with SIGTERM: it must exit 0.
func (r *relayChild) stop(t *testing.T) {
	t.Helper()
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-r.exited:
		r.exited <- err
		if err != nil {
			t.Errorf("relay %s stopped with %v:\n%s", r.name, err, lastLines(r.out.String(), 40))
		}
	case <-time.After(time.Minute):
		t.Errorf("relay %s did not stop on SIGTERM", r.name)
	}
}

// eventuallyWithin polls cond every 20 ms until it holds, failing t after
// patience.
func eventuallyWithin(t *testing.T, patience time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", patience, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// freePort returns a TCP port free on 127.0.0.1 now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// asRoot returns the command name args, run as root: through sudo -E
// unless the test runs as root (the PostgreSQL and RabbitMQ tools switch
// to their own users from root).
func asRoot(ctx context.Context, name string, args ...string) *exec.Cmd {
	if os.Geteuid() == 0 {
		return exec.CommandContext(ctx, name, args...)
	}
	return exec.CommandContext(ctx, "sudo", append([]string{"-E", name}, args...)...)
}

// run runs a command as root, failing t with its output when it fails.
func run(t *testing.T, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := asRoot(ctx, name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// pgCluster is a PostgreSQL cluster of the test's own (Debian's
// pg_createcluster), removed when the test ends.
type pgCluster struct {
	version, name string
	url           string
}

func startPostgres(t *testing.T) *pgCluster {
	t.Helper()
	versions, err := os.ReadDir("/usr/lib/postgresql")
	if err != nil || len(versions) == 0 {
		t.Fatalf("PostgreSQL is not installed (/usr/lib/postgresql: %v): .ci/ensure-postgres installs it", err)
	}
	port := freePort(t)
	c := &pgCluster{version: versions[len(versions)-1].Name(), name: fmt.Sprintf("streamgen-faults-%d", port)}
	t.Cleanup(func() {
		out, err := asRoot(context.Background(), "pg_dropcluster", "--stop", c.version, c.name).CombinedOutput()
		if err != nil {
			t.Errorf("pg_dropcluster %s %s: %v\n%s", c.version, c.name, err, out)
		}
	})
	run(t, "pg_createcluster", c.version, c.name, "-p", strconv.Itoa(port), "--start", "--", "--auth=trust")
	c.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=5", port)
	c.await(t)
	return c
}

// restart stops the cluster at once, as a crash would, and starts it
// again: it recovers from its write-ahead log.
func (c *pgCluster) restart(t *testing.T) {
	t.Helper()
	run(t, "pg_ctlcluster", c.version, c.name, "restart", "-m", "immediate")
	c.await(t)
}

func (c *pgCluster) await(t *testing.T) {
	t.Helper()
	eventuallyWithin(t, time.Minute, "PostgreSQL to answer", func() bool {
		db, err := sql.Open("pgx", c.url)
		if err != nil {
			return false
		}
		defer db.Close()
		return db.Ping() == nil
	})
}

// rabbitNode is a RabbitMQ node of the test's own, beside the system
// broker, on ports of its own, with its files in a folder removed when
// the test ends.
type rabbitNode struct {
	node, dir string
	env       []string
	url       string
}

func startRabbitMQ(t *testing.T) *rabbitNode {
	t.Helper()
	port, dist := freePort(t), freePort(t)
	dir, err := os.MkdirTemp("", "streamgen-faults-rabbitmq-")
	if err != nil {
		t.Fatal(err)
	}
	n := &rabbitNode{node: fmt.Sprintf("streamgen-faults-%d@localhost", port), dir: dir,
		url: fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", port)}
	for _, sub := range []string{"mnesia", "log"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	conf := fmt.Sprintf("listeners.tcp.local = 127.0.0.1:%d\nlog.console = false\nloopback_users = none\n", port)
	if err := os.WriteFile(filepath.Join(dir, "rabbitmq.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "enabled_plugins"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(dir, 0o755)
	run(t, "chown", "-R", "rabbitmq:rabbitmq", dir)
	n.env = append(os.Environ(), "RABBITMQ_NODENAME="+n.node, "RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT="+strconv.Itoa(port), "RABBITMQ_DIST_PORT="+strconv.Itoa(dist),
		"RABBITMQ_MNESIA_BASE="+filepath.Join(dir, "mnesia"), "RABBITMQ_LOG_BASE="+filepath.Join(dir, "log"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(dir, "enabled_plugins"),
		"RABBITMQ_CONFIG_FILE="+filepath.Join(dir, "rabbitmq.conf"),
		"RABBITMQ_PID_FILE="+filepath.Join(dir, "mnesia", "node.pid"))
	t.Cleanup(func() {
		n.ctl("stop")
		// A node that did not stop is killed by its own pid file, never by name.
		if b, err := os.ReadFile(filepath.Join(dir, "mnesia", "node.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = asRoot(context.Background(), "kill", "-9", strconv.Itoa(pid)).Run()
			}
		}
		_ = asRoot(context.Background(), "rm", "-rf", dir).Run()
	})
	n.start(t)
	return n
}

// ctl runs rabbitmqctl against the node, and returns its output.
func (n *rabbitNode) ctl(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := asRoot(ctx, "rabbitmqctl", append([]string{"-q", "-n", n.node}, args...)...)
	cmd.Env = n.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (n *rabbitNode) start(t *testing.T) {
	t.Helper()
	cmd := asRoot(context.Background(), "rabbitmq-server", "-detached")
	cmd.Env = n.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("start RabbitMQ node %s: %v\n%s", n.node, err, out.String())
	}
	if out, err := n.ctl("wait", "--timeout", "120", filepath.Join(n.dir, "mnesia", "node.pid")); err != nil {
		logs, _ := exec.Command("sh", "-c", "tail -n 30 "+filepath.Join(n.dir, "log")+"/*").CombinedOutput()
		t.Fatalf("RabbitMQ node %s did not start: %v\n%s\n%s", n.node, err, out, logs)
	}
	dialUntil(t, n.url).Close()
}

// restart stops the node and starts it again.
func (n *rabbitNode) restart(t *testing.T) {
	t.Helper()
	if out, err := n.ctl("stop"); err != nil {
		t.Fatalf("stop RabbitMQ node %s: %v\n%s", n.node, err, out)
	}
	n.start(t)
}
