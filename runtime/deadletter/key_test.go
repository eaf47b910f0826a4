package deadletter_test

import (
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/streamgen/streamgen/runtime/deadletter"
)

// A letter's key stays while the broker counts its deliveries, and tells
// apart letters that differ in anything else.
func TestLetterKeyNamesALetterExactly(t *testing.T) {
	d := amqp.Delivery{MessageId: "m", Type: "T", Body: []byte(`{}`), Headers: amqp.Table{"x-streamgen-reason": "r", "a": "1"}}
	k := deadletter.LetterKey(deadletter.FromDelivery(d))
	again := d
	again.Headers = amqp.Table{"x-streamgen-reason": "r", "a": "1", "x-delivery-count": int64(3)}
	if got := deadletter.LetterKey(deadletter.FromDelivery(again)); got != k {
		t.Fatalf("a delivery count changed the key: %s, was %s", got, k)
	}
	for name, other := range map[string]amqp.Delivery{
		"body":   {MessageId: "m", Type: "T", Body: []byte(`{ }`), Headers: d.Headers},
		"header": {MessageId: "m", Type: "T", Body: d.Body, Headers: amqp.Table{"x-streamgen-reason": "r", "a": "2"}},
		"id":     {MessageId: "n", Type: "T", Body: d.Body, Headers: d.Headers},
	} {
		if deadletter.LetterKey(deadletter.FromDelivery(other)) == k {
			t.Errorf("a letter with another %s has the same key", name)
		}
	}
	sel := deadletter.Selection{Keys: []string{k}}
	if !sel.Matches(deadletter.FromDelivery(again)) || sel.Matches(deadletter.FromDelivery(amqp.Delivery{MessageId: "m"})) {
		t.Fatal("Selection.Keys does not pick the letter of the key, and it alone")
	}
}

// LetterKeyJSON gives LetterKey and MarshalJSON, with a delivery count
// or without.
func TestLetterKeyJSONIsLetterKeyAndMarshalJSON(t *testing.T) {
	for _, h := range []amqp.Table{{"a": "b"}, {"a": "b", "x-delivery-count": int64(3)}, {"x-acquired-count": int64(1)}} {
		l := deadletter.FromDelivery(amqp.Delivery{Headers: h, MessageId: "m", Body: []byte(`{"n":1}`)})
		key, whole := deadletter.LetterKeyJSON(l)
		want, _ := l.MarshalJSON()
		if key != deadletter.LetterKey(l) || string(whole) != string(want) {
			t.Errorf("%v: LetterKeyJSON = %s, %s; want %s, %s", h, key, whole, deadletter.LetterKey(l), want)
		}
	}
}
