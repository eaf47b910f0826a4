package main

import (
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/brokerurl"
	"github.com/streamgen/streamgen/internal/testsupport/testkit"
)

// Counts of letters are written in words: one letter, two letters.
func TestDLQCountsLettersInWords(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{letters(0), "0 letters"},
		{letters(1), "1 letter"},
		{letters(2), "2 letters"},
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
		return strings.Contains(stderr.String(), "streamgen dlq serve: warning: not shown: queue "+missing+" does not exist") &&
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
	if status != 1 || !strings.Contains(errOut, "not shown: queue "+missing) || !strings.Contains(errOut, "nothing to serve") {
		t.Fatalf("serve of a missing queue alone: status %d\n%s", status, errOut)
	}
}
