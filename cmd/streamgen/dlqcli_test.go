package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/brokerurl"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
)

// A plan says which of the letters it selects in words: the only letter,
// all of them, or some of them.
func TestDLQSaysWhichLettersAPlanSelects(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{ofLetters(1, 1), "the only letter"},
		{ofLetters(3, 3), "all 3 letters"},
		{ofLetters(1, 3), "1 of the 3 letters"},
		{ofLetters(2, 3), "2 of the 3 letters"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// The dlq commands on a queue of one letter say "1 letter", never
// "1 letters".
func TestDLQSaysOneLetter(t *testing.T) {
	conn := testkit.DialRabbitMQ(t, brokerurl.RabbitMQ())
	target := dlqQueue(t, conn, "one-target")
	dl := dlqQueue(t, conn, "one", cliLetter("c-1", "Card", "boom", target, []byte("{}")))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"replay", "-dry-run", dl}, "would replay the only letter of " + dl + " to "},
		{[]string{"purge", "-dry-run", dl}, "would purge the only letter of " + dl + " for good"},
		{[]string{"export", dl}, "exported 1 letter of " + dl + "\n"},
		{[]string{"replay", "-yes", dl}, "replayed 1 letter of " + dl + " to "},
	} {
		out, errOut, status := dlqRun(t, "", c.args...)
		if status != 0 || !strings.Contains(out+errOut, c.want) || strings.Contains(out+errOut, "1 letters") {
			t.Errorf("streamgen dlq %v: status %d, want it to say %q:\n%s%s", c.args, status, c.want, out, errOut)
		}
	}
}

// A connection that fails says what to check: the user or password when
// the broker refuses them (403 ACCESS_REFUSED), the virtual host when it
// refuses that, whether RabbitMQ runs when nothing listens.
func TestDLQConnectHints(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("deadletter: cannot connect: %w", amqp.ErrCredentials), "the user or password in the URL is wrong"},
		{fmt.Errorf("deadletter: cannot connect: %w", &amqp.Error{Code: amqp.AccessRefused, Reason: "ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN", Server: true}), "the user or password in the URL is wrong"},
		{fmt.Errorf("deadletter: cannot connect: %w", amqp.ErrVhost), "virtual host does not exist or the user may not use it"},
		{fmt.Errorf("deadletter: cannot connect: %w", &amqp.Error{Code: amqp.NotAllowed, Reason: "NOT_ALLOWED - vhost x not found", Server: true}), "virtual host does not exist"},
		{fmt.Errorf("deadletter: cannot connect: %w", refused), "is RabbitMQ running there?"},
		{fmt.Errorf("deadletter: cannot connect: %w", &net.DNSError{Err: "no such host", Name: "rabbit.invalid"}), "can RabbitMQ be reached there?"},
	} {
		if got := connectHint(c.err); !strings.Contains(got, c.want) || !strings.Contains(got, "-url or $"+brokerurl.EnvVar) {
			t.Errorf("connectHint(%v) = %q, want it to say %q", c.err, got, c.want)
		}
	}
	if got := connectHint(amqp.ErrCredentials); strings.Contains(got, "running") {
		t.Errorf("a wrong password asks whether RabbitMQ runs: %q", got)
	}

	// The built command, on the broker, with a wrong password and on a
	// port where nothing listens.
	wrong := withPassword(t, brokerurl.RabbitMQ(), "not-the-password")
	for _, c := range []struct {
		args    []string
		want    string
		wantNot string
	}{
		{[]string{"ls", "-url", wrong, "q"}, "the user or password in the URL is wrong", "running"},
		{[]string{"serve", "-url", wrong, "-addr", "127.0.0.1:0", "q"}, "the user or password in the URL is wrong", "running"},
		{[]string{"ls", "-url", "amqp://guest:guest@127.0.0.1:1/", "q"}, "connection refused: nothing listens at that address: is RabbitMQ running there?", "password"},
	} {
		out, errOut, status := dlqRun(t, "", c.args...)
		if status != 1 || !strings.Contains(errOut, c.want) || strings.Contains(errOut, c.wantNot) || strings.Contains(out+errOut, "not-the-password") {
			t.Errorf("streamgen dlq %v: status %d, want 1 and %q without %q:\n%s%s", c.args[0], status, c.want, c.wantNot, out, errOut)
		}
	}
}

