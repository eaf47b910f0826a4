package testkit

import (
	"testing"

	"go.uber.org/goleak"
)

// NoLeaks fails t when a goroutine started during t is still running after
// t and its cleanups are done. Call it first, so its cleanup runs last.
func NoLeaks(t testing.TB) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
}
