package generator

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
)

func TestKeyTable(t *testing.T) {
	for _, name := range keyNames() {
		spec, ok := lookupKey(name)
		if !ok || spec.name != name {
			t.Errorf("lookupKey(%q) = %+v, %v", name, spec, ok)
		}
		if !strings.HasPrefix(spec.example, name+"=") {
			t.Errorf("%s: example %q does not set the key", name, spec.example)
		}
		var f fields
		if msg := f.set(name, strings.TrimPrefix(spec.example, name+"=")); msg != "" {
			t.Errorf("%s: its own example is refused: %s", name, msg)
		}
		if reflect.DeepEqual(f, fields{}) {
			t.Errorf("%s: its example sets no field", name)
		}
		if spec.alternative != "" {
			var alt fields
			if msg := alt.set(name, spec.alternative); msg != "" || reflect.DeepEqual(alt, fields{}) {
				t.Errorf("%s: its alternative %q is refused or sets nothing: %s", name, spec.alternative, msg)
			}
		}
	}
	wantNames := []string{"broker", "max_attempts", "retry_delay", "retry", "dead_letter", "out_retry", "type", "codec",
		"ack", "prefetch", "concurrency", "max_payload_bytes", "queue_type", "delivery_limit", "single_active_consumer",
		"exchange", "exchange_type", "binding", "batch_size", "batch_wait", "timeout"}
	if got := keyNames(); !slices.Equal(got, wantNames) {
		t.Errorf("keyNames() = %q, want %q (the documentation's order)", got, wantNames)
	}
	if _, ok := lookupKey("nope"); ok {
		t.Error("an unknown key was found")
	}
	// Keys that tell the broker, as the inference rules say.
	only := map[string]runtime.BrokerKind{"out_retry": runtime.ZeroMQ, "retry_delay": runtime.RabbitMQ, "retry": runtime.RabbitMQ, "ack": runtime.RabbitMQ, "queue_type": runtime.RabbitMQ,
		"delivery_limit": runtime.RabbitMQ, "single_active_consumer": runtime.RabbitMQ,
		"exchange": runtime.RabbitMQ, "exchange_type": runtime.RabbitMQ, "binding": runtime.RabbitMQ}
	for _, name := range keyNames() {
		spec, _ := lookupKey(name)
		if spec.only != only[name] {
			t.Errorf("%s exists for %q, want %q", name, spec.only, only[name])
		}
	}
}

// TestSetFields sets every key and checks the field of the
// runtime.Subscription or runtime.Handler it lands in.
func TestSetFields(t *testing.T) {
	var f fields
	for _, kv := range [][2]string{
		{"broker", "zeromq"}, {"max_attempts", "5"}, {"retry_delay", "1s,10s,1m"}, {"dead_letter", "jobs.dead"},
		{"out_retry", "self"}, {"type", "job.v1"}, {"codec", "cbor"}, {"ack", "auto"}, {"prefetch", "10"}, {"concurrency", "4"},
		{"max_payload_bytes", "2MiB"}, {"queue_type", "quorum"}, {"timeout", "1m30s"},
		{"exchange", "orders"}, {"exchange_type", "direct"}, {"binding", "order.placed, order.cancelled"},
	} {
		if msg := f.set(kv[0], kv[1]); msg != "" {
			t.Fatalf("%s=%s: %s", kv[0], kv[1], msg)
		}
	}
	want := fields{
		sub: runtime.Subscription{
			Broker: runtime.ZeroMQ, RetryDelays: []time.Duration{time.Second, 10 * time.Second, time.Minute},
			AutoAck: true, Prefetch: 10, Concurrency: 4, MaxPayloadBytes: 2 << 20, QueueType: runtime.QuorumQueue,
			Exchange: "orders", ExchangeType: runtime.DirectExchange, Bindings: []string{"order.placed", "order.cancelled"},
		},
		handler: runtime.Handler{MessageType: "job.v1", Codec: runtime.CBOR{}, Policy: runtime.Policy{MaxAttempts: 5, DeadLetter: "jobs.dead", OutRetry: "self", Timeout: 90 * time.Second}},
	}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("fields %+v, want %+v", f, want)
	}
}

func TestSetRefuses(t *testing.T) {
	for _, tc := range []struct{ key, value, wantIn string }{
		{"broker", "kafka", "use broker=rabbitmq or broker=zeromq"},
		{"max_attempts", "0", "at least 1"},
		{"max_attempts", "x", `"x" is not a whole number`},
		{"max_attempts", "", "max_attempts has no value: write it as max_attempts=5"},
		{"retry_delay", "10x", `"10x" is not a duration`},
		{"prefetch", "0", "prefetch=0: it must be at least 1"},
		{"concurrency", "-1", "is not a whole number"},
		{"max_payload_bytes", "0", "every message poison"},
		{"delivery_limit", "0", "delivery_limit=0: it must be at least 1"},
		{"delivery_limit", "many", `"many" is not a whole number`},
		{"single_active_consumer", "false", "write single_active_consumer=true, or leave it out"},
		{"max_payload_bytes", "64KB", "64KiB"},
		{"max_payload_bytes", "99999999MiB", "is not a size"},
		{"exchange_type", "headers", "use exchange_type=topic (the default), direct or fanout"},
		{"codec", "avro", "codec=avro is not a codec streamgen knows: use codec=json (the default), protobuf (for a protocol buffer message), msgpack or cbor"},
		{"timeout", "2x", `bad timeout: "2x" is not a duration`},
		{"timeout", "-1s", "timeout=-1s: it must be a positive duration such as timeout=30s"},
		{"timeout", "0s", "timeout=0s: it must be a positive duration"},
	} {
		var f fields
		msg := f.set(tc.key, tc.value)
		if !strings.Contains(msg, tc.wantIn) {
			t.Errorf("%s=%s: message %q does not contain %q", tc.key, tc.value, msg, tc.wantIn)
		}
		if !reflect.DeepEqual(f, fields{}) {
			t.Errorf("%s=%s: a refused value was kept: %+v", tc.key, tc.value, f)
		}
	}
}

func TestByteSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{{"1", 1}, {"65536", 65536}, {"64KiB", 64 << 10}, {"2MiB", 2 << 20}} {
		b, msg := parseByteSize(tc.in)
		if msg != "" || b.bytes() != tc.want {
			t.Errorf("parseByteSize(%q) = %d (%q), want %d", tc.in, b.bytes(), msg, tc.want)
		}
	}
}

func TestSameValue(t *testing.T) {
	for _, tc := range []struct {
		key, a, b string
		want      bool
	}{
		{"retry_delay", "10s", "10000ms", true},
		{"retry_delay", "1s,1m", "1000ms,60s", true},
		{"retry_delay", "1s,1m", "1s", false},
		{"max_payload_bytes", "64KiB", "65536", true},
		{"max_payload_bytes", "1MiB", "1KiB", false},
		{"prefetch", "5", "5", true},
		{"prefetch", "5", "10", false},
		{"broker", "rabbitmq", "zeromq", false},
	} {
		if got := sameValue(tc.key, tc.a, tc.b); got != tc.want {
			t.Errorf("sameValue(%s, %q, %q) = %v, want %v", tc.key, tc.a, tc.b, got, tc.want)
		}
	}
}
