package examples_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/brokerurl"
	"github.com/streamgen/streamgen/internal/testsupport/dbtest"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
)

// Every standalone Go block that is a test file (its package's name ends
// in _test) passes: it is run with go test, as a file of its own, in this
// module, with the brokers and databases the tests use.
func TestReadmeTestBlocksPass(t *testing.T) {
	_, blocks := quickStart(t)
	ran := 0
	for _, b := range blocks {
		f, err := parser.ParseFile(token.NewFileSet(), "block", b.text, parser.PackageClauseOnly)
		if err != nil || !strings.HasSuffix(f.Name.Name, "_test") {
			continue // TestReadmeGoBlocksTypeCheck reports what does not parse
		}
		ran++
		file := filepath.Join(t.TempDir(), fmt.Sprintf("block_line%d_test.go", b.line))
		if err := os.WriteFile(file, []byte(b.text), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("go", "test", "-count=1", file)
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("the test block at %s fails: %v\n%s", b.at(), err, out)
		}
	}
	if ran < 4 {
		t.Fatalf("the README and the guide have %d test blocks; the extraction is broken", ran)
	}
}

// programs returns the standalone Go blocks that are programs: package
// main with a func main.
func programs(t *testing.T) []codeBlock {
	t.Helper()
	_, blocks := quickStart(t)
	var out []codeBlock
	for _, b := range blocks {
		f, err := parser.ParseFile(token.NewFileSet(), "block", b.text, 0)
		if err != nil || f.Name.Name != "main" {
			continue
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "main" {
				out = append(out, b)
			}
		}
	}
	return out
}

// Every program of the guide builds and runs, against a RabbitMQ virtual
// host and a PostgreSQL database of the test's own (STREAMGEN_RABBITMQ_URL
// and DATABASE_URL, which the programs read): it ends with status 0 by
// itself, or it logs "app running" and then ends with status 0 on SIGINT,
// as a service stopped by Ctrl-C. The producers do more: what each sends
// arrives (checkProducer).
func TestReadmeProgramsRun(t *testing.T) {
	progs := programs(t)
	if len(progs) < 7 {
		t.Fatalf("the guide has %d programs; the extraction is broken", len(progs))
	}
	env := programEnv(t)
	dir := t.TempDir()
	for i, b := range progs {
		t.Run(strings.ReplaceAll(b.at(), "/", "_"), func(t *testing.T) {
			src := filepath.Join(dir, fmt.Sprintf("prog%d", i), "main.go")
			if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(src, []byte(b.text), 0o644); err != nil {
				t.Fatal(err)
			}
			bin := filepath.Join(filepath.Dir(src), "prog")
			build := exec.Command("go", "build", "-o", bin, src)
			build.Dir = repoRoot(t)
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("the program at %s does not build: %v\n%s", b.at(), err, out)
			}
			check := checkProducer(t, b, env)
			out, err := runProgram(t, bin, env, check.args)
			if err != nil {
				t.Fatalf("the program at %s: %v\n%s", b.at(), err, out)
			}
			if check.after != nil {
				check.after(t)
			}
		})
	}
}

// programEnv makes the virtual host and the database the programs run
// against, removed when the test ends, and returns the environment that
// names them.
func programEnv(t *testing.T) []string {
	t.Helper()
	base, err := url.Parse(brokerurl.RabbitMQ())
	if err != nil {
		t.Fatal(err)
	}
	vhost := testkit.UniqueName("streamgen-docs")
	testkit.Rabbitmqctl(t, "add_vhost", vhost)
	t.Cleanup(func() { testkit.Rabbitmqctl(t, "delete_vhost", vhost) })
	testkit.Rabbitmqctl(t, "set_permissions", "-p", vhost, base.User.Username(), ".*", ".*", ".*")
	u := *base
	u.Path = "/" + vhost
	u.RawPath = "/" + url.PathEscape(vhost)
	return append(os.Environ(),
		brokerurl.EnvVar+"="+u.String(),
		"DATABASE_URL="+dbtest.PostgresDatabase(t),
	)
}

