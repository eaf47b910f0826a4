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

// MaxRetryCount is the largest retry count the runtime reads. A message
// that carries a larger one (a sender's bug, or a hostile one) counts as
// having been retried MaxRetryCount times: its attempt number, 1 + the
// count, stays in range on every platform, and it has used up the attempts
// of any policy (Validate caps max_attempts at MaxRetryCount + 1), so it is
// parked or dropped rather than retried. ParseRetryCount applies the bound
// to text headers; an adapter reading a count in another form (an AMQP
// integer, x-death) applies it too.
const MaxRetryCount = 1 << 30

// ParseRetryCount reads a retry count header value: a non-negative decimal
// integer. An empty value is 0; a value above MaxRetryCount, however many
// digits it has, is MaxRetryCount.
func ParseRetryCount(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	// Atoi also takes a sign ("+1"); the header is digits only.
	if strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return 0, fmt.Errorf("runtime: retry count %q is not a non-negative whole number", v)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n > MaxRetryCount { // digits only: err is a range error
		return MaxRetryCount, nil
	}
	return n, nil
}
