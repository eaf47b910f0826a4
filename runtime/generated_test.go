package runtime_test

import (
	"testing"

	"github.com/streamgen/streamgen/runtime"
)

func TestGeneratedCodeV1(t *testing.T) {
	if !runtime.GeneratedCodeV1 {
		t.Error("GeneratedCodeV1 is false")
	}
}
