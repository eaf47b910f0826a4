package adapter_test

import (
	"testing"
	"time"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/adapter"
)

// A copy keeps every property of the original but its expiration, for
// retry copies and dead letters alike.
func TestCopyPropertiesKeepAllButTheExpiration(t *testing.T) {
	orig := runtime.Properties{
		CorrelationID: "corr", ReplyTo: "replies", Priority: 7, Expiration: time.Minute,
		Timestamp: time.Unix(1700000000, 0), AppID: "billing",
	}
	want := orig
	want.Expiration = 0
	for _, kind := range []adapter.CopyKind{adapter.RetryCopy, adapter.DeadLetterCopy} {
		cp := &adapter.Copy{Kind: kind, Queue: "q"}
		if got := cp.Properties(orig); got != want {
			t.Errorf("%s: properties %+v, want %+v", kind, got, want)
		}
	}
	if orig.Expiration != time.Minute {
		t.Error("Properties changed the original's")
	}
}
