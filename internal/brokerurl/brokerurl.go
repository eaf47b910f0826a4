package brokerurl

import "os"

// EnvVar is the environment variable that names the RabbitMQ broker.
const EnvVar = "STREAMGEN_RABBITMQ_URL"

// DefaultRabbitMQ is the broker used when EnvVar is not set: the local
// one, with RabbitMQ's default user.
const DefaultRabbitMQ = "amqp://guest:guest@127.0.0.1:5672/"

// RabbitMQ returns the URL EnvVar holds, or DefaultRabbitMQ when it is not
// set or empty.
func RabbitMQ() string {
	if u := os.Getenv(EnvVar); u != "" {
		return u
	}
	return DefaultRabbitMQ
}
