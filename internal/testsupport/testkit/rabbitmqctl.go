package testkit

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// RabbitmqctlCommand is the command line that reaches the broker the tests
// use: STREAMGEN_RABBITMQCTL split on white space, else "rabbitmqctl"
// (the default local node). A broker of its own, such as the RabbitMQ
// 4.x that .ci/rabbitmq4 starts, sets it with the node's name, so that no
// test reaches another broker than the one STREAMGEN_RABBITMQ_URL names.
func RabbitmqctlCommand() []string {
	if f := strings.Fields(os.Getenv("STREAMGEN_RABBITMQCTL")); len(f) > 0 {
		return f
	}
	return []string{"rabbitmqctl"}
}

// Rabbitmqctl runs the tests' rabbitmqctl (RabbitmqctlCommand) with args
// and returns its output, failing t when it fails or takes over
// rabbitmqctlPatience.
func Rabbitmqctl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := RunRabbitmqctl(context.Background(), args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", strings.Join(RabbitmqctlCommand(), " "), strings.Join(args, " "), err, out)
	}
	return out
}

// rabbitmqctlPatience bounds one rabbitmqctl run. RabbitMQ 4's takes some
// 5 s on a busy 2-core machine, and a dozen times that under a full test
// run beside other work: the bound is for a command that hangs, not a
// measure.
const rabbitmqctlPatience = 3 * time.Minute

// RunRabbitmqctl runs the tests' rabbitmqctl with args, bounded by ctx and
// by rabbitmqctlPatience, and returns its combined output and error.
func RunRabbitmqctl(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, rabbitmqctlPatience)
	defer cancel()
	cmd := RabbitmqctlCommand()
	out, err := exec.CommandContext(ctx, cmd[0], append(cmd[1:], args...)...).CombinedOutput()
	return string(out), err
}

// CloseConnection makes the broker close the connection named exactly
// name (its connection_name), as a broker restart would, and fails t
// unless there was one: other tests' connections are left alone.
func CloseConnection(t testing.TB, name string) {
	t.Helper()
	if n := closeConnectionsNamed(t, `{"connection_name","`+name+`"}`); n != 1 {
		t.Fatalf("%d connections named %q closed, want 1", n, name)
	}
}

// CloseConnections makes the broker close every connection whose
// connection_name starts with prefix, and returns how many it closed.
// Other tests' connections are left alone.
func CloseConnections(t testing.TB, prefix string) int {
	t.Helper()
	return closeConnectionsNamed(t, `{"connection_name","`+prefix)
}

// closeConnectionsNamed closes each connection whose client properties,
// as rabbitmqctl lists them, contain name, and returns how many.
func closeConnectionsNamed(t testing.TB, name string) int {
	t.Helper()
	out := Rabbitmqctl(t, "list_connections", "-q", "--no-table-headers", "pid", "client_properties")
	n := 0
	for line := range strings.Lines(out) {
		pid, props, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if !ok || !strings.Contains(props, name) {
			continue
		}
		Rabbitmqctl(t, "close_connection", pid, "closed by a streamgen test")
		n++
	}
	return n
}
