package deadletter

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"

	"github.com/streamgen/streamgen/runtime/internal/headers"
)

// LetterKey returns a short stable id of l: a digest of its body,
// properties and headers, except the delivery counts a broker changes
// while the letter waits (x-delivery-count, x-acquired-count). It names a
// letter in a Selection (Keys) and in the console's addresses where its
// message id may be missing or shared: two letters have one key only when
// they are the same message parked at the same moment, so acting on both
// is acting on one.
func LetterKey(l *Letter) string { return letterKey(l) }

// LetterKeyJSON returns l's LetterKey and l as JSON (Letter.MarshalJSON;
// nil when it cannot be encoded), encoding it once when it holds no
// delivery count: for a console that keeps both.
func LetterKeyJSON(l *Letter) (string, []byte) {
	whole, err := l.MarshalJSON()
	if err != nil {
		whole = nil
	}
	if !counted(l) && whole != nil { // the key's JSON is the letter's
		sum := sha256.Sum256(whole)
		return hex.EncodeToString(sum[:10]), whole
	}
	return letterKey(l), whole
}

// counted reports whether l holds a delivery count a broker changes
// (headers.DeliveryCount).
func counted(l *Letter) bool {
	for k := range l.Headers {
		if headers.DeliveryCount(k) {
			return true
		}
	}
	return false
}

func letterKey(l *Letter) string {
	c := *l
	if counted(l) {
		c.Headers = maps.Clone(l.Headers)
		maps.DeleteFunc(c.Headers, func(k string, _ any) bool { return headers.DeliveryCount(k) })
	}
	b, err := c.MarshalJSON()
	if err != nil { // a header no JSON encodes: fall back to what is left
		b, _ = json.Marshal(struct {
			Body       []byte
			Properties Properties
		}{l.Body, l.Properties})
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:10])
}
