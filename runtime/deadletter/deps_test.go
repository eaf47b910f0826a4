package deadletter_test

import (
	"os/exec"
	"strings"
	"testing"
)

// Package deadletter and its console know no broker: each broker package
// provides its own Store, and a program that uses the console over one
// broker links only that broker's stack.
func TestDeadLetterKnowsNoBroker(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, broker := range []string{"/runtime/rabbitmq", "/runtime/zeromq", "github.com/rabbitmq/amqp091-go", "github.com/go-zeromq/"} {
			if strings.Contains(dep, broker) {
				t.Errorf("runtime/deadletter/... depends on %s", dep)
			}
		}
	}
}
