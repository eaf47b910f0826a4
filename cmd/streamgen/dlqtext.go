package main

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/internal/brokerurl"
	"github.com/streamgen/streamgen/runtime/deadletter"
)

// ofLetters says which of the scanned letters a plan selects: "the only
// letter", "all 3 letters", "2 of the 3 letters".
func ofLetters(selected, scanned int) string {
	switch {
	case selected == scanned && scanned == 1:
		return "the only letter"
	case selected == scanned:
		return fmt.Sprintf("all %d letters", scanned)
	}
	return fmt.Sprintf("%d of the %s", selected, deadletter.Letters(scanned))
}

// connectHint says what to check when connecting to RabbitMQ failed with
// err, by the broker's reply code or the network's error: the user or
// password, the virtual host, whether RabbitMQ runs at the address.
func connectHint(err error) string {
	fix := "give the right URL with -url or $" + brokerurl.EnvVar
	var ae *amqp.Error
	switch {
	case errors.Is(err, amqp.ErrVhost):
		return "the URL's virtual host does not exist or the user may not use it: " + fix + ", or give the user access to it (rabbitmqctl set_permissions)"
	case errors.As(err, &ae) && ae.Code == amqp.AccessRefused:
		return "the user or password in the URL is wrong: " + fix
	case errors.As(err, &ae) && ae.Code == amqp.NotAllowed:
		return "the URL's virtual host does not exist, the user may not use it, or the user has reached a connection limit: " + fix
	case errors.Is(err, syscall.ECONNREFUSED):
		return "nothing listens at that address: is RabbitMQ running there? Start it, or " + fix
	}
	return "can RabbitMQ be reached there? " + fix
}

// queueUnusable says why a queue on a reached broker cannot be used, from
// the error of reading it (which names the queue), with the URL's password
// masked by redact.
func queueUnusable(err error, redact func(string) string) string {
	msg := redact(packagePrefixes.Replace(err.Error()))
	var ae *amqp.Error
	if errors.As(err, &ae) && ae.Code == amqp.NotFound {
		msg += "; is it on another broker or virtual host (give that one's -url), or not declared yet (a service declares its dead-letter queues when it first starts)?"
	}
	return msg
}

// packagePrefixes cuts the package prefixes of the stores' errors
// (deadletter:, rabbitmq:, zeromq:): a line has the command's own.
var packagePrefixes = strings.NewReplacer("deadletter: ", "", "rabbitmq: ", "", "zeromq: ", "")
