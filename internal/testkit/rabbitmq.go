package testkit

import (
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"net/url"
)

// DialRabbitMQ connects to the broker at url for the test and closes the
// connection when the test ends. When the broker does not answer, it fails
// t saying how to start one: broker tests are never skipped.
func DialRabbitMQ(t testing.TB, url string) *amqp.Connection {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatalf("RabbitMQ does not answer at %s (%v): start one with rabbitmq-server -detached, or point STREAMGEN_RABBITMQ_URL at one",
			redacted(url), err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// RequireRabbitMQ fails t, as DialRabbitMQ does, unless the broker at url
// answers.
func RequireRabbitMQ(t testing.TB, url string) {
	t.Helper()
	_ = DialRabbitMQ(t, url).Close()
}

// redacted is rawURL with its password hidden.
func redacted(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(an unreadable URL)"
	}
	return u.Redacted()
}
