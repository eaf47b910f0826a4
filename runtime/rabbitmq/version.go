package rabbitmq

import (
	"strconv"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime/adapter"
)

// serverVersion is the version of RabbitMQ a connection reached, as its
// connection.start's server properties say ("4.3.6"). Where RabbitMQ's
// behaviour differs by version, the Broker chooses by it: the queues'
// arguments are adapter.Topology's for it (queues).
type serverVersion struct {
	major, minor, patch int
	// text is the version as the broker wrote it, "" when it did not.
	text string
}

// versionOf reads the version in a connection's server properties; an
// absent or unreadable one is the zero serverVersion, treated as 3.x.
func versionOf(props amqp.Table) serverVersion {
	text, _ := props["version"].(string)
	v := serverVersion{text: text}
	parts := strings.SplitN(text, ".", 3)
	nums := []*int{&v.major, &v.minor, &v.patch}
	for i, p := range parts {
		// "4.3.6-rc.1", "3.10.8+1.g..."
		if j := strings.IndexFunc(p, func(r rune) bool { return r < '0' || r > '9' }); j >= 0 {
			p = p[:j]
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			break
		}
		*nums[i] = n
	}
	return v
}

// queues is v as adapter.Topology takes it.
func (v serverVersion) queues() adapter.RabbitMQVersion {
	return adapter.RabbitMQVersion{Major: v.major, Minor: v.minor}
}

// atLeast reports whether v is major.minor or later.
func (v serverVersion) atLeast(major, minor int) bool { return v.queues().AtLeast(major, minor) }

// defaultDeliveryLimit reports whether quorum queues declared without
// x-delivery-limit get a limit anyway (adapter.RabbitMQVersion's
// DefaultDeliveryLimit: RabbitMQ 4.0 and later, 20).
func (v serverVersion) defaultDeliveryLimit() bool { return v.queues().DefaultDeliveryLimit() }

func (v serverVersion) String() string {
	if v.text == "" {
		return "an unknown version"
	}
	return v.text
}
