package deadletter_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime/deadletter"
)

func TestNormalizeReason(t *testing.T) {
	for in, want := range map[string]string{
		"order 123: card declined":                     "order <n>: card declined",
		"took 1.5s on node 7":                          "took <n>s on node <n>",
		"id 3F2504E0-4F89-11D3-9A0C-0305E82C3301 gone": "id <uuid> gone",
		"object 5f1d7a9c3b2e not found":                "object <hex> not found",
		"deadbeef is a word here":                      "deadbeef is a word here",
		"address 0xc000123abc":                         "address <hex>",
		"no numbers at all":                            "no numbers at all",
		"json: cannot unmarshal string into Go struct field Order.amount of type float64": "json: cannot unmarshal string into Go struct field Order.amount of type float64",
		"order 12 of type int32, row_7 and item8 after 3 tries":                           "order <n> of type int32, row_7 and item8 after <n> tries",
		"5 to 6 pages, 4096 bytes": "<n> to <n> pages, <n> bytes",
	} {
		if got := deadletter.NormalizeReason(in); got != want {
			t.Errorf("NormalizeReason(%q) = %q, want %q", in, got, want)
		}
	}
}

// A letter survives JSON Lines as it was: body, every header type, and
// properties.
func TestLetterJSONRoundTrip(t *testing.T) {
	ts := time.Unix(1700000000, 0).UTC()
	l := &deadletter.Letter{
		Body: []byte{0xff, 0x00, 'a'},
		Headers: map[string]any{
			"s": "text", "b": true, "i8": int8(-3), "i16": int16(300), "i32": int32(7), "i64": int64(1 << 40),
			"u8": uint8(200), "f32": float32(1.5), "f64": 2.25, "t": ts, "raw": []byte{1, 2}, "nil": nil,
			"dec":     deadletter.Decimal{Scale: 2, Value: 12345},
			"x-death": []any{map[string]any{"count": int64(2), "queue": "q", "time": ts, "routing-keys": []any{"a", "b"}}},
		},
		Properties: deadletter.Properties{MessageID: "m", Type: "T", Priority: 4, Timestamp: ts, DeliveryMode: 2},
		// As a RabbitMQ store explains a letter from its x-death record.
		Reason: "expired in q", Source: "q", Attempts: 1, ParkedAt: ts, ByBroker: true, Explained: true,
	}
	b, err := l.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var back deadletter.Letter
	if err := back.UnmarshalJSON(b); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if !reflect.DeepEqual(back.Headers, l.Headers) || !bytes.Equal(back.Body, l.Body) || back.Properties != l.Properties {
		t.Fatalf("round trip:\n%s\n%#v", b, back)
	}
	// Read back, a letter the broker parked keeps the explanation its
	// store read from the broker's record.
	if !back.ByBroker || back.Source != "q" || back.Reason != l.Reason || !back.ParkedAt.Equal(ts) {
		t.Fatalf("the letter read back is not explained: %+v", back)
	}
	if !strings.Contains(string(b), `"body_encoding":"base64"`) {
		t.Fatalf("a body that is not UTF-8 is not base64: %s", b)
	}
}

// Replayed keeps the message and resets the failed delivery.
func TestReplayedResetsTheDelivery(t *testing.T) {
	l := &deadletter.Letter{Body: []byte("{}"), Properties: deadletter.Properties{MessageID: "m", Type: "T", CorrelationID: "c"}, Headers: map[string]any{
		"traceparent": "00-abc-def-01", "tenant": "acme", "x-retry-count": "4", "x-streamgen-reason": "r", "x-streamgen-attempts": "5",
		"x-death": []any{}, "x-first-death-queue": "q", "x-last-death-reason": "expired", "x-delivery-count": int64(3),
		"x-acquired-count": int64(3), deadletter.HeaderReplays: "4",
	}}
	p := deadletter.Replayed(l)
	want := map[string]any{"traceparent": "00-abc-def-01", "tenant": "acme", deadletter.HeaderReplays: "5"}
	if len(p.Headers) != len(want) {
		t.Fatalf("headers %v, want %v", p.Headers, want)
	}
	for k, v := range want {
		if p.Headers[k] != v {
			t.Fatalf("headers %v, want %v", p.Headers, want)
		}
	}
	if p.MessageID() != "m" || p.Type() != "T" || p.Properties.CorrelationID != "c" || string(p.Body) != "{}" || p.Explained {
		t.Fatalf("Replayed = %+v", p)
	}
}
