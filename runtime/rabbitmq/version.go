package rabbitmq

import (
	"strconv"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"
)

// serverVersion is the version of RabbitMQ a connection reached, as its
// connection.start's server properties say ("4.3.6"). Where RabbitMQ's
// behaviour differs by version, the Broker chooses by it:
//
//   - 4.0 and later give a quorum queue a delivery limit of 20 unless it
//     sets one, so a quorum dead-letter queue is declared with
//     x-delivery-limit -1 there (no limit), to drop no letter however
//     often it is read and handed back; 3.x has no default limit and no
//     -1.
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

// atLeast reports whether v is major.minor or later.
func (v serverVersion) atLeast(major, minor int) bool {
	return v.major > major || v.major == major && v.minor >= minor
}

// defaultDeliveryLimit reports whether quorum queues declared without
// x-delivery-limit get a limit anyway (RabbitMQ 4.0 and later: 20).
func (v serverVersion) defaultDeliveryLimit() bool { return v.atLeast(4, 0) }

func (v serverVersion) String() string {
	if v.text == "" {
		return "an unknown version"
	}
	return v.text
}
