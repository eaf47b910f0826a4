package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
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
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// dlqRun runs the built streamgen dlq with args, stdin from in, and
// returns its output and exit status.
func dlqRun(t *testing.T, in string, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"dlq"}, args...)...)
	cmd.Stdin = strings.NewReader(in)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errOut.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run streamgen: %v", err)
	}
	return out.String(), errOut.String(), 0
}

// dlqQueue declares a fresh queue, deleted after the test, and fills it
// with msgs.
func dlqQueue(t *testing.T, conn *amqp.Connection, label string, msgs ...amqp.Publishing) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "streamgen-test.cli." + label + "." + hex.EncodeToString(b)
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ch.Close() }()
	if _, err := ch.QueueDeclare(name, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if ch, err := conn.Channel(); err == nil {
			_, _ = ch.QueueDelete(name, false, false, false)
			_ = ch.Close()
		}
	})
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		dc, err := ch.PublishWithDeferredConfirm("", name, true, false, m)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := dc.WaitContext(context.Background()); !ok || err != nil {
			t.Fatalf("not confirmed: %v", err)
		}
	}
	return name
}

func cliLetter(id, typ, reason, source string, body []byte) amqp.Publishing {
	return amqp.Publishing{MessageId: id, Type: typ, Body: body, ContentType: "application/json", Headers: amqp.Table{
		runtime.HeaderDeadLetterReason: reason, runtime.HeaderDeadLetterSource: source,
		runtime.HeaderDeadLetterAttempts: "3", runtime.HeaderDeadLetterTime: "2026-01-02T03:04:05.000Z",
	}}
}

// count is the number of messages ready in q.
func count(t *testing.T, conn *amqp.Connection, q string) int {
	t.Helper()
	return testkit.QueueInfo(t, conn, q).Messages
}

// streamgen dlq end to end, on the built command against the real broker.
func TestDLQCommandEndToEnd(t *testing.T) {
	conn := testkit.DialRabbitMQ(t, brokerurl.RabbitMQ())
	target := dlqQueue(t, conn, "target")
	dl := dlqQueue(t, conn, "parked",
		cliLetter("c-1", "Card", "failed on attempt 3 of 3: order 123: card declined", target, []byte(`{"order":123}`)),
		cliLetter("c-2", "Card", "failed on attempt 3 of 3: order 456: card declined", target, []byte(`{"order":456}`)),
		cliLetter("b-1", "Blob", "failed on attempt 1 of 1: bad blob", "blobs", []byte("\xff\x00\x1b[2J")),
	)

	out, errOut, status := dlqRun(t, "", "ls", dl)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if status != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "GROUP") ||
		!containsAll(lines[1], " 2 ", "Card", target, "2026-01-02 03:04:05", "order <n>: card declined") {
		t.Fatalf("ls: status %d\n%s%s", status, out, errOut)
	}
	if strings.Index(lines[0], "REASON") != strings.Index(lines[1], "failed") {
		t.Fatalf("ls: the columns are not aligned:\n%s", out)
	}
	out, _, status = dlqRun(t, "", "ls", "-json", dl)
	var groups []struct {
		Key   string
		Count int
	}
	if err := json.Unmarshal([]byte(out), &groups); status != 0 || err != nil || len(groups) != 2 || groups[0].Count != 2 {
		t.Fatalf("ls -json: status %d, %v\n%s", status, err, out)
	}

	out, _, status = dlqRun(t, "", "show", "-id", "b-1", "-id", "c-2", dl)
	if status != 0 || !containsAll(out, "message c-2 (type Card)", "body (JSON):", `"order": 456`, "message b-1", "not text; hex", "ff 00 1b") || strings.Contains(out, "\x1b") {
		t.Fatalf("show:\n%s", out)
	}
	if strings.Contains(out, "c-1") {
		t.Fatalf("show -id b-1 -id c-2 shows c-1 too:\n%s", out)
	}

	// Replay and purge ask; without a terminal they need -yes.
	if _, errOut, status = dlqRun(t, "", "replay", dl); status != 2 || !strings.Contains(errOut, "-yes") {
		t.Fatalf("replay without -yes and no terminal: status %d, %s", status, errOut)
	}
	if out, _, status = dlqRun(t, "", "replay", "-dry-run", "-type", "Card", dl); status != 0 || !strings.Contains(out, "would replay 2 of the 3 letters") || count(t, conn, target) != 0 {
		t.Fatalf("replay -dry-run: status %d\n%s", status, out)
	}
	out, errOut, status = dlqRun(t, "", "replay", "-yes", "-group", groups[0].Key, dl)
	if status != 0 || !strings.Contains(out, "replayed 2 letters") {
		t.Fatalf("replay -group: status %d\n%s%s", status, out, errOut)
	}
	testkit.Eventually(t, "two letters in the source queue", func() bool { return count(t, conn, target) == 2 })

	file := filepath.Join(t.TempDir(), "letters.jsonl")
	if _, errOut, status = dlqRun(t, "", "export", "-o", file, dl); status != 0 || !strings.Contains(errOut, "exported 1 letter of "+dl+"\n") {
		t.Fatalf("export: status %d, %s", status, errOut)
	}
	if out, _, status = dlqRun(t, "", "purge", "-yes", dl); status != 0 || !strings.Contains(out, "purged 1 letter of "+dl+"\n") {
		t.Fatalf("purge: status %d\n%s", status, out)
	}
	testkit.Eventually(t, "the queue empty", func() bool { return count(t, conn, dl) == 0 })
	if _, errOut, status = dlqRun(t, "", "import", "-i", file, dl); status != 0 || !strings.Contains(errOut, "imported 1 letter into "+dl+"\n") {
		t.Fatalf("import: status %d, %s", status, errOut)
	}
	data, _ := os.ReadFile(file)
	out, _, _ = dlqRun(t, "", "export", dl)
	if out != string(data) {
		t.Fatalf("the imported letter exports as\n%s\nnot as before\n%s", out, data)
	}
	// Replay to a queue that does not exist: the error names it and the fix.
	if _, errOut, status = dlqRun(t, "", "replay", "-yes", "-to", dl+".nope", dl); status != 1 || !containsAll(errOut, dl+".nope", "does not exist", "declare it") {
		t.Fatalf("replay to a missing queue: status %d, %s", status, errOut)
	}
}

