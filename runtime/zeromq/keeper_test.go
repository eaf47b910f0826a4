package zeromq_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/testsupport/testkit"
	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/deadletter"
	"github.com/streamgen/streamgen/runtime/zeromq"
)

// keeperChildEnv, set to a directory, makes the test binary a keeper of
// it (see runKeeperChild).
const keeperChildEnv = "STREAMGEN_TEST_KEEPER_DIR"

// runKeeperChild runs a Keeper on dir, bound at a port the system picks,
// until SIGTERM. It prints "bound ADDR" once bound, and "kept ID" for
// each letter once it is written.
func runKeeperChild(dir string) int {
	d, err := zeromq.OpenDeadLetterDir(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out := &lockedWriter{w: os.Stdout}
	log := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	k := &zeromq.Keeper{Bind: "tcp://127.0.0.1:0", Dir: d, Logger: log}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	go func() {
		<-k.Ready()
		fmt.Fprintf(out, "bound %s\n", k.Addr())
	}()
	if err := k.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// letter is a dead letter as a ZeroMQ service pushes one.
func zmqLetter(id string, i int) *zeromq.Envelope {
	return &zeromq.Envelope{Subscription: "invoices.dead", Body: fmt.Appendf(nil, `{"order":%d}`, i), Headers: []zeromq.Header{
		{Name: zeromq.HeaderType, Value: "Card"}, {Name: zeromq.HeaderContentType, Value: "application/json"},
		{Name: zeromq.HeaderMessageID, Value: id},
		{Name: runtime.HeaderDeadLetterReason, Value: fmt.Sprintf("order %d: card declined", i)},
		{Name: runtime.HeaderDeadLetterSource, Value: "invoices"},
		{Name: runtime.HeaderDeadLetterAttempts, Value: "1"},
	}}
}

// A keeper killed with SIGKILL while letters stream in loses none it
// wrote: every letter it said it kept is in the directory, once, and a
// keeper started again on it goes on keeping.
func TestKeeperKilledMidStreamLosesNoLetterWritten(t *testing.T) {
	dir := t.TempDir()
	start := func() (*exec.Cmd, string, <-chan string) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), keeperChildEnv+"="+dir)
		cmd.Stderr = t.Output()
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// A keeper the test leaves running, failing, goes with it.
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		lines := make(chan string, 100000)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		timeout := time.After(testkit.Patience)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatal("the keeper stopped before it bound")
				}
				if addr, ok := strings.CutPrefix(l, "bound "); ok {
					return cmd, addr, lines
				}
			case <-timeout:
				t.Fatal("the keeper did not bind")
			}
		}
	}
	cmd, addr, lines := start()
	out, err := zeromq.DialOutlet(addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sent := make(chan int, 1)
	go func() {
		i := 0
		for ; ctx.Err() == nil; i++ {
			if out.Send(ctx, zmqLetter(fmt.Sprintf("m-%06d", i), i)) != nil {
				break
			}
		}
		sent <- i
	}()
	kept := map[string]bool{}
	for len(kept) < 200 {
		l, ok := <-lines
		if !ok {
			t.Fatal("the keeper stopped")
		}
		if id, ok := keptID(l); ok {
			kept[id] = true
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for l := range lines {
		if id, ok := keptID(l); ok {
			kept[id] = true
		}
	}
	cancel()
	n := <-sent
	closeCtx, done := context.WithTimeout(context.Background(), time.Second)
	_ = out.Close(closeCtx)
	done()

	d, err := zeromq.OpenDeadLetterDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]int{}
	if err := d.Scan(context.Background(), func(l *deadletter.Letter) error {
		found[l.MessageID()]++
		if l.Reason == "" || l.Source != "invoices" || l.Type() != "Card" {
			return fmt.Errorf("letter %s read back as %+v", l.MessageID(), l)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for id := range kept {
		if found[id] != 1 {
			t.Fatalf("letter %s was kept, and is %d times in the directory after the SIGKILL (%d kept, %d found, %d sent)", id, found[id], len(kept), len(found), n)
		}
	}
	t.Logf("%d letters sent, %d said kept, %d in the directory after the SIGKILL", n, len(kept), len(found))

	// A keeper started again on the directory keeps on writing.
	cmd, addr, lines = start()
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	out, err = zeromq.DialOutlet(addr)
	if err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithTimeout(context.Background(), testkit.Patience)
	defer scancel()
	if err := out.Send(sctx, zmqLetter("after", 1)); err != nil {
		t.Fatal(err)
	}
	for l := range lines {
		if id, _ := keptID(l); id == "after" {
			break
		}
	}
	_ = out.Close(sctx)
	if n, err := d.Len(context.Background()); err != nil || n != len(found)+1 {
		t.Fatalf("after a restart and one more letter, Len = %d, %v; want %d", n, err, len(found)+1)
	}
}

// keptID reads the message id of a keeper's "letter kept" log line.
func keptID(line string) (string, bool) {
	if !strings.Contains(line, "letter kept") {
		return "", false
	}
	_, rest, ok := strings.Cut(line, "message_id=")
	if !ok {
		return "", false
	}
	id, _, _ := strings.Cut(rest, " ")
	return id, true
}

// Dead letters a real ZeroMQ subscription parks are kept by an in-process
// Keeper, listed while it runs, and replayed from its directory into the
// subscription, which handles them again as attempt 1, with the replay
// counted; they leave the directory.
func TestKeeperKeepsLettersOfARealSubscriptionAndReplaysThem(t *testing.T) {
	testkit.NoLeaks(t)
	dir, err := zeromq.OpenDeadLetterDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	k := &zeromq.Keeper{Bind: "tcp://127.0.0.1:0", Dir: dir}
	kctx, kstop := context.WithCancel(context.Background())
	kdone := make(chan error, 1)
	go func() { kdone <- k.Run(kctx) }()
	defer func() {
		kstop()
		if err := <-kdone; err != nil {
			t.Errorf("keeper: %v", err)
		}
	}()
	<-k.Ready()

	var mu sync.Mutex
	fail := true
	handled := map[string][]runtime.Metadata{}
	type card struct {
		Order int `json:"order"`
	}
	invoices := freeAddr(t)
	zq := zeromq.New(
		zeromq.Queue("invoices", zeromq.Bind(invoices)),
		zeromq.Queue("invoices.dead", zeromq.Bind(k.Addr())),
	)
	app := runtime.NewApp("keeper-test")
	app.Mount(zq, &runtime.Subscription{Name: "invoices", Broker: runtime.ZeroMQ, Handlers: []runtime.Handler{
		runtime.Handle("Card", runtime.Policy{DeadLetter: "invoices.dead"}, func(ctx context.Context, c *card, md runtime.Metadata) runtime.Outcome {
			mu.Lock()
			defer mu.Unlock()
			handled[md.MessageID] = append(handled[md.MessageID], md)
			if fail {
				return runtime.OutcomeOf(fmt.Errorf("order %d: card declined", c.Order))
			}
			return runtime.Ack()
		}),
	}})
	actx, astop := context.WithCancel(context.Background())
	adone := make(chan error, 1)
	go func() { adone <- app.Run(actx) }()
	defer func() {
		astop()
		if err := <-adone; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("app: %v", err)
		}
	}()
	<-app.Ready()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
	defer cancel()
	for i := range 20 {
		if err := runtime.Publish(ctx, zq, runtime.Queue("invoices"), "Card", card{Order: i}, runtime.WithMessageID(fmt.Sprintf("c-%02d", i)), runtime.WithHeader("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, "20 letters kept", func() bool { n, _ := dir.Len(ctx); return n == 20 })
	groups, err := dir.Groups(ctx)
	if err != nil || len(groups) != 1 || groups[0].Count != 20 {
		t.Fatalf("groups %+v, %v; want one of 20", groups, err)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	rep, err := dir.Replay(ctx, deadletter.Selection{Limit: 15}, deadletter.ReplayOptions{To: deadletter.Target{Address: invoices}})
	if err != nil || rep.Done != 15 || rep.Failed != 0 {
		t.Fatalf("replay: %+v, %v", rep, err)
	}
	testkit.Eventually(t, "15 replays handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, mds := range handled {
			if len(mds) == 2 {
				n++
			}
		}
		return n == 15
	})
	mu.Lock()
	for id, mds := range handled {
		if len(mds) != 2 {
			continue
		}
		md := mds[1]
		if md.Attempt != 1 || md.Headers[deadletter.HeaderReplays] != "1" || md.Headers["traceparent"] == "" || md.Headers[runtime.HeaderDeadLetterReason] != "" || md.MessageType != "Card" {
			t.Errorf("replay of %s handled as %+v", id, md)
		}
	}
	mu.Unlock()
	if n, err := dir.Len(ctx); err != nil || n != 5 {
		t.Fatalf("after replaying 15 of 20, the directory holds %d (%v), want 5", n, err)
	}
	if rep, err := dir.Purge(ctx, deadletter.Selection{}, false); err != nil || rep.Done != 5 {
		t.Fatalf("purge: %+v, %v", rep, err)
	}
	if n, err := dir.Len(ctx); err != nil || n != 0 {
		t.Fatalf("after the purge, the directory holds %d (%v)", n, err)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "tcp://" + ln.Addr().String()
}

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
