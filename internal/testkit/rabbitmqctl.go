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
// and returns its output, failing t when it fails or takes over a minute.
func Rabbitmqctl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := RunRabbitmqctl(context.Background(), args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", strings.Join(RabbitmqctlCommand(), " "), strings.Join(args, " "), err, out)
	}
	return out
}

// RunRabbitmqctl runs the tests' rabbitmqctl with args, bounded by ctx and
// by a minute, and returns its combined output and error.
func RunRabbitmqctl(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := RabbitmqctlCommand()
	out, err := exec.CommandContext(ctx, cmd[0], append(cmd[1:], args...)...).CombinedOutput()
	return string(out), err
}
