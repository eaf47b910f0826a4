package jsoncheck

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime"
)

// captureBroker is a Broker that starts nothing: it keeps the
// subscriptions it is started with.
type captureBroker struct{ subs []*runtime.Subscription }

func (b *captureBroker) Kind() runtime.BrokerKind { return runtime.ZeroMQ }

func (b *captureBroker) Start(_ context.Context, _ runtime.Env, subs []*runtime.Subscription) error {
	b.subs = subs
	return nil
}

func (b *captureBroker) Shutdown(context.Context) error { return nil }

// mounted returns the Handler of each message type as the generated Mount
// builds it.
func mounted(t testing.TB) map[string]runtime.Handler {
	t.Helper()
	app := runtime.NewApp("jsoncheck")
	b := &captureBroker{}
	Mount(app, b)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Run starts the broker, and stops at once
	if err := app.Run(ctx); err != nil {
		t.Fatal(err)
	}
	handlers := map[string]runtime.Handler{}
	for _, s := range b.subs {
		for _, h := range s.Handlers {
			handlers[h.MessageType] = h
		}
	}
	return handlers
}

// callBodies are bodies for Calls, valid and not, that reach its decode
// methods in every order.
var callBodies = []string{
	`{"c":{"a":1},"x":1}`,
	`{"c":{"a":1},"x":1,}`, // not JSON: encoding/json calls no method
	`{"c":{"a":1},"x":1`,
	`{"c":{"a":1},"c":{"a":2}}`, // a key twice
	`{"c":{"a":1},"X":1}`,       // another case
	`{"c":{"a":1},"\u0078":1}`,  // an escaped key
	`{"c":{"a":1},"x":1.5}`,     // a type error after a method
	`{"x":"s","c":{"a":1}}`,     // a type error before one
	`{"c":{"a":"bad"},"p":{"a":2}}`,
	`{"l":[{"a":1},{"a":"bad"},{"a":3}],"t":"t"}`,
	`{"t":"a","l":[{"a":1},{"a":2}],"p":{"a":3},"k":{"x":1,"y":2}}`,
	`{"p":null,"c":null,"l":null,"t":null}`,
	`{"t":1}`,
	`{"k":{"x":"one"}}`,
	`{"c":{"a":1},"t":"\xff"}`,
}

// countCalls returns how many decode method calls decode makes.
func countCalls(decode func()) int64 {
	before := decodeCalls.Load()
	decode()
	return decodeCalls.Load() - before
}

// compareCalls holds the Handler of Calls to json.Unmarshal on body: the
// same calls of the types' own decode methods, the same value or error.
func compareCalls(t testing.TB, h runtime.Handler, body []byte) {
	t.Helper()
	var want Calls
	var stdErr error
	wantCalls := countCalls(func() { stdErr = json.Unmarshal(body, &want) })
	var err error
	gotCalls := countCalls(func() { _, err = h.Decode(runtime.JSON{}, body) })
	if gotCalls != wantCalls {
		t.Errorf("Calls: decoding %q through the Handler called the types' decode methods %d times, json.Unmarshal %d", body, gotCalls, wantCalls)
	}
	// A body that is JSON null is the one that json.Unmarshal takes and
	// the Handler refuses: it would reach the handler as a zero value.
	null := stdErr == nil && string(bytes.TrimSpace(body)) == "null"
	switch {
	case null && (err == nil || !strings.Contains(err.Error(), "null")):
		t.Errorf("Calls: the Handler's error on %q is %v, want one saying the body is null", body, err)
	case !null && (err == nil) != (stdErr == nil):
		t.Errorf("Calls: the Handler's error on %q is %v, json.Unmarshal's %v", body, err, stdErr)
	}
}

// TestDecodeMethodsAreCalledAsJSONCallsThem: a user's UnmarshalJSON or
// UnmarshalText is called exactly as encoding/json calls it: not on a body
// that is not JSON, and not twice on one that the fast path leaves to
// encoding/json.
func TestDecodeMethodsAreCalledAsJSONCallsThem(t *testing.T) {
	h, ok := mounted(t)["Calls"]
	if !ok {
		t.Fatal("Mount mounts no handler of Calls")
	}
	for _, body := range callBodies {
		compareCalls(t, h, []byte(body))
	}
}