// Bad usage exits with 2, -h with 0, and a password in -url never shows.
func TestDLQCommandUsage(t *testing.T) {
	for _, c := range []struct {
		args   []string
		status int
		want   string
	}{
		{nil, 2, "usage: streamgen dlq COMMAND"},
		{[]string{"nope"}, 2, `unknown command "nope"`},
		{[]string{"ls"}, 2, "give one QUEUE"},
		{[]string{"show", "-limit", "x", "q"}, 2, "invalid value"},
		{[]string{"show", "-before", "yesterday", "q"}, 2, "is not a time"},
		{[]string{"replay", "-to", "a", "-exchange", "b", "q"}, 2, "not both"},
		{[]string{"purge", "-h"}, 0, "usage: streamgen dlq purge [flags] QUEUE"},
		{[]string{"ls", "-url", "amqp://user:s3cret-pw@127.0.0.1:1/", "q"}, 1, "amqp://user:xxxxx@127.0.0.1:1/"},
	} {
		out, errOut, status := dlqRun(t, "", c.args...)
		if status != c.status || !strings.Contains(out+errOut, c.want) || strings.Contains(out+errOut, "s3cret-pw") {
			t.Errorf("streamgen dlq %v: status %d, want %d with %q:\n%s%s", c.args, status, c.status, c.want, out, errOut)
		}
	}
}

