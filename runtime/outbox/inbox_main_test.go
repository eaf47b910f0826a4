package outbox_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(inboxWorkerEnv); spec != "" {
		os.Exit(runInboxWorker(spec))
	}
	goleak.VerifyTestMain(m)
}
