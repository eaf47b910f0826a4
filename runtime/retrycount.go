package runtime

import (
	"fmt"
	"strconv"
	"strings"
)

// RetryCountHeader is the header in which every retry copy carries how many
// times the message was retried before: absent or 0 on the first delivery, 4
// on the fifth. Brokers count attempts with it (RabbitMQ also reads x-death,
// see runtime/rabbitmq). The value is decimal text.
const RetryCountHeader = "x-retry-count"

// ParseRetryCount reads a retry count header value: a non-negative decimal
// integer. An empty value is 0.
func ParseRetryCount(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	// Atoi also takes a sign ("+1"); the header is digits only.
	if err != nil || n < 0 || strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return 0, fmt.Errorf("runtime: retry count %q is not a non-negative whole number", v)
	}
	return n, nil
}
