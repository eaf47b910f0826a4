// Package retrycount reads the retry count a message carries in its
// retry count header (runtime.RetryCountHeader), within a bound that keeps
// attempt numbers in range. The Consumer and every broker adapter read
// counts through it.
package retrycount

import (
	"fmt"
	"strconv"
	"strings"
)

// Max is the largest retry count the runtime reads. A message
// that carries a larger one (a sender's bug, or a hostile one) counts as
// having been retried Max times: its attempt number, 1 + the
// count, stays in range on every platform, and it has used up the attempts
// of any policy (Validate caps max_attempts at Max + 1), so it is
// parked or dropped rather than retried. Parse applies the bound
// to text headers; an adapter reading a count in another form (an AMQP
// integer, x-death) applies it too.
const Max = 1 << 30

// Parse reads a retry count header value: a non-negative decimal
// integer. An empty value is 0; a value above Max, however many
// digits it has, is Max.
func Parse(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	// Atoi also takes a sign ("+1"); the header is digits only.
	if strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return 0, fmt.Errorf("runtime: retry count %q is not a non-negative whole number", v)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n > Max { // digits only: err is a range error
		return Max, nil
	}
	return n, nil
}
