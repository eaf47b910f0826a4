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

// A header string that is not UTF-8, at the top or nested in a table or
// an array, survives JSON Lines byte for byte: JSON cannot hold it as it
// is, so it is written in base64 with its type.
func TestLetterJSONKeepsAHeaderStringThatIsNotUTF8(t *testing.T) {
	l := &deadletter.Letter{Body: []byte("{}"), Headers: map[string]any{
		"latin1": "caf\xe9", "utf8": "café",
		"table": map[string]any{"s": "\xff\x00"}, "array": []any{"ok", "\xfe"},
	}}
	b, err := l.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"utf8":"café"`) {
		t.Errorf("a UTF-8 header is not written as itself: %s", b)
	}
	var back deadletter.Letter
	if err := back.UnmarshalJSON(b); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if !reflect.DeepEqual(back.Headers, l.Headers) {
		t.Fatalf("read back as %q from %s", back.Headers, b)
	}
}

// UnmarshalJSON refuses text JSON decoding would change (bytes that are
// not UTF-8, an escape of half a surrogate pair), wherever it is, and
// takes a surrogate pair and an escaped backslash before a u.
func TestLetterJSONRefusesTextDecodingWouldChange(t *testing.T) {
	for _, c := range []struct {
		line, err string // err "" means the line is a letter
	}{
		{`{"body":"\ud83d\ude00","headers":{"h":"\uD83D\uDE00"}}`, ""},
		{`{"body":"\\ud800","headers":{"h":"\\\\\\udc00"}}`, ""},
		{`{"body":"\ufffd is written as such"}`, ""},
		{`{"body":"a\ud800"}`, "body: a text body with an escape of half a surrogate pair"},
		{`{"body":"a\ud800\u0041"}`, "body: a text body with an escape of half a surrogate pair"},
		{`{"body":"\udc00\ud800"}`, "body: a text body with an escape of half a surrogate pair"},
		{"{\"body\":\"\xe9\"}", "body: a text body that is not valid UTF-8"},
		{`{"body":"x","headers":{"h":"\\\ud800"}}`, "header h: a value with an escape of half a surrogate pair"},
		{`{"body":"x","headers":{"h":{"type":"table","value":{"k":"\udfff"}}}}`, "header h: a value with an escape"},
		{"{\"body\":\"x\",\"headers\":{\"h\":\"\xe9\"}}", "header h: a value that is not valid UTF-8"},
		{"{\"body\":\"x\",\"properties\":{\"type\":\"\xe9\"}}", "text that is not valid UTF-8, in a property"},
		{`{"body":"x","reason":"\ud800"}`, "text with an escape of half a surrogate pair, which is no character, in a property"},
		{`{"body":"x","headers":{"h":{"type":"string","encoding":"rot13","value":"x"}}}`, `string encoding "rot13"`},
	} {
		var l deadletter.Letter
		err := l.UnmarshalJSON([]byte(c.line))
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.line, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one with %q", c.line, err, c.err)
		}
	}
}
