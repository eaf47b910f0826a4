package messageid_test

import (
	"encoding/hex"
	"testing"

	"github.com/streamgen/streamgen/runtime/internal/messageid"
)

func TestNewIsFreshHex(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := messageid.New()
		if b, err := hex.DecodeString(id); err != nil || len(b) != 16 {
			t.Fatalf("New() = %q, want 32 hex digits", id)
		}
		if seen[id] {
			t.Fatalf("New() repeated %q", id)
		}
		seen[id] = true
	}
}

func BenchmarkNew(b *testing.B) {
	for b.Loop() {
		_ = messageid.New()
	}
}
