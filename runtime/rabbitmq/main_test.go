package rabbitmq

import (
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if q := os.Getenv(crashWorkerEnv); q != "" {
		os.Exit(runCrashWorker(q))
	}
	goleak.VerifyTestMain(m)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
