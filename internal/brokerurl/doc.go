// Package brokerurl says which RabbitMQ broker this repository's example
// services, demos, example tests and benchmark report talk to: the one the
// environment variable STREAMGEN_RABBITMQ_URL names, else the local broker
// that make rabbitmq starts.
//
//	conn, err := amqp.Dial(brokerurl.RabbitMQ())
//
// The package is internal to this repository: it is not part of
// streamgen's API.
package brokerurl