// withPassword returns the URL u with the password p.
func withPassword(t *testing.T, u, p string) string {
	t.Helper()
	i, j := strings.Index(u, "://"), strings.LastIndex(u, "@")
	if i < 0 || j < i {
		t.Fatalf("%s has no user", u)
	}
	user, _, _ := strings.Cut(u[i+3:j], ":")
	return u[:i+3] + user + ":" + p + u[j:]
}

// With standard input from /dev/null (cron, systemd, ssh -n), replay and
// purge without -yes stop with an error that names -yes, before they
// connect: they neither ask nor say "nothing replayed" and succeed.
func TestDLQWithoutATerminalNeedsYes(t *testing.T) {
	conn := testkit.DialRabbitMQ(t, brokerurl.RabbitMQ())
	dl := dlqQueue(t, conn, "devnull", cliLetter("c-1", "Card", "boom", "src", []byte("{}")))
	for _, args := range [][]string{
		{"replay", dl},
		{"purge", dl},
		{"purge", "-type", "Card", dl},
		// On a port where nothing listens: the error is still -yes's, so
		// nothing was dialled.
		{"replay", "-url", "amqp://guest:guest@127.0.0.1:1/", dl},
	} {
		null, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(binary, append([]string{"dlq"}, args...)...)
		cmd.Stdin = null
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err = cmd.Run()
		_ = null.Close()
		status := 0
		if ee, ok := err.(*exec.ExitError); ok {
			status = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		want := "streamgen dlq " + args[0] + ": standard input is not a terminal to ask on: give -yes to " + args[0] + " without asking"
		if status != 2 || !strings.Contains(errOut.String(), want) || strings.Contains(errOut.String(), "[y/N]") || strings.Contains(out.String(), "nothing") || strings.Contains(errOut.String(), "connect") {
			t.Errorf("streamgen dlq %v < /dev/null: status %d, want 2 and %q:\n%s%s", args, status, want, out.String(), errOut.String())
		}
	}
	if n := count(t, conn, dl); n != 1 {
		t.Errorf("%d letters left in %s, want the one there was", n, dl)
	}
	// -dry-run changes nothing, so it needs no -yes.
	if out, errOut, status := dlqRun(t, "", "purge", "-dry-run", dl); status != 0 || !strings.Contains(out, "would purge the only letter") {
		t.Errorf("purge -dry-run without a terminal: status %d\n%s%s", status, out, errOut)
	}
}

// A question answered with the end of input on a terminal (Ctrl-D) is no
// answer: nothing is done, and the command fails, saying so.
func TestDLQNoAnswerOnATerminal(t *testing.T) {
	dir := t.TempDir()
	letter := `{"body":"{}","headers":{"x-streamgen-reason":"boom","x-streamgen-source":"cards"},"properties":{"message_id":"m1","type":"Card"}}` + "\n"
	if _, stderr, status := dlqRun(t, letter, "import", "-dir", dir); status != 0 {
		t.Fatalf("import: %d %s", status, stderr)
	}
	for _, c := range []struct {
		args []string
		done string
	}{
		{[]string{"replay", "-dir", dir, "-to", "tcp://127.0.0.1:1"}, "replayed"},
		{[]string{"purge", "-dir", dir}, "purged"},
	} {
		var out, errOut bytes.Buffer
		status := runDLQ(context.Background(), c.args, dlqIO{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, terminal: true})
		want := "no answer: nothing " + c.done + "; give -yes to skip the question"
		if status != 1 || !strings.Contains(errOut.String(), "[y/N]") || !strings.Contains(errOut.String(), want) {
			t.Errorf("streamgen dlq %s answered with EOF: status %d, want 1 and %q:\n%s%s", c.args[0], status, want, out.String(), errOut.String())
		}
	}
	// "n" is an answer: nothing is done, and that is no failure.
	var out, errOut bytes.Buffer
	if status := runDLQ(context.Background(), []string{"purge", "-dir", dir}, dlqIO{stdin: strings.NewReader("n\n"), stdout: &out, stderr: &errOut, terminal: true}); status != 0 || !strings.Contains(out.String(), "nothing purged") {
		t.Errorf("purge answered n: status %d\n%s%s", status, out.String(), errOut.String())
	}
	if o, e, _ := dlqRun(t, "", "ls", "-dir", dir); !strings.Contains(o, " 1 ") {
		t.Errorf("the letter is gone after unanswered questions:\n%s%s", o, e)
	}
}

// Only a terminal is a terminal: not /dev/null, though it is a character
// device, nor a pipe or a file.
func TestIsTerminal(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = null.Close() }()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close(); _ = w.Close() }()
	f, err := os.CreateTemp(t.TempDir(), "file")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	for name, f := range map[string]*os.File{os.DevNull: null, "a pipe": r, "a file": f} {
		if isTerminal(f) {
			t.Errorf("isTerminal(%s) = true", name)
		}
	}
}

