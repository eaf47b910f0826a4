package rabbitmq

import (
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

func TestVersionOfReadsTheServerProperties(t *testing.T) {
	for _, c := range []struct {
		text                string
		major, minor, patch int
		limit               bool
	}{
		{"3.10.8", 3, 10, 8, false},
		{"3.13.7", 3, 13, 7, false},
		{"4.0.0", 4, 0, 0, true},
		{"4.3.6", 4, 3, 6, true},
		{"4.3.0-rc.1", 4, 3, 0, true},
		{"3.12.1+2.g1234", 3, 12, 1, false},
		{"10.1", 10, 1, 0, true},
		{"", 0, 0, 0, false},
		{"unknown", 0, 0, 0, false},
	} {
		v := versionOf(amqp.Table{"version": c.text, "product": "RabbitMQ"})
		if v.major != c.major || v.minor != c.minor || v.patch != c.patch {
			t.Errorf("versionOf(%q) = %d.%d.%d, want %d.%d.%d", c.text, v.major, v.minor, v.patch, c.major, c.minor, c.patch)
		}
		if v.defaultDeliveryLimit() != c.limit {
			t.Errorf("%q: defaultDeliveryLimit() = %v, want %v", c.text, v.defaultDeliveryLimit(), c.limit)
		}
	}
	if v := versionOf(nil); v.String() != "an unknown version" || v.atLeast(4, 0) {
		t.Errorf("no server properties: %v, atLeast(4, 0) %v", v, v.atLeast(4, 0))
	}
	if !versionOf(amqp.Table{"version": "4.3.6"}).atLeast(4, 3) || versionOf(amqp.Table{"version": "4.2.9"}).atLeast(4, 3) {
		t.Error("atLeast(4, 3) is wrong about 4.3.6 or 4.2.9")
	}
}
