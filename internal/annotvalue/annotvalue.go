// Package annotvalue reads and writes the values of streamgen's annotation
// keys, as the generator and the runtime both need them: the runtime names
// a RabbitMQ wait queue after its delay as a person writes it in
// retry_delay=.
package annotvalue

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// FormatDuration writes d the short way a person writes it in an annotation:
// 1s, 10s, 1m, 1m30s, 2h, 500ms.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// ParseRetryDelays reads a retry_delay value: one duration or a comma list.
func ParseRetryDelays(s string) ([]time.Duration, error) {
	parts := strings.Split(s, ",")
	out := make([]time.Duration, 0, len(parts))
	for _, p := range parts {
		p = strings.TrimSpace(p)
		d, err := time.ParseDuration(p)
		if err != nil {
			return nil, fmt.Errorf("%q is not a duration: write it as 500ms, 10s, 1m or 1h", p)
		}
		out = append(out, d)
	}
	return out, nil
}

// ParseCount reads a non-negative integer annotation value.
func ParseCount(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	return n, nil
}