// serve -h prints its usage once, on standard output.
func TestDLQServeHelpPrintsItsUsageOnce(t *testing.T) {
	out, errOut, status := dlqRun(t, "", "serve", "-h")
	if status != 0 || strings.Count(out, "usage: streamgen dlq serve") != 1 || strings.Count(out, "-addr host:port") != 1 || errOut != "" {
		t.Fatalf("serve -h: status %d, want the usage once on stdout:\n--- stdout\n%s--- stderr\n%s", status, out, errOut)
	}
	// A wrong flag: what is wrong, then the usage once, on stderr.
	out, errOut, status = dlqRun(t, "", "serve", "-nope")
	if status != 2 || out != "" || !strings.Contains(errOut, "flag provided but not defined: -nope") || strings.Count(errOut, "usage: streamgen dlq serve") != 1 {
		t.Fatalf("serve -nope: status %d\n--- stdout\n%s--- stderr\n%s", status, out, errOut)
	}
}

// A queue serve cannot show (not on this broker) is left out with a
// warning that names it and says why; the others are served.
func TestDLQServeSkipsAQueueItCannotShow(t *testing.T) {
	conn := testkit.DialRabbitMQ(t, brokerurl.RabbitMQ())
	q := dlqQueue(t, conn, "serve-some", cliLetter("m1", "Card", "order 1: card declined", "orders", []byte(`{"order":1}`)))
	missing := q + ".not-here"
	lines, addr, stderr := serveCmd(t, []string{"STREAMGEN_DLQ_TOKEN=the-operators-token"}, false, "-url", brokerurl.RabbitMQ(), missing, q)
	if !strings.Contains(lines[0], "the dead-letter console of "+q+" is at") || strings.Contains(lines[0], missing) {
		t.Fatalf("serve shows %q", lines)
	}
	testkit.Eventually(t, "the warning", func() bool {
		return strings.Contains(stderr.String(), "streamgen dlq serve: warning: not shown: dead-letter queue "+missing+" does not exist") &&
			strings.Contains(stderr.String(), "is it on another broker")
	})
	if strings.Contains(stderr.String(), "guest:guest") {
		t.Fatalf("the warning shows the password:\n%s", stderr)
	}
	if _, body := getPage(t, signedInClient(t, addr, "the-operators-token"), addr+"/"); !strings.Contains(body, q) || strings.Contains(body, missing) {
		t.Fatalf("the overview: %s", body)
	}
	// With no queue left to show, serve stops.
	_, errOut, status := dlqRun(t, "", "serve", "-url", brokerurl.RabbitMQ(), "-addr", "127.0.0.1:0", missing)
	if status != 1 || !strings.Contains(errOut, "not shown: dead-letter queue "+missing) || !strings.Contains(errOut, "nothing to serve") {
		t.Fatalf("serve of a missing queue alone: status %d\n%s", status, errOut)
	}
}
