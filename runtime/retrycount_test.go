package runtime_test

import (
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime"
)

func TestParseRetryCount(t *testing.T) {
	for in, want := range map[string]int{"": 0, "0": 0, "1": 1, "4": 4, "12345": 12345} {
		if got, err := runtime.ParseRetryCount(in); err != nil || got != want {
			t.Errorf("ParseRetryCount(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	// Only decimal digits: what the header carries is written by Itoa.
	for _, in := range []string{"-1", "x", "1.0", " 1", "1 ", "+1", "0x10", "99999999999999999999999"} {
		_, err := runtime.ParseRetryCount(in)
		if err == nil || !strings.Contains(err.Error(), "is not a non-negative whole number") || !strings.HasPrefix(err.Error(), "runtime: ") {
			t.Errorf("ParseRetryCount(%q) error %v, want a runtime error", in, err)
		}
	}
	if runtime.RetryCountHeader != "x-retry-count" {
		t.Errorf("RetryCountHeader = %q, the documented name is x-retry-count", runtime.RetryCountHeader)
	}
}
