package testkit

import (
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/brokerurl"
)

func TestDialRabbitMQConnectsForTheTest(t *testing.T) {
	r := &recordingTB{TB: t}
	var conn *amqp.Connection
	r.inTest(func() { conn = DialRabbitMQ(r, brokerurl.RabbitMQ()) })
	if conn == nil {
		t.Fatalf("DialRabbitMQ failed: %s", r.end())
	}
	if conn.IsClosed() {
		t.Fatal("the connection is closed before the test ended")
	}
	if got := r.end(); got != "" {
		t.Fatalf("failures %q", got)
	}
	if !conn.IsClosed() {
		t.Error("the connection is open after the test ended")
	}
}

func TestRequireRabbitMQPassesWhenTheBrokerAnswers(t *testing.T) {
	r := &recordingTB{TB: t}
	r.inTest(func() { RequireRabbitMQ(r, brokerurl.RabbitMQ()) })
	if got := r.end(); got != "" {
		t.Errorf("failures %q", got)
	}
}

func TestRabbitMQThatDoesNotAnswerFailsLoudlyWithoutThePassword(t *testing.T) {
	r := &recordingTB{TB: t}
	r.inTest(func() {
		RequireRabbitMQ(r, "amqp://orders:s3cret@127.0.0.1:1/")
		t.Error("RequireRabbitMQ returned with no broker at the URL")
	})
	got := r.end()
	if !strings.Contains(got, "RabbitMQ does not answer at") || !strings.Contains(got, "rabbitmq-server -detached") {
		t.Errorf("failures %q, want one saying how to start a broker", got)
	}
	if strings.Contains(got, "s3cret") {
		t.Errorf("the failure shows the password: %q", got)
	}
}

func TestRabbitMQURLIsTheEnvironmentsElseTheLocalBroker(t *testing.T) {
	t.Setenv("STREAMGEN_RABBITMQ_URL", "amqp://elsewhere:5673/")
	if got := RabbitMQURL(); got != "amqp://elsewhere:5673/" {
		t.Errorf("RabbitMQURL() = %q", got)
	}
	t.Setenv("STREAMGEN_RABBITMQ_URL", "")
	if got := RabbitMQURL(); got != "amqp://guest:guest@127.0.0.1:5672/" {
		t.Errorf("RabbitMQURL() without the variable = %q", got)
	}
	if a, b := UniqueName("q"), UniqueName("q"); a == b || len(a) != len("q.")+8 {
		t.Errorf("UniqueName: %q and %q", a, b)
	}
}

func TestDepsListsThePackagesOfAPrefix(t *testing.T) {
	if got := Deps(t, "./internal/testsupport/testkit", "go.uber.org/goleak"); len(got) == 0 {
		t.Error("testkit links goleak, yet Deps finds it not")
	}
	if got := Deps(t, "./internal/annotvalue", "go.uber.org/"); len(got) != 0 {
		t.Errorf("annotvalue links %v", got)
	}
}
