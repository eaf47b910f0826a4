package runtime_test

import (
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
)

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"amqp://guest:s3cret@127.0.0.1:5672/":        "amqp://guest:xxxxx@127.0.0.1:5672/",
		"amqps://user:p%40ss@broker.example:5671/vh": "amqps://user:xxxxx@broker.example:5671/vh",
		"amqp://127.0.0.1:5672/":                     "amqp://127.0.0.1:5672/",
		"amqp://user@host/":                          "amqp://user@host/",
		"amqp://user:s3cret@host:99999999999/%zz":    "amqp://(unparsable URL)",
		"user:s3cret@%zz":                            "user:xxxxx@%zz",
		"guest:s3cret@localhost:5672":                "guest:xxxxx@localhost:5672",
		"amqp:guest:s3cret@host/vh":                  "amqp:xxxxx@host/vh",
		"%zz:s3cret@host":                            "(unparsable URL)",
	} {
		got := runtime.RedactURL(in)
		if got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
		if strings.Contains(got, "s3cret") || strings.Contains(got, "p%40ss") {
			t.Errorf("RedactURL(%q) leaks the password: %q", in, got)
		}
	}
}

func TestNewMessageID(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := runtime.NewMessageID()
		if b, err := hex.DecodeString(id); err != nil || len(b) != 16 {
			t.Fatalf("NewMessageID() = %q, want 32 hex digits", id)
		}
		if seen[id] {
			t.Fatalf("NewMessageID() repeated %q", id)
		}
		seen[id] = true
	}
}

func TestJSONCodec(t *testing.T) {
	var c runtime.Codec = runtime.JSON{}
	if c.ContentType() != "application/json" {
		t.Errorf("ContentType() = %q", c.ContentType())
	}
	body, err := c.Encode(job{ID: 3})
	if err != nil || string(body) != `{"id":3}` {
		t.Fatalf("Encode = %s, %v", body, err)
	}
	var j job
	if err := c.Decode(body, &j); err != nil || j.ID != 3 {
		t.Fatalf("Decode = %+v, %v", j, err)
	}
	if _, err := c.Encode(func() {}); err == nil || !strings.HasPrefix(err.Error(), "runtime: encode json: ") {
		t.Errorf("Encode(func) error %v", err)
	}
	if err := c.Decode([]byte(`{"id":"x"}`), &j); err == nil || !strings.HasPrefix(err.Error(), "runtime: decode json: ") {
		t.Errorf("Decode error %v", err)
	}
}

func TestSystemClock(t *testing.T) {
	var c runtime.Clock = runtime.SystemClock{}
	before := time.Now()
	if now := c.Now(); now.Before(before) {
		t.Errorf("Now() = %v, before %v", now, before)
	}
	fired := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(fired) })
	select {
	case <-fired:
	case <-time.After(time.Minute):
		t.Fatal("AfterFunc did not fire")
	}
	never := c.AfterFunc(time.Hour, func() { t.Error("a stopped timer fired") })
	if !never.Stop() {
		t.Error("Stop() on a pending timer = false")
	}
	if !runtime.GeneratedCodeV1 {
		t.Error("GeneratedCodeV1 is false")
	}
}
