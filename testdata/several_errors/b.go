package several

import "context"

type secret struct{}

//stream:subscriber "secrets" retry_delay=soon
func Keep(ctx context.Context, s secret) error { return nil }

//stream:subscriber "jobs" prefetch=3 priority=high
func (j Job) Method(ctx context.Context) error { return nil }
