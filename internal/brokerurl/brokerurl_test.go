package brokerurl

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRabbitMQComesFromTheEnvironment(t *testing.T) {
	t.Setenv("STREAMGEN_RABBITMQ_URL", "amqp://elsewhere:5672/")
	if got := RabbitMQ(); got != "amqp://elsewhere:5672/" {
		t.Errorf("RabbitMQ() = %q with the variable set", got)
	}
	t.Setenv("STREAMGEN_RABBITMQ_URL", "")
	if got := RabbitMQ(); got != DefaultRabbitMQ {
		t.Errorf("RabbitMQ() = %q with the variable empty, want the default", got)
	}
	if DefaultRabbitMQ != "amqp://guest:guest@127.0.0.1:5672/" {
		t.Errorf("DefaultRabbitMQ = %q, want the broker make rabbitmq starts", DefaultRabbitMQ)
	}
}
