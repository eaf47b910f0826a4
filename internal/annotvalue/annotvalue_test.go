package annotvalue_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/streamgen/streamgen/internal/annotvalue"
)

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		500 * time.Millisecond:  "500ms",
		time.Second:             "1s",
		10 * time.Second:        "10s",
		time.Minute:             "1m",
		90 * time.Second:        "1m30s",
		10 * time.Minute:        "10m",
		2 * time.Hour:           "2h",
		90 * time.Minute:        "1h30m",
		time.Hour + time.Second: "1h0m1s",
		1500 * time.Millisecond: "1.5s",
	} {
		if got := annotvalue.FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
		// What it writes reads back as the same duration.
		if back, err := time.ParseDuration(annotvalue.FormatDuration(d)); err != nil || back != d {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", annotvalue.FormatDuration(d), back, err, d)
		}
	}
}

func TestParseRetryDelays(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []time.Duration
		err  string
	}{
		{"10s", []time.Duration{10 * time.Second}, ""},
		{"1s,10s,1m", []time.Duration{time.Second, 10 * time.Second, time.Minute}, ""},
		{" 500ms , 2h ", []time.Duration{500 * time.Millisecond, 2 * time.Hour}, ""},
		{"", nil, `"" is not a duration`},
		{"ten", nil, `"ten" is not a duration: write it as 500ms, 10s, 1m or 1h`},
		{"1s,,2s", nil, `"" is not a duration`},
		{"10", nil, `"10" is not a duration`},
	} {
		got, err := annotvalue.ParseRetryDelays(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseRetryDelays(%q) error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseRetryDelays(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseCount(t *testing.T) {
	for in, want := range map[string]int{"0": 0, "1": 1, "250": 250} {
		if got, err := annotvalue.ParseCount(in); err != nil || got != want {
			t.Errorf("ParseCount(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "five", "1.5"} {
		if _, err := annotvalue.ParseCount(in); err == nil || !strings.Contains(err.Error(), "is not a whole number") {
			t.Errorf("ParseCount(%q) error %v, want one", in, err)
		}
	}
}

func ExampleFormatDuration() {
	for _, d := range []time.Duration{500 * time.Millisecond, 10 * time.Second, 90 * time.Second, 2 * time.Hour} {
		fmt.Println(annotvalue.FormatDuration(d))
	}
	// Output:
	// 500ms
	// 10s
	// 1m30s
	// 2h
}
