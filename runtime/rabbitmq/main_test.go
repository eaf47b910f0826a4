package rabbitmq

import (
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/streamgen/streamgen/internal/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// noLeaks is testkit.NoLeaks under the name the tests of attempt.go,
// runner.go and message.go call it by.
func noLeaks(t *testing.T) {
	t.Helper()
	testkit.NoLeaks(t)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
