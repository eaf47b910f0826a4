package runtime_test

import (
	"strings"
	"testing"

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