// Flags may come after the queue too.
func TestDLQFlagsAfterTheQueue(t *testing.T) {
	conn := testkit.DialRabbitMQ(t, brokerurl.RabbitMQ())
	dl := dlqQueue(t, conn, "order", cliLetter("c-1", "Card", "x", "src", []byte("{}")))
	out, errOut, status := dlqRun(t, "", "show", dl, "-json")
	if status != 0 || !strings.HasPrefix(out, "{") || !strings.Contains(out, `"message_id":"c-1"`) {
		t.Fatalf("show QUEUE -json: status %d\n%s%s", status, out, errOut)
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// A replay killed with SIGKILL in the middle loses no letter: each is
// replayed, still parked, or both, counted by message id.
func TestDLQReplayKilledMidwayLosesNothing(t *testing.T) {
	conn := testkit.DialRabbitMQ(t, brokerurl.RabbitMQ())
	target := dlqQueue(t, conn, "target")
	var msgs []amqp.Publishing
	for i := range 300 {
		msgs = append(msgs, cliLetter(fmt.Sprintf("m-%03d", i), "Card", "boom", target, []byte("{}")))
	}
	dl := dlqQueue(t, conn, "killed", msgs...)
	cmd := exec.Command(binary, "dlq", "replay", "-yes", "-rate", "300", dl)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "some letters replayed", func() bool { return count(t, conn, target) >= 60 })
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The broker requeues what the killed command held once it sees the
	// connection gone.
	testkit.Eventually(t, "every letter parked or replayed", func() bool { return count(t, conn, target)+count(t, conn, dl) >= 300 })
	seen := map[string]bool{}
	for _, q := range []string{target, dl} {
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		for {
			d, ok, err := ch.Get(q, true)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			seen[d.MessageId] = true
		}
		_ = ch.Close()
	}
	for _, m := range msgs {
		if !seen[m.MessageId] {
			t.Fatalf("letter %s is lost: neither replayed nor parked (%d of 300 seen)", m.MessageId, len(seen))
		}
	}
}

// ls shows how far it got on stderr when that is a terminal, and leaves
// no trace of it otherwise.
func TestDLQLsProgress(t *testing.T) {
	conn := testkit.DialRabbitMQ(t, brokerurl.RabbitMQ())
	var msgs []amqp.Publishing
	for i := range 1200 {
		msgs = append(msgs, cliLetter(fmt.Sprintf("m-%04d", i), "Card", "boom", "src", []byte("{}")))
	}
	dl := dlqQueue(t, conn, "progress", msgs...)
	for _, terminal := range []bool{true, false} {
		var out, errOut bytes.Buffer
		status := runDLQ(context.Background(), []string{"ls", dl}, dlqIO{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, progress: terminal})
		if status != 0 || !strings.Contains(out.String(), "1200") {
			t.Fatalf("ls: status %d\n%s%s", status, out.String(), errOut.String())
		}
		if got := strings.Contains(errOut.String(), "read 1000 letters of "+dl); got != terminal {
			t.Fatalf("ls with stderr a terminal %v: progress shown %v: %q", terminal, got, errOut.String())
		}
	}
}

// Progress shows on every long scan, a purge's or a replay's plan
// included, and is cleared before the answer.
func TestDLQPurgeAndReplayProgress(t *testing.T) {
	conn := testkit.DialRabbitMQ(t, brokerurl.RabbitMQ())
	var msgs []amqp.Publishing
	for i := range 1200 {
		msgs = append(msgs, cliLetter(fmt.Sprintf("m-%04d", i), "Card", "boom", "src", []byte("{}")))
	}
	dl := dlqQueue(t, conn, "progress-ops", msgs...)
	for _, cmd := range []string{"purge", "replay"} {
		var out, errOut bytes.Buffer
		status := runDLQ(context.Background(), []string{cmd, "-dry-run", dl}, dlqIO{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, progress: true})
		if status != 0 || !strings.Contains(out.String(), "would "+cmd+" all 1200 letters of "+dl) {
			t.Fatalf("%s -dry-run: status %d\n%s%s", cmd, status, out.String(), errOut.String())
		}
		if !strings.Contains(errOut.String(), "read 1000 letters of "+dl) || !strings.HasSuffix(errOut.String(), "\r\033[K") {
			t.Fatalf("%s: progress %q, want it shown and cleared", cmd, errOut.String())
		}
	}
}

// streamgen dlq keep keeps what ZeroMQ services push; ls, show, export,
// replay -to ADDR and purge work on its -dir while it runs; SIGTERM stops
// it with status 0.
func TestDLQKeepAndDir(t *testing.T) {
	dir := t.TempDir()
	addr := freeTCP(t)
	keeper := exec.Command(binary, "dlq", "keep", "-bind", addr, "-dir", dir)
	var keeperErr bytes.Buffer
	keeper.Stderr = &keeperErr
	if err := keeper.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = keeper.Process.Kill()
			_ = keeper.Wait()
		}
	}()
	// A service pushes its dead letters to the keeper's address.
	out := zeromq.New(zeromq.Queue("cards.dead", zeromq.Bind(addr)))
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
	defer cancel()
	for i := range 3 {
		msg := runtime.Message{ID: fmt.Sprintf("z-%d", i), Type: "Card", Body: fmt.Appendf(nil, `{"order":%d}`, i), Headers: map[string]string{
			runtime.HeaderDeadLetterReason: fmt.Sprintf("order %d: card declined", i),
			runtime.HeaderDeadLetterSource: "cards",
		}}
		if err := out.Publish(ctx, "cards.dead", msg); err != nil {
			t.Fatal(err)
		}
	}
	if err := out.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "three letters kept", func() bool {
		o, _, status := dlqRun(t, "", "ls", "-dir", dir)
		return status == 0 && containsAll(o, " 3 ", "cards", "order <n>: card declined")
	})
	if o, e, status := dlqRun(t, "", "show", "-dir", dir, "-id", "z-1"); status != 0 || !containsAll(o, "message z-1 (type Card)", `"order": 1`) {
		t.Fatalf("show -dir: status %d\n%s%s", status, o, e)
	}
	if o, e, status := dlqRun(t, "", "export", "-dir", dir); status != 0 || strings.Count(o, "\n") != 3 || !strings.Contains(e, "exported 3 letters") {
		t.Fatalf("export -dir: status %d\n%s%s", status, o, e)
	}
	if _, e, status := dlqRun(t, "", "replay", "-dir", dir, "-yes"); status != 2 || !strings.Contains(e, "-to ADDR") {
		t.Fatalf("replay -dir without -to: status %d, %s", status, e)
	}
	// The source queue: a PULL bound where the cards subscription is.
	cards := freeTCP(t)
	got := make(chan *zeromq.Envelope, 10)
	pull := zmq4.NewPull(context.Background())
	defer func() { _ = pull.Close() }()
	if err := pull.Listen(cards); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			msg, err := pull.Recv()
			if err != nil {
				return // closed
			}
			env, err := zeromq.ParseEnvelope(msg.Frames)
			if err != nil {
				t.Errorf("replayed: %v", err)
				return
			}
			got <- env
		}
	}()
	if o, e, status := dlqRun(t, "", "replay", "-dir", dir, "-yes", "-limit", "2", "-to", cards); status != 0 || !strings.Contains(o, "replayed 2 letters") {
		t.Fatalf("replay -dir -to: status %d\n%s%s", status, o, e)
	}
	for range 2 {
		select {
		case env := <-got:
			if r, _ := env.Header(runtime.HeaderDeadLetterReason); env.Subscription != "cards" || r != "" {
				t.Fatalf("replayed as %+v", env)
			}
			if n, _ := env.Header("x-streamgen-replays"); n != "1" {
				t.Fatalf("replayed with x-streamgen-replays %q", n)
			}
		case <-time.After(testkit.Patience):
			t.Fatal("the replay did not arrive")
		}
	}
	if o, e, status := dlqRun(t, "", "purge", "-dir", dir, "-yes"); status != 0 || !strings.Contains(o, "purged 1 letter of ") {
		t.Fatalf("purge -dir: status %d\n%s%s", status, o, e)
	}
	if o, _, _ := dlqRun(t, "", "ls", "-dir", dir); !strings.Contains(o, "holds no letters") {
		t.Fatalf("ls after the purge:\n%s", o)
	}
	if err := keeper.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if err := keeper.Wait(); err != nil {
		t.Fatalf("the keeper stopped with %v\n%s", err, keeperErr.String())
	}
}

func freeTCP(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return "tcp://" + ln.Addr().String()
}