// producerCheck is what a producer needs before it runs, and what is
// checked after.
type producerCheck struct {
	args  []string
	after func(t *testing.T)
}

// checkProducer prepares what the guide's producers send to, and returns
// the check of what they sent; other programs get none.
func checkProducer(t *testing.T, b codeBlock, env []string) producerCheck {
	t.Helper()
	switch {
	case strings.Contains(b.text, "orders.PublishOrderPlaced(ctx, rb, o)"):
		return rabbitProducer(t, env)
	case strings.Contains(b.text, "billing.PublishJob(ctx, zq,"):
		return zeromqProducer(t)
	}
	return producerCheck{}
}

// rabbitProducer binds a queue of the test's own for order.placed to the
// orders exchange, as the orders service does when it starts, and checks
// that the producer's order arrives there.
func rabbitProducer(t *testing.T, env []string) producerCheck {
	t.Helper()
	var vhostURL string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, brokerurl.EnvVar+"="); ok {
			vhostURL = v
		}
	}
	conn := testkit.DialRabbitMQ(t, vhostURL)
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	q := testkit.UniqueName("docs.placed")
	if err := ch.ExchangeDeclare("orders", "topic", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(q, false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(q, "order.placed", "orders", false, nil); err != nil {
		t.Fatal(err)
	}
	return producerCheck{args: []string{"-id", "o-42"}, after: func(t *testing.T) {
		var got amqp.Delivery
		testkit.Eventually(t, "the order in "+q, func() bool {
			d, ok, err := ch.Get(q, true)
			if err != nil {
				t.Fatal(err)
			}
			got = d
			return ok
		})
		if got.Type != "OrderPlaced" || !bytes.Contains(got.Body, []byte(`"id":"o-42"`)) || got.MessageId == "" {
			t.Errorf("the producer sent type %q, id %q, body %s; want an OrderPlaced of o-42 with a message id", got.Type, got.MessageId, got.Body)
		}
	}}
}

// zeromqProducer binds a PULL where the producer is told the billing
// service's jobs queue is, and checks the job it receives.
func zeromqProducer(t *testing.T) producerCheck {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pull := zmq4.NewPull(ctx)
	t.Cleanup(func() {
		cancel()
		_ = pull.Close()
	})
	if err := pull.Listen("tcp://127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	received := make(chan zmq4.Msg, 1)
	go func() {
		if m, err := pull.Recv(); err == nil {
			received <- m
		}
	}()
	return producerCheck{args: []string{"-jobs", "tcp://" + pull.Addr().String()}, after: func(t *testing.T) {
		var m zmq4.Msg
		select {
		case m = <-received:
		case <-time.After(testkit.Patience):
			t.Fatal("the producer's job never arrived")
		}
		if len(m.Frames) != 3 || string(m.Frames[0]) != "jobs" || !strings.Contains(string(m.Frames[1]), "type: Job") ||
			!strings.Contains(string(m.Frames[2]), `"amount_cents":1250`) {
			t.Errorf("the producer sent %q; want a Job of 1250 cents on jobs", m.Frames)
		}
	}}
}

// runProgram runs bin with env and args until it ends by itself, or, once
// it logs "app running", until SIGINT ends it. It returns the program's
// output, and an error unless it ended with status 0.
func runProgram(t *testing.T, bin string, env, args []string) (string, error) {
	t.Helper()
	var out testkit.SyncBuffer
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(testkit.Patience)
	for {
		select {
		case err := <-exited:
			return out.String(), err
		case <-deadline:
			_ = cmd.Process.Kill()
			<-exited
			return out.String(), errors.New("neither ended nor logged \"app running\" in time")
		case <-time.After(10 * time.Millisecond):
		}
		if strings.Contains(out.String(), "app running") {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			return out.String(), fmt.Errorf("after SIGINT: %w", err)
		}
		return out.String(), nil
	case <-time.After(testkit.Patience):
		_ = cmd.Process.Kill()
		<-exited
		return out.String(), errors.New("still running after SIGINT")
	}
}
