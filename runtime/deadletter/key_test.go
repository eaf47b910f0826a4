package deadletter_test

import (
	"testing"

	"github.com/streamgen/streamgen/runtime/deadletter"
)

// letterOf is a letter as a store reads it.
func letterOf(id, typ, body string, h map[string]any) *deadletter.Letter {
	return deadletter.NewLetter([]byte(body), h, deadletter.Properties{MessageID: id, Type: typ})
}

// A letter's key stays while the broker counts its deliveries, and tells
// apart letters that differ in anything else.
func TestLetterKeyNamesALetterExactly(t *testing.T) {
	h := map[string]any{"x-streamgen-reason": "r", "a": "1"}
	k := deadletter.LetterKey(letterOf("m", "T", `{}`, h))
	again := letterOf("m", "T", `{}`, map[string]any{"x-streamgen-reason": "r", "a": "1", "x-delivery-count": int64(3)})
	if got := deadletter.LetterKey(again); got != k {
		t.Fatalf("a delivery count changed the key: %s, was %s", got, k)
	}
	for name, other := range map[string]*deadletter.Letter{
		"body":   letterOf("m", "T", `{ }`, h),
		"header": letterOf("m", "T", `{}`, map[string]any{"x-streamgen-reason": "r", "a": "2"}),
		"id":     letterOf("n", "T", `{}`, h),
	} {
		if deadletter.LetterKey(other) == k {
			t.Errorf("a letter with another %s has the same key", name)
		}
	}
	sel := deadletter.Selection{Keys: []string{k}}
	if !sel.Matches(again) || sel.Matches(letterOf("m", "", "", nil)) {
		t.Fatal("Selection.Keys does not pick the letter of the key, and it alone")
	}
}

// LetterKeyJSON gives LetterKey and MarshalJSON, with a delivery count
// or without.
func TestLetterKeyJSONIsLetterKeyAndMarshalJSON(t *testing.T) {
	for _, h := range []map[string]any{{"a": "b"}, {"a": "b", "x-delivery-count": int64(3)}, {"x-acquired-count": int64(1)}} {
		l := letterOf("m", "", `{"n":1}`, h)
		key, whole := deadletter.LetterKeyJSON(l)
		want, _ := l.MarshalJSON()
		if key != deadletter.LetterKey(l) || string(whole) != string(want) {
			t.Errorf("%v: LetterKeyJSON = %s, %s; want %s, %s", h, key, whole, deadletter.LetterKey(l), want)
		}
	}
}
