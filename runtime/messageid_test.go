package runtime_test

import (
	"encoding/hex"
	"testing"

	"github.com/streamgen/streamgen/runtime"
)

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
