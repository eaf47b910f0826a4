package testkit

import (
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
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

// RabbitMQURL is the broker the tests use: STREAMGEN_RABBITMQ_URL, else
// the local broker's default address.
func RabbitMQURL() string {
	if u := os.Getenv("STREAMGEN_RABBITMQ_URL"); u != "" {
		return u
	}
	return "amqp://guest:guest@127.0.0.1:5672/"
}

// UniqueName is prefix with a random suffix: a queue or connection name of
// the test's own.
func UniqueName(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "." + hex.EncodeToString(b)
}

// QueueInfo inspects queue q with a passive declare on a channel of its
// own: its ready messages and its consumers. It fails the test when q
// cannot be inspected.
func QueueInfo(t testing.TB, conn *amqp.Connection, q string) amqp.Queue {
	t.Helper()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("open a channel to inspect %s: %v", q, err)
	}
	defer func() { _ = ch.Close() }()
	info, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
	if err != nil {
		t.Fatalf("inspect %s: %v", q, err)
	}
	return info
}
