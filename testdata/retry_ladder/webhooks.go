// Package webhooks backs off along a ladder of wait queues.
package webhooks

import (
	"context"
	"time"

	"github.com/streamgen/streamgen/runtime"
)

// Hook is a webhook call to make.
type Hook struct {
	URL string `json:"url"`
}

//stream:subscriber "hooks" broker=rabbitmq max_attempts=6 retry_delay=1s,10s,1m,1m30s,2h dead_letter=hooks.dead
func Call(ctx context.Context, h Hook) error {
	return runtime.RetryAfter(time.Minute, nil)
}

// Slow is a webhook that takes long.
type Slow struct{ URL string }

//stream:subscriber "slow" broker=rabbitmq max_attempts=2 retry_delay=250ms
func CallSlow(ctx context.Context, s Slow) error { return nil }
