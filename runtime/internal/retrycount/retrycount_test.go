package retrycount_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/streamgen/streamgen/runtime"
	"github.com/streamgen/streamgen/runtime/internal/retrycount"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]int{"": 0, "0": 0, "1": 1, "4": 4, "12345": 12345} {
		if got, err := retrycount.Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	// Only decimal digits: what the header carries is written by Itoa.
	for _, in := range []string{"-1", "x", "1.0", " 1", "1 ", "+1", "0x10"} {
		_, err := retrycount.Parse(in)
		if err == nil || !strings.Contains(err.Error(), "is not a non-negative whole number") || !strings.HasPrefix(err.Error(), "runtime: ") {
			t.Errorf("Parse(%q) error %v, want a runtime error", in, err)
		}
	}
	if runtime.RetryCountHeader != "x-retry-count" {
		t.Errorf("RetryCountHeader = %q, the documented name is x-retry-count", runtime.RetryCountHeader)
	}
}

// A count above Max (a sender's bug, or a hostile one) reads as
// Max: the attempt number 1 + count neither overflows nor starts
// the retry budget afresh, and the message counts as having used up its
// attempts, so it is parked or dropped rather than retried.
func TestParseRetryCountClampsCountsAboveTheBound(t *testing.T) {
	for _, in := range []string{strconv.Itoa(retrycount.Max + 1), "9223372036854775807", "99999999999999999999999"} {
		n, err := retrycount.Parse(in)
		if err != nil || n != retrycount.Max {
			t.Errorf("Parse(%q) = %d, %v; want Max (%d)", in, n, err, retrycount.Max)
		}
		if attempt := 1 + n; attempt < 1 {
			t.Errorf("Parse(%q) = %d: the attempt 1 + count overflows to %d", in, n, attempt)
		}
	}
	if n, err := retrycount.Parse(strconv.Itoa(retrycount.Max)); err != nil || n != retrycount.Max {
		t.Errorf("Parse(Max) = %d, %v", n, err)
	}
}

// FuzzParseRetryCount: any header value either reads as a count in
// [0, Max] that Itoa writes back the same (for values in range),
// or is refused; nothing panics, and the time is linear in the input.
func FuzzParseRetryCount(f *testing.F) {
	for _, s := range []string{"", "0", "4", "-1", "+1", " 1", "1.5", "abc", "99999999999999999999", "1073741824", "1073741825", "0x10", "\r0", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		n, err := retrycount.Parse(v)
		if err != nil {
			if n != 0 {
				t.Fatalf("Parse(%q) = %d with error %v, want 0", v, n, err)
			}
			return
		}
		if n < 0 || n > retrycount.Max {
			t.Fatalf("Parse(%q) = %d, out of [0, %d]", v, n, retrycount.Max)
		}
		if v != "" && n < retrycount.Max && strings.TrimLeft(v, "0") != strings.TrimLeft(strconv.Itoa(n), "0") {
			t.Fatalf("Parse(%q) = %d, which is not the value written", v, n)
		}
	})
}
