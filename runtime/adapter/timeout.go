package adapter

import (
	"context"
	"fmt"
	"time"

	"github.com/streamgen/streamgen/internal/annotvalue"
)

// TimeoutError is the reason of a handler call that outlived its
// runtime.Policy.Timeout and failed: its context was cancelled (context.Cause
// returns the TimeoutError). A late call that acknowledged, dropped or
// dead-lettered its message counts as what it returned.
type TimeoutError struct {
	// After is the timeout in force.
	After time.Duration
	// Err is the error the handler returned, if any.
	Err error
}

// Error says "handler timed out after 2s", followed by the handler's own
// error unless that is only the context's (ctx.Err() or its cause).
func (e *TimeoutError) Error() string {
	msg := "handler timed out after " + annotvalue.FormatDuration(e.After)
	_, isCause := e.Err.(*TimeoutError)
	if e.Err != nil && e.Err != context.DeadlineExceeded && e.Err != context.Canceled && !isCause {
		msg = fmt.Sprintf("%s: %v", msg, e.Err)
	}
	return msg
}

// Unwrap returns the handler's error.
func (e *TimeoutError) Unwrap() error { return e.Err }

// Is reports context.DeadlineExceeded as a match: the handler ran out of
// time.
func (e *TimeoutError) Is(target error) bool { return target == context.DeadlineExceeded }
