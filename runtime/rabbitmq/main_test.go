package rabbitmq

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// noLeaks fails t when a goroutine started during t is still running after
// t and its cleanups are done. Call it first, so its cleanup runs last.
func noLeaks(t *testing.T) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
